"""``ALTER {TABLE | VIEW | MATERIALIZED VIEW | SEQUENCE | INDEX | SOURCE | SINK | SCHEMA} name
OWNER TO role``, as pg_dump writes after each object it creates.

Every object belongs to the one role a session sees: the connected user, pg_roles' only row
and the owner pg_class and pg_namespace show for everything. Giving an object to that role
(also as CURRENT_USER, SESSION_USER or CURRENT_ROLE) leaves it as it is and succeeds, as
PostgreSQL does when the owner is already that role; another role does not exist here
(42704, as PostgreSQL says of an unknown role). The object must exist (42P01, 3F000 for a
schema; with IF EXISTS a NOTICE), and ALTER VIEW, SEQUENCE and the others must name one of
their kind (42809); ALTER TABLE takes any relation, as PostgreSQL's does.
"""

from __future__ import annotations

from typing import Any

from changeflow.adapter.result import Result
from changeflow.adapter.sql.session_values import SESSION_NAMES, SessionNames
from changeflow.adapter.sql.statements import Statement
from changeflow.errors import PlanError

SAME_ROLE = ("current_user", "session_user", "current_role")


def owner_to(env: Any, stmt: Statement) -> Result:
    """Check ``stmt``'s object and role; nothing changes (see the module docstring)."""
    g = stmt.args
    kind, tag = g["kind"], f"ALTER {g['kind'].upper()}"
    user = (SESSION_NAMES.get() or SessionNames()).user
    if g["role"] not in (user, *SAME_ROLE):
        raise PlanError(f'role "{g["role"]}" does not exist', sqlstate="42704")
    state = env.catalog.load()
    if kind == "schema":
        if g["name"] not in state.schemas and g["name"] != "public":
            raise PlanError(f'schema "{g["name"]}" does not exist', sqlstate="3F000")
        return Result(tag)
    item = state.find(g["name"])
    if item is None:
        if g["ie"]:
            skipped = f'relation "{g["name"]}" does not exist, skipping'
            return Result(tag, notices=[("00000", skipped, "")])
        raise PlanError(f'relation "{g["name"]}" does not exist', sqlstate="42P01")
    if kind != "table" and item.kind != kind:
        raise PlanError(f'"{g["name"]}" is not a {kind}', sqlstate="42809")
    return Result(tag)
