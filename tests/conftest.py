"""Shared fixtures: temporary databases, the shared data folder, the project root."""

from __future__ import annotations

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


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A fresh empty database of the session's cluster, dropped after the test."""
    name = pg_cluster.create_database()
    yield pg_cluster.url(name)
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
    return cluster.url(name)
