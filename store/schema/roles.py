"""The migration that lets a PostgreSQL store be used by an app role that cannot rewrite the history.

A campaign's PostgreSQL store has two roles (docs/store.md, docs/deploy.md): the **owner**, which runs
the migrations and owns every table, trigger and function, and the **app role** the app and the CLI
connect as, which :func:`store.roles.grant_app_role` gives SELECT and INSERT on every table, UPDATE and
DELETE only where the workbench changes or removes rows (:data:`APP_UPDATES`, :data:`APP_DELETES`), and
nothing else: not being the owner, it can neither alter, drop nor disable a trigger, nor truncate a table.

Two ways around the history that did not need ownership are closed here:

- The bulk-import switch (the transaction-local setting ``assess.bulk_insert`` naming a table, which any
  role may set) is honoured only for a role holding the privileges of the table's owner
  (``assess_may_skip_history``): the owner could drop the trigger anyway, so the switch gives it nothing
  new; for the app role a bulk import writes one history row per label, as every other insert does.
- A trigger function named ``label_history`` without a schema, so a session that created a temporary table
  of that name (and any role may create temporary tables: the run import does) had its history written
  there. Every trigger function of the schema now runs with ``search_path = pg_catalog, <schema>, pg_temp``.
  A later migration that creates a trigger function must set its search path the same way
  (:data:`TRIGGER_FUNCTIONS_PINNED`; ``tests/deploy/test_pg_roles.py`` checks every one).

Nothing changes on SQLite, which has no roles: its half is a statement that does nothing.
"""

from __future__ import annotations

from assess.tasks import LABEL_KINDS

# SQLite: the version number moves on with the PostgreSQL schema; nothing to do.
MIGRATION = "SELECT 1;\n"

# Tables the app updates rows of (UPDATE, or INSERT ... ON CONFLICT DO UPDATE) and deletes rows from
# (plain DELETE; cascades of a foreign key run as the owner and need no grant). Every other table gets
# SELECT and INSERT only, assess_schema SELECT only. tests/deploy/test_pg_roles.py reads every statement of
# store/ and fails when one writes a table in a way these lists do not grant.
LABEL_TABLES = tuple(kind.table for kind in LABEL_KINDS.values())  # every label kind's table, from the registry
APP_UPDATES = frozenset(
    {
        *LABEL_TABLES,  # a changed label and its note: the history triggers record both
        "accounts",
        "api_tokens",  # a token revoked
        "aspect_content",
        "aspects",
        "bank_answers",
        "bank_nuggets",
        "bank_topics",
        "battle_features",  # a re-imported battle's features replace its earlier ones
        "conversations",
        "crowd_assignments",
        "crowd_studies",
        "crowd_workers",
        "gfrc_studies",
        "gold_responses",
        "job_blocks",
        "job_items",
        "job_workers",
        "nugget_duplicates",
        "nuggets",
        "passages",
        "pool",
        "prejudge_job_endpoints",
        "prejudge_jobs",
        "provider_batches",  # a provider batch's state polled on, its results stored
        "ptkb_statements",
        "responses",
        "reshows",  # a re-show answered or postponed
        "rubric_answers",
        "rubric_labels",
        "rubric_questions",
        "rubric_topics",
        "runs",
        "sample_items",  # a sequential sample's next round raises the inclusion probabilities
        "samples",
        "settings",
        "sign_in_sessions",
        "sources",
        "turns",
        "webhooks",  # delivered_through moved on; a hook removed
    }
)
APP_DELETES = frozenset(
    {
        *LABEL_TABLES,  # undo: the history triggers record it
        "aspect_ptkb",
        "aspects",
        "assignments",
        "bank_topics",
        "crowd_bindings",
        "crowd_studies",
        "nuggets",
        "rankings",
        "response_citations",
        "response_nuggets",
        "response_sentences",
        "rubric_labels",
        "rubric_topics",
        "sign_in_failures",
        "sign_in_links_used",
    }
)
READ_ONLY = frozenset({"assess_schema"})

# The trigger functions' search path: the schema's own objects, never a temporary table of the session.
_PIN_SEARCH_PATH = r"""
DO $pin$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = CAST(current_schema() AS regnamespace)
          AND p.prorettype = CAST('trigger' AS regtype)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;
"""
TRIGGER_FUNCTIONS_PINNED = _PIN_SEARCH_PATH

_MAY_SKIP = r"""
-- Whether the current role may have its inserts into a table skip the history (bulk imports): only with the
-- privileges of the table's owner, who could drop the trigger anyway. The table is given by its oid, fixed
-- when the trigger was created, so no search path or temporary table can stand in for it.
CREATE OR REPLACE FUNCTION assess_may_skip_history(tab oid) RETURNS boolean
LANGUAGE sql STABLE
AS $$ SELECT pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_catalog.pg_class c WHERE c.oid = tab $$;
"""


def _insert_trigger(table: str, insert_when: str = "") -> str:
    skip = (
        f"current_setting('assess.bulk_insert', true) IS DISTINCT FROM '{table}' "
        f"OR NOT assess_may_skip_history(CAST(CAST('{table}' AS regclass) AS oid))"
    )
    when = f"({skip})" + (f" AND ({insert_when})" if insert_when else "")
    name = f"{table}_history_insert"
    return (
        f"DROP TRIGGER {name} ON {table};\n"
        f"CREATE TRIGGER {name} AFTER INSERT ON {table} FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION {name}();\n"
    )


def postgres(insert_when: dict[str, str]) -> str:
    """The PostgreSQL half: the guarded bulk switch on the insert trigger of every table with a history
    (``insert_when``: table -> the trigger's own further condition, or ''), then the pinned search paths."""
    return _MAY_SKIP + "".join(_insert_trigger(t, when) for t, when in insert_when.items()) + _PIN_SEARCH_PATH
