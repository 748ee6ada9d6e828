"""A throwaway PostgreSQL cluster for the test session (used through the fixtures in conftest.py).

The server binaries are looked up on PATH, then in Debian's /usr/lib/postgresql/*/bin; without
them the PostgreSQL tests skip. The cluster lives in a temporary directory, listens on a free port
of 127.0.0.1 (its socket directory is inside the temporary directory too), trusts local
connections and trades durability for speed. PostgreSQL refuses to run as root: under root the
cluster belongs to the unprivileged user ``nobody`` (or a system account ``assess-pg`` created when
there is no ``nobody``) and its commands run through ``runuser``.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.processes import free_port

MISSING = "PostgreSQL server binaries not found (Debian package postgresql)"
SUPERUSER = "postgres"  # the cluster's database superuser (not an operating-system account)
RUN_AS = "nobody"  # the operating-system user owning the cluster when the tests run as root
FALLBACK_ACCOUNT = "assess-pg"  # created (a system account) on a machine without ``nobody``

SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "128MB",
    "log_min_messages": "warning",
    "timezone": "'UTC'",
}


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: PATH first, then the newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found:
        bindir = Path(os.path.realpath(found)).parent
        if (bindir / "pg_ctl").is_file():
            return bindir
    candidates = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    candidates = [d for d in candidates if (d / "pg_ctl").is_file()]

    def version(d: Path) -> tuple:
        number = d.parent.name
        return tuple(int(part) for part in number.split(".")) if number.replace(".", "").isdigit() else (0,)

    return max(candidates, key=version) if candidates else None


@dataclass
class Cluster:
    bindir: Path
    base: Path  # the temporary directory: data/, sock/, server.log
    port: int
    os_user: str | None  # the account the server runs as when the tests run as root (None: ourselves)
    user: str = SUPERUSER
    running: bool = False
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "sock"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    def url(self, database: str = "postgres", user: str | None = None) -> str:
        return f"postgresql://{user or self.user}@127.0.0.1:{self.port}/{database}"

    def command(self, program: str, *args: str) -> list[str]:
        argv = [str(self.bindir / program), *args]
        return ["runuser", "-u", self.os_user, "--", *argv] if self.os_user else argv

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            self.command(program, *args), capture_output=True, text=True, cwd=self.base, check=False, timeout=120
        )
        if check and done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n{log}"
            )
        return done

    def start(self) -> None:
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log))
        self.running = True

    def stop(self, mode: str = "immediate") -> None:
        if self.running:
            self._run("pg_ctl", "stop", "-w", "-m", mode, "-D", str(self.data), check=False)
            self.running = False

    def connect(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(self.url(database), autocommit=True, connect_timeout=10)

    def create_database(self) -> str:
        """A new empty database (never reused in the session); returns its name."""
        name = f"t_{next(self._names)}"
        with self.connect() as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        _dispose_engines(name)
        with contextlib.suppress(Exception), self.connect() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {name}_owner, {name}_app")

    def create_roles(self, database: str) -> Roles:
        """The two roles of a campaign's store (docs/deploy.md) for ``database``: an owner, which becomes the
        database's owner (and so, from PostgreSQL 15 on, its public schema's), and an app role; both log in,
        neither is a superuser, and the app role owns nothing and may create nothing in the schema. The app
        role gets its privileges when the owner runs ``init --app-role`` (or ``store.roles.grant_app_role``).
        The roles are dropped with the database (:meth:`drop_database`)."""
        owner, app = f"{database}_owner", f"{database}_app"
        with self.connect() as conn:
            conn.execute(f"CREATE ROLE {owner} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            conn.execute(f"CREATE ROLE {app} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            conn.execute(f"ALTER DATABASE {database} OWNER TO {owner}")
        with self.connect(database) as conn:
            conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")  # the default before PostgreSQL 15
        return Roles(owner=owner, app=app, owner_url=self.url(database, owner), app_url=self.url(database, app))

    def app_store(self, database: str) -> str:
        """Create the roles of ``database``, migrate it as the owner, grant the app role; the app role's URL."""
        from store.db import open_db
        from store.roles import grant_app_role

        roles = self.create_roles(database)
        with open_db(roles.owner_url) as db:
            grant_app_role(db, roles.app)
        return roles.app_url


@dataclass(frozen=True)
class Roles:
    owner: str
    app: str
    owner_url: str
    app_url: str


def _dispose_engines(database: str) -> None:
    """Close the pooled connections store.engines keeps for a database about to be dropped."""
    try:
        from store import engines as store_engines
    except ImportError:
        return
    engines = getattr(store_engines, "_ENGINES", {})
    lock = getattr(store_engines, "_ENGINES_LOCK", contextlib.nullcontext())
    with lock:
        keys = [key for key in engines if key.endswith(f"/{database}")]
        doomed = [engines.pop(key) for key in keys]
    for engine in doomed:
        engine.dispose()


def _run_as() -> str | None:
    """None when the tests run unprivileged; else the system account to run the server as."""
    if os.geteuid() != 0:
        return None
    if not shutil.which("runuser"):
        raise RuntimeError("the tests run as root and runuser (util-linux) is missing to start PostgreSQL")
    import pwd

    for name in (RUN_AS, FALLBACK_ACCOUNT):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_ACCOUNT],
        check=True,
        capture_output=True,
    )
    return FALLBACK_ACCOUNT


def start_cluster() -> Cluster:
    """initdb + start a new cluster; raises when the binaries are there but the cluster will not start."""
    bindir = find_bindir()
    if bindir is None:
        raise FileNotFoundError(MISSING)
    os_user = _run_as()
    base = Path(tempfile.mkdtemp(prefix="assess-pg-"))
    cluster = Cluster(bindir=bindir, base=base, port=free_port(), os_user=os_user)
    try:
        cluster.socket_dir.mkdir()
        if os_user:
            import pwd

            account = pwd.getpwnam(os_user)
            for path in (base, cluster.socket_dir):
                os.chown(path, account.pw_uid, account.pw_gid)
        base.chmod(0o700)
        cluster._run(
            "initdb",
            "-D",
            str(cluster.data),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",  # C collation: text sorts by code point, as SQLite's BINARY collation
        )
        settings = {**SETTINGS, "port": str(cluster.port), "unix_socket_directories": f"'{cluster.socket_dir}'"}
        with open(cluster.data / "postgresql.conf", "a") as conf:  # the file belongs to os_user; root may append
            conf.write("\n# assess tests\n" + "".join(f"{k} = {v}\n" for k, v in settings.items()))
        cluster.start()
    except BaseException:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
        raise
    atexit.register(remove_cluster, cluster)  # in case the session ends without its teardown
    return cluster


def remove_cluster(cluster: Cluster) -> None:
    cluster.stop("immediate")
    shutil.rmtree(cluster.base, ignore_errors=True)


def restart(cluster: Cluster) -> None:
    """Stop the server (fast: connections are ended) and start it again on the same port."""
    cluster.stop("fast")
    cluster.start()
