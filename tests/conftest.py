"""Shared fixtures and the suite's tiers: temporary databases (either engine), the demo store built once per
session and copied per test, the shared data folder, the project root.

Each folder under tests/ is a tier and gives its tests the marker of its name (``unit``, ``store``,
``services``, ``cli``, ``app``, ``browser``, ``deploy``, ``docs``); a test that uses a PostgreSQL server gets
``postgresql``. The default run (``addopts`` in pyproject.toml) leaves out ``browser``, ``deploy``,
``postgresql`` and ``scale`` (pages timed on the iKAT 2024 store); ``python -m pytest -m "" -n 2`` runs
everything (README, .ci/run). Engines: the store and services tiers run ``store_target`` tests on both
engines; the other tiers on SQLite, except the tests marked ``both_engines`` (their PostgreSQL smoke tests)."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
CASES = SHARED / "cases"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Bytecode caches are written even under PYTHONDONTWRITEBYTECODE (``__pycache__`` is git-ignored): without them
# each worker rewrites and compiles every test module again at collection (pytest's assertion rewriting, about
# 8 s of CPU a worker), and each CLI subprocess and Streamlit server compiles the project's modules again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Property tests (hypothesis) have no per-example deadline: an example's time says nothing about its property, and
# on a busy 2-core machine the default 200 ms deadline fails examples at random. Speed targets are benchmarks.
settings.register_profile("workbench", deadline=None)
settings.load_profile("workbench")


# Each new AppTest scans the metadata of every installed distribution for Streamlit v2 component manifests (about
# 0.15 s of CPU; the app tier makes a few hundred AppTests). The installed packages do not change during a session,
# so once Streamlit is loaded the scan's result is kept for the session. A served app scans once at start anyway.
@pytest.fixture(autouse=True)
def _component_scan_once():
    if "streamlit" in sys.modules:
        from streamlit.components.v2 import manifest_scanner

        scan = manifest_scanner.scan_component_manifests
        if not hasattr(scan, "cache_info"):
            manifest_scanner.scan_component_manifests = functools.cache(scan)
    yield


def shared_file(*parts: str) -> Path:
    """Path to a file under ../shared, or skip the test with the reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is not beside this clone)")
    return path


@pytest.fixture
def db_file(tmp_path) -> Path:
    return tmp_path / "test.db"


# ------------------------------------------------------------------------------ PostgreSQL engine
# A throwaway cluster (tests/pg.py), started on first use and removed at the end of the session.
# The PostgreSQL tests skip only when the server binaries are absent; a cluster that fails to start
# is an error.


@pytest.fixture(scope="session")
def pg_cluster():
    from tests import pg

    if pg.find_bindir() is None:
        pytest.skip(pg.MISSING)
    cluster = pg.start_cluster()
    yield cluster
    pg.remove_cluster(cluster)


# ASSESS_TEST_PG_ROLE=app runs the PostgreSQL tests as a campaign's app role (docs/deploy.md): each database
# is then created with its two roles, migrated by the owner, and the tests get the app role's URL. Tests that
# build or migrate the schema themselves fail in that mode; it checks that everything else works without
# the owner's privileges.
AS_APP_ROLE = os.environ.get("ASSESS_TEST_PG_ROLE") == "app"


def _pg_database_url(cluster, name: str) -> str:
    return cluster.app_store(name) if AS_APP_ROLE else cluster.url(name)


def _marked_postgresql(request) -> None:
    """A test reaching PostgreSQL through ``request.getfixturevalue`` carries no marker from its fixture names: it
    must be marked itself (``pytest.param(..., marks=pytest.mark.postgresql)``), or the default run, which
    leaves PostgreSQL out, would start a cluster for it."""
    if request.node.get_closest_marker("postgresql") is None:
        pytest.fail(f"{request.node.nodeid} uses PostgreSQL and is not marked postgresql")


@pytest.fixture
def pg_url(pg_cluster, request) -> str:
    """A fresh empty database of the session's cluster, dropped after the test."""
    _marked_postgresql(request)
    name = pg_cluster.create_database()
    yield _pg_database_url(pg_cluster, name)
    pg_cluster.drop_database(name)


@pytest.fixture
def pg_roles(pg_cluster, request):
    """A fresh empty database with a campaign's two roles (``tests.pg.Roles``: the owner's and the app role's
    names and URLs); the app role has no privileges until the owner grants them (``init --app-role``)."""
    _marked_postgresql(request)
    name = pg_cluster.create_database()
    yield pg_cluster.create_roles(name)
    pg_cluster.drop_database(name)


ENGINES = ("sqlite", "postgresql")

# ------------------------------------------------------------------------------------------------ tiers
TIERS = ("unit", "store", "services", "cli", "app", "browser", "deploy", "docs")
BOTH_ENGINE_TIERS = ("store", "services")  # the others: SQLite, and PostgreSQL for tests marked both_engines
ENGINE_FIXTURES = ("store_target", "module_store_target")


def tier_of(path) -> str | None:
    """The tier of a test file: the folder under tests/ it lives in (None for a file outside the tiers)."""
    parts = Path(path).resolve().relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def _engines(metafunc) -> tuple[str, ...]:
    if tier_of(metafunc.definition.path) in BOTH_ENGINE_TIERS or metafunc.definition.get_closest_marker("both_engines"):
        return ENGINES
    return ENGINES[:1]


def pytest_generate_tests(metafunc):
    engines = _engines(metafunc)
    if "store_target" in metafunc.fixturenames:
        metafunc.parametrize("store_target", engines, indirect=True, ids=engines)
    if "module_store_target" in metafunc.fixturenames:
        metafunc.parametrize("module_store_target", engines, indirect=True, ids=engines, scope="module")


def _uses_postgresql(item) -> bool:
    if "pg_cluster" in getattr(item, "fixturenames", ()):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) == "postgresql" for name in ENGINE_FIXTURES)


# The order in which modules are handed to the xdist workers: the slowest first, so that no long module starts
# last and runs alone while the other worker idles (pyproject.toml turns off xdist's own order, which puts the
# modules with the most tests first). Tiers, slowest first; within a tier, the modules named below first (the
# slowest of a full run on 2 cores, ``--durations``), then the others in their usual order.
TIER_ORDER = ("browser", "deploy", "services", "docs", "cli", "store", "app", "unit")
SLOW_MODULES = (
    "test_sessions_browser.py",
    "test_a11y_browser.py",
    "test_review_sessions.py",
    "test_crowd_browser.py",
    "test_deploy.py",
    "test_shared_jobs.py",
    "test_prejudge.py",
    "test_nli.py",
    "test_bulk_import.py",
    "test_cli_verdict.py",
)


def _run_order(item) -> tuple[int, int]:
    tier = tier_of(item.path)
    rank = TIER_ORDER.index(tier) if tier in TIER_ORDER else len(TIER_ORDER)
    name = item.path.name
    return rank, SLOW_MODULES.index(name) if name in SLOW_MODULES else len(SLOW_MODULES)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(tier)
        if _uses_postgresql(item):
            item.add_marker("postgresql")
    items.sort(key=_run_order)  # stable: a module's tests keep their order


# ------------------------------------------------------------------------------------------ password hashes
# Argon2id with argon2-cffi's recommended parameters costs about 0.2 s of CPU a hash or a check, and the tiers that
# run in process make a few hundred: their tests hash with Argon2id at its cheapest cost (one pass over 8 KiB),
# the same format and code path. The tests whose point is the real cost (sign-ins racing a slow check, the stored
# hash's parameters) are marked ``argon2_defaults``. The browser, deployment and docs tiers keep the defaults:
# their servers and commands run in other processes, which hash with them.
CHEAP_HASH_TIERS = ("unit", "store", "services", "cli", "app")


def _cheap_hasher():
    from argon2 import PasswordHasher

    return PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


@pytest.fixture(autouse=True)
def _cheap_password_hashes(request, monkeypatch):
    if tier_of(request.node.path) in CHEAP_HASH_TIERS and not request.node.get_closest_marker("argon2_defaults"):
        monkeypatch.setattr("assess.services.accounts._hasher", _cheap_hasher)


@pytest.fixture
def store_target(request, tmp_path) -> str:
    """Where a test's store lives, once per engine: a SQLite file path, or a fresh PostgreSQL database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="module")
def module_store_target(request, tmp_path_factory) -> str:
    """As ``store_target``, shared by the tests of a module (for a module-scoped store with loaded data)."""
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("store") / "store.db")
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create_database()
    request.addfinalizer(lambda: cluster.drop_database(name))
    return _pg_database_url(cluster, name)


# --------------------------------------------------------------------------------------------- the demo store
# Built once per session (under xdist, once per worker: each has its own session and temporary folder) and
# copied into each test's store: a file copy for SQLite, CREATE DATABASE ... TEMPLATE for PostgreSQL.


def _build_demo(target) -> None:
    from assess.services.loading import load_demo
    from store import open_db

    with open_db(target) as db:
        load_demo(db)


@pytest.fixture(scope="session")
def demo_templates(tmp_path_factory) -> dict:
    """The session's demo templates, built on first use: 'sqlite' (a file) and 'postgresql' (a database)."""
    return {"factory": tmp_path_factory}


def _sqlite_template(templates: dict) -> Path:
    if "sqlite" not in templates:
        path = templates["factory"].mktemp("demo-template") / "demo.db"
        _build_demo(path)
        for extra in ("-wal", "-shm", "-journal"):  # closed cleanly: the file alone is the store
            assert not Path(f"{path}{extra}").exists(), f"{path}{extra} left after closing the demo template"
        templates["sqlite"] = path
    return templates["sqlite"]


def _postgresql_template(templates: dict, cluster) -> str:
    from tests import pg

    if "postgresql" not in templates:
        name = cluster.create_database()
        _build_demo(cluster.url(name))
        pg._dispose_engines(name)  # a template database must have no open connection
        templates["postgresql"] = name
    return templates["postgresql"]


@pytest.fixture(scope="session")
def demo_copy(demo_templates, request):
    """``demo_copy(target)``: the demo put into a new store ``target`` (a SQLite path that does not exist
    yet, or the URL of a fresh empty database of the session's cluster); returns ``target``."""

    def copy(target):
        from store.db import is_postgres

        if not is_postgres(str(target)):
            shutil.copyfile(_sqlite_template(demo_templates), target)
            return target
        if AS_APP_ROLE:  # the app role's store: migrated by its owner, so the demo is loaded into it
            _build_demo(target)
            return target
        from sqlalchemy.engine import make_url

        from tests import pg

        cluster = request.getfixturevalue("pg_cluster")
        template = _postgresql_template(demo_templates, cluster)
        name = make_url(str(target)).database
        pg._dispose_engines(name)
        with cluster.connect() as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
        return target

    return copy


@pytest.fixture
def demo_target(store_target, demo_copy) -> str:
    """``store_target`` (each engine the test's tier runs on) holding the demo."""
    return demo_copy(store_target)


@pytest.fixture(scope="module")
def module_demo_target(module_store_target, demo_copy) -> str:
    """``module_store_target`` holding the demo (shared by the tests of a module)."""
    return demo_copy(module_store_target)
