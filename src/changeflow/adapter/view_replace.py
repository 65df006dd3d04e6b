"""``CREATE OR REPLACE VIEW``, as PostgreSQL's: a view of that name is defined anew (the same
view, its OID kept) if its columns stay as they were, in name and type, with new ones only
after them (42P16 otherwise); a relation of another kind is 42809. Views and materialized
views built on it keep its old definition in their plans, so a view others depend on is
refused here (0A000)."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.errors import PlanError


def replaced_view(state: CatalogState, g: dict[str, Any]) -> Item | None:
    """The view CREATE OR REPLACE VIEW (arguments ``g``) replaces; None if there is none."""
    if g["materialized"]:
        raise PlanError('syntax error at or near "MATERIALIZED"', sqlstate="42601")
    item = state.by_name(g["name"])
    if item is None:
        return None
    shown = g["name"].rpartition(".")[2]
    if item.kind != "view":
        raise PlanError(f'"{shown}" is not a view', sqlstate="42809")
    users = state.dependents(item.id)
    if users:
        raise PlanError(
            f'cannot replace view "{shown}": {users[0].kind} "{users[0].name}" depends on it '
            "and keeps its definition",
            sqlstate="0A000",
            hint="Drop the views that read it, replace it, and create them again.",
        )
    return item


def same_columns(old: Item, new: tuple[tuple[str, str, bool], ...]) -> None:
    """42P16 unless ``new`` (name, type, nullable) keeps ``old``'s columns, in order."""
    if len(new) < len(old.columns):
        raise PlanError("cannot drop columns from view", sqlstate="42P16")
    for (name, kind, _), (new_name, new_kind, _) in zip(old.columns, new, strict=False):
        if new_name != name:
            raise PlanError(
                f'cannot change name of view column "{name}" to "{new_name}"',
                sqlstate="42P16",
                hint="Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            )
        if new_kind != kind:
            raise PlanError(
                f'cannot change data type of view column "{name}" from {kind} to {new_kind}',
                sqlstate="42P16",
            )


def replace_view(state: CatalogState, g: dict[str, Any], item: Item) -> tuple[CatalogState, None]:
    """The catalog with ``item`` in place of the view it replaces (checked again on it)."""
    replaced_view(state, g)
    return state.with_item(item), None
