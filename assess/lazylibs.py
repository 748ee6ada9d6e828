"""Where the command line's heavy imports wait (cf. ir_measures' ``lazylibs``).

A command module names at its top every module it calls, so a reader sees what it depends on. ``python -m
assess --help`` imports every command module to build the parser, and the services they name load the store
(SQLAlchemy) and most of the workbench, which ``--help`` never runs. While the parser is built
(:func:`deferred`), a module of :data:`DEFERRED` that a command module imports *as a module* (``from
assess.services import exports``) is created empty and runs on its first attribute access, that is when a
command calls it (``importlib.util.LazyLoader``). A name imported from such a module (``from
assess.services.exports import export``) is an attribute access, so it loads at once: command modules import
the services as modules, and take what the parser needs (kind names, choices) from light modules
(``assess.tasks``, ``assess.formats``).

The third-party libraries that take long to import are imported here, each on the first call of its function
(``lazylibs.scipy_stats().kendalltau``), not at the top of the modules that use them (most of which ``--help``
or a page loads without needing them). ``tests/unit/test_cli_imports.py`` fails when ``--help`` loads one of
:data:`HEAVY_LIBRARIES`, or when a project import hides in a function.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator

DEFERRED: tuple[str, ...] = (
    "assess.services",
    "assess.api",
    "assess.llm",
    "assess.nuggets",
    "assess.crowd",
    "assess.measures",
)
"""Project packages (and their modules) that a command module may import lazily."""

HEAVY_LIBRARIES: tuple[str, ...] = (
    "sqlalchemy",
    "psycopg",
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "statsmodels",
    "ir_measures",
    "crowdkit",
    "torch",
    "transformers",
    "openai",
    "streamlit",
    "fastapi",
    "uvicorn",
    "plotly",
)
"""What ``python -m assess --help`` must not import (each costs tens to thousands of milliseconds)."""


# The heavy libraries the workbench's code may use, each imported on its first call. The ones the layer contracts
# keep to one layer stay imported there, inside functions as well: Streamlit (assess/ui), torch, transformers and
# openai (assess/llm/clients.py), psycopg (store/), uvicorn (the `api` command).


def numpy():
    import numpy

    return numpy


def pandas():
    import pandas

    return pandas


def scipy_stats():
    import scipy.stats

    return scipy.stats


def scipy_special():
    import scipy.special  # much lighter than scipy.stats, whose import costs seconds on a loaded machine

    return scipy.special


def statsmodels_api():
    import statsmodels.api

    return statsmodels.api


def statsmodels_stats():
    """``statsmodels.stats`` with the submodules we call: ``inter_rater`` and ``multitest``."""
    import statsmodels.stats.inter_rater
    import statsmodels.stats.multitest

    return statsmodels.stats


def ir_measures():
    import ir_measures

    return ir_measures


def crowdkit_aggregation():
    import crowdkit.aggregation

    return crowdkit.aggregation


def crowdkit_metrics():
    """``crowdkit.metrics`` with the submodules we call: ``data`` and ``workers``."""
    import crowdkit.metrics.data
    import crowdkit.metrics.workers

    return crowdkit.metrics


def tqdm():
    import tqdm

    return tqdm


def httpx():
    import httpx

    return httpx


class _LazyFinder(importlib.abc.MetaPathFinder):
    """Finds a module of :data:`DEFERRED` as the path finder does, with a loader that runs it on first use."""

    def find_spec(self, name, path, target=None):
        if not any(name == package or name.startswith(f"{package}.") for package in DEFERRED):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def load_deferred() -> int:
    """Run every module :func:`deferred` left waiting, now, in this thread; the number run. Python 3.11's
    ``LazyLoader`` is not safe when two threads touch a waiting module first at once (CPython gh-114763, fixed in
    3.12.3): what starts threads that may touch one (the API server of ``python -m assess api``, an LLM job's
    client threads) calls this first. Nothing waits outside a process that built the command line's parser."""
    waiting = [m for m in list(sys.modules.values()) if isinstance(m, importlib.util._LazyModule)]
    for module in waiting:
        vars(module)  # any attribute access (here __dict__) runs the module
    return len(waiting)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """While inside, a module of :data:`DEFERRED` imported for the first time runs on its first attribute access.
    Not reentrant-safe across threads: the command line builds its parser before any thread starts."""
    finder = _LazyFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
