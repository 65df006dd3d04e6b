"""``ALTER TABLE t action, action…``: the actions applied in order as one change, as in
PostgreSQL: if one fails, those before it are put back (the table's catalog items and its
shard's layout, as a ROLLBACK puts back an ALTER TABLE of a transaction), and the error is
the failing action's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from changeflow.adapter.catalog import Item
from changeflow.adapter.result import Result
from changeflow.errors import PlanError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def alter_many(env: Environment, item: Item, g: dict[str, Any]) -> Result:
    """Apply each of ``g["actions"]`` (single-action ALTER TABLE statements) to table
    ``item``, all or none."""
    from changeflow.adapter.alter import TAG, alter_table
    from changeflow.adapter.txn_ddl import put_back

    if any(a.args["action"] == "rename" for a in g["actions"]):
        raise PlanError('syntax error at or near "RENAME"', sqlstate="42601")
    before = env.catalog.load()
    layout = env.storage.state(item.id).schema
    try:
        for action in g["actions"]:
            alter_table(env, action)
    except BaseException:
        put_back(env, item.id, before, env.catalog.load(), layout)()
        raise
    return Result(TAG)


def changes_columns(g: dict[str, Any]) -> bool:
    """Whether ALTER TABLE's ``g`` changes the table's columns (else only its constraints,
    NOT NULL flags or defaults, which live in the catalog alone)."""
    from changeflow.adapter.alter import is_constraint

    if g["action"] == "many":
        return any(changes_columns(a.args) for a in g["actions"])
    change = " ".join(str(g.get("change") or "").upper().split())
    return not (
        g["action"] in ("drop_constraint", "rename_constraint")
        or (g["action"] == "add" and is_constraint(g["column"]))
        or (g["action"] == "column" and not change.startswith("DROP NOT NULL"))
    )
