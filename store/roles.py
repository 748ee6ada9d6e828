"""The app role of a PostgreSQL store: granting it the app's privileges, and listing the roles granted them.

A campaign's PostgreSQL store has two roles: the owner, which runs the migrations (``init``) and owns every
table, trigger and function, and the app role the app and the CLI connect as, which may read and write
rows but, not being the owner, can neither alter, drop nor disable a history trigger nor truncate a table
(docs/deploy.md). The privileges it gets are listed in store/schema/roles.py.
"""

from __future__ import annotations

from assess.errors import AssessError
from store.db import (
    Store,
    current_role,
    grant_privileges,
    owns_store,
    quoted_identifier,
    row,
    schema_version,
    value,
    write,
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
        schema = quoted_identifier(value(db, "SELECT current_schema() AS s"))
        warnings.append(
            f"the role {role} may create objects in the schema {schema} (before PostgreSQL 15 every role may): "
            f"run REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC as the schema's owner"
        )
    return warnings
