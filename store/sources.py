"""Label sources: every label names the source that gave it (an assessor, an imported file, an LLM, the
crowd, an adjudication, the organizers). A source is registered once, with its kind; an assessor's
source is their (normalised) name, registered when they sign in."""

from __future__ import annotations

from assess.errors import AssessError, FormatError
from assess.tasks import RESERVED_SOURCE_PREFIXES, RESERVED_SOURCES, reserved_source, source_kind
from assess.text import look_alike, mixed_scripts, name_problem, normal_name
from store.db import Store, column, now, row, run, write


def ensure_source(
    db: Store,
    name: str,
    kind: str | None = None,
    *,
    model: str | None = None,
    prompt_version: str | None = None,
    description: str | None = None,
) -> str:
    """Create the label source ``name`` if it does not exist; return its name. ``kind``: the sources table's
    kind (default: the one its name says, :func:`assess.tasks.source_kind`)."""
    if not name or any(c.isspace() for c in name):
        raise FormatError("--source", None, "a source name without spaces", repr(name))
    kind = kind or source_kind(name).stored
    if kind == "llm" and model is None:
        model = name.split(":", 1)[1] if ":" in name else None
    existing = row(db, "SELECT kind FROM sources WHERE name = :name", {"name": name})
    if existing and existing["kind"] == "assessor" and kind != "assessor":
        # an assessor signed in under this name: imported or machine labels must never mix with theirs
        raise FormatError(
            "--source",
            None,
            f"a source name that is not an assessor's ({name!r} is the assessor {name}'s own labels)",
            f"an attempt to write {kind} labels into it",
        )
    run(
        db,
        "INSERT INTO sources (name, kind, model, prompt_version, description, created_at) "
        "VALUES (:name, :kind, :model, :prompt_version, :description, :at) ON CONFLICT(name) DO NOTHING",
        {
            "name": name,
            "kind": kind,
            "model": model,
            "prompt_version": prompt_version,
            "description": description,
            "at": now(),
        },
    )
    return name


def sign_in(db: Store, name: str, *, guest: bool = False) -> str:
    """Register ``name`` as an assessor source (idempotent) and return it as kept (NFKC-normalised, see
    :func:`assess.text.normal_name`). Refused: a name breaking the name rule (:func:`assess.text.name_problem`:
    printable characters only, checked before the name reaches the database), a reserved name or a look-alike
    of one (:func:`assess.tasks.reserved_source`, :func:`assess.text.look_alike`), the name of another kind
    of source, a new name that looks like an existing source or account name, and a new name mixing scripts
    (:func:`assess.text.mixed_scripts`). ``guest``: a name typed
    in open mode, refused when it belongs to an account (nobody acts under another person's name)."""
    name = normal_name(name)
    problems = []
    if reserved_source(name) or (alike := look_alike(name, RESERVED_SOURCES, RESERVED_SOURCE_PREFIXES)):
        shown = "" if reserved_source(name) else f" (it looks like {alike!r})"
        problems.append(f"{name!r} is reserved for the workbench's own label sources{shown}")
    if rule := name_problem(name):
        problems.append(rule)  # nothing is asked of the database about such a name (PostgreSQL refuses NUL)
        raise AssessError("; ".join(problems) + "; choose another assessor name")
    if guest and row(db, "SELECT 1 AS taken FROM accounts WHERE name = :name", {"name": name}):
        raise AssessError(f"{name!r} belongs to an account: sign in with its password or sign-in link")
    found = row(db, "SELECT kind FROM sources WHERE name = :name", {"name": name})
    if found and found["kind"] != "assessor":
        problems.append(f"{name!r} is the name of a {found['kind']} label source")
    if not found and not problems:
        taken = column(db, "SELECT name FROM sources UNION SELECT name FROM accounts")
        if alike := look_alike(name, taken):
            problems.append(f"{name!r} looks like the existing name {alike!r}")
        elif mixed := mixed_scripts(name):  # a look-alike in the making (Latin with Cyrillic, Cherokee…)
            problems.append(f"{name!r} mixes the letters of two scripts ({mixed})")
    if problems:
        raise AssessError("; ".join(problems) + "; choose another assessor name")
    if not found:
        with write(db):
            ensure_source(db, name, "assessor")
    return name
