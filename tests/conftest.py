"""Shared fixtures: temporary databases, the shared data folder, the project root."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
CASES = SHARED / "cases"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A fresh empty database of the session's cluster, dropped after the test."""
    name = pg_cluster.create_database()
    yield _pg_database_url(pg_cluster, name)
    pg_cluster.drop_database(name)


@pytest.fixture
def pg_roles(pg_cluster):
    """A fresh empty database with a campaign's two roles (``tests.pg.Roles``: the owner's and the app role's
    names and URLs); the app role has no privileges until the owner grants them (``init --app-role``)."""
    name = pg_cluster.create_database()
    yield pg_cluster.create_roles(name)
    pg_cluster.drop_database(name)


ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc):
    if "store_target" in metafunc.fixturenames:
        metafunc.parametrize("store_target", ENGINES, indirect=True, ids=ENGINES)
    if "module_store_target" in metafunc.fixturenames:
        metafunc.parametrize("module_store_target", ENGINES, indirect=True, ids=ENGINES, scope="module")


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
