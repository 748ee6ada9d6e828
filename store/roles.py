"""The app role of a PostgreSQL store: granting it the app's privileges, and listing the roles granted them.

A campaign's PostgreSQL store has two roles: the owner, which runs the migrations (``init``) and owns every
table, trigger and function, and the app role the app and the CLI connect as, which may read and write
rows but, not being the owner, can neither alter, drop nor disable a history trigger nor truncate a table
(docs/deploy.md). The privileges it gets are listed in store/schema/roles.py.
"""

from __future__ import annotations

from assess.errors import AssessError
from store.db import Store, column, current_role, driver_sql, owns_store, row, schema_version, value, write


def app_roles(db: Store) -> list[str]:
    """The roles :func:`grant_app_role` has given the app's privileges on this PostgreSQL store."""
    return column(
        db,
        "SELECT r.rolname AS name FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) AS a "
        "JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.oid = to_regclass('assess_schema') AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner "
        "ORDER BY r.rolname",
    )


def grant_app_role(db: Store, role: str) -> list[str]:
    """Give ``role`` what the app and the CLI need on this PostgreSQL store, and nothing that could rewrite
    the history (the connected role must own the store, whose schema is up to date). Later migrations
    give the role the privileges of the tables they add. Returns warnings (one line each) about the
    database's own settings that let the role do more than it should."""
    if db.sqlite:
        raise AssessError(f"{db.location}: a SQLite store has no roles (--app-role is for PostgreSQL)")
    if schema_version(db) == 0 or not owns_store(db):
        raise AssessError(
            f"{db.location}: the role {current_role(db)} does not own the store: grant the app role while connected "
            "with the owner role's URL (docs/deploy.md)"
        )
    found = row(
        db,
        "SELECT r.rolsuper AS superuser, pg_has_role(r.oid, c.relowner, 'USAGE') AS owner, r.rolcanlogin AS login "
        "FROM pg_roles r, pg_class c WHERE r.rolname = :role AND c.oid = to_regclass('assess_schema')",
        {"role": role},
    )
    if found is None:
        raise AssessError(f"{db.location}: no role {role} in the database server (CREATE ROLE {role} LOGIN first)")
    if found["superuser"] or found["owner"]:
        raise AssessError(
            f"{db.location}: the role {role} has the privileges of the store's owner (it is the owner, a member "
            "of it or a superuser), so it could rewrite the history: give the app a role of its own"
        )
    with write(db):
        grant_privileges(db, role)
    warnings = []
    if not found["login"]:
        warnings.append(f"the role {role} cannot log in (ALTER ROLE {role} LOGIN)")
    if value(db, "SELECT has_schema_privilege(:role, current_schema(), 'CREATE') AS may", {"role": role}) == 1:
        schema = _identifier(value(db, "SELECT current_schema() AS s"))
        warnings.append(
            f"the role {role} may create objects in the schema {schema} (before PostgreSQL 15 every role may): "
            f"run REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC as the schema's owner"
        )
    return warnings


def grant_privileges(db: Store, role: str) -> None:
    """Inside a write transaction: set ``role``'s privileges on every table and sequence of the store."""
    from store.schema.roles import APP_DELETES, APP_UPDATES, READ_ONLY

    who = _identifier(role)
    tables = column(
        db,
        "SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = CAST(current_schema() AS regnamespace) "
        "AND c.relkind IN ('r', 'p') ORDER BY c.relname",
    )
    driver_sql(db, f"GRANT USAGE ON SCHEMA {_identifier(value(db, 'SELECT current_schema() AS s'))} TO {who}")
    for table in tables:
        privileges = ["SELECT"]
        if table not in READ_ONLY:
            privileges.append("INSERT")
        if table in APP_UPDATES:
            privileges.append("UPDATE")
        if table in APP_DELETES:
            privileges.append("DELETE")
        driver_sql(db, f"REVOKE ALL ON TABLE {_identifier(table)} FROM {who}")
        driver_sql(db, f"GRANT {', '.join(privileges)} ON TABLE {_identifier(table)} TO {who}")
    driver_sql(
        db,
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {_identifier(value(db, 'SELECT current_schema() AS s'))} TO {who}",
    )


def _identifier(name: str) -> str:
    """A PostgreSQL identifier, quoted (any name is safe inside double quotes once its own are doubled)."""
    return '"' + name.replace('"', '""') + '"'
