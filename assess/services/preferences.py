"""A person's own choices on the pages (single-key shortcuts, graded NtR support): each is kept in the store's
settings under ``NAME:PERSON``, so it holds in every browser and every later session of that person."""

from __future__ import annotations

from types import MappingProxyType

from store.db import Store
from store.screens import person_setting, set_person_setting

SWITCHES = MappingProxyType({"shortcuts": True, "ntr-graded": False})
"""The on/off choices a person keeps, with the value they have before they ever choose."""


def _known(name: str) -> None:
    if name not in SWITCHES:
        raise ValueError(f"no such preference {name!r} (one of {', '.join(SWITCHES)})")


def switch_on(db: Store, person: str, name: str) -> bool:
    """Whether ``person`` has the switch ``name`` on (its default when they never chose)."""

    _known(name)
    found = person_setting(db, name, person)
    return SWITCHES[name] if found is None else found == "on"


def set_switch(db: Store, person: str, name: str, on: bool) -> None:
    """Keep ``person``'s choice of the switch ``name``."""

    _known(name)
    set_person_setting(db, name, person, "on" if on else "off")
