"""Dropping catalog objects that are not relations (types, domains, functions), as
PostgreSQL's ``DROP TYPE`` and ``DROP FUNCTION`` do: IF EXISTS notes a missing name, an
object something depends on is kept (2BP01; with CASCADE 0A000, as dependents are not
dropped here), and in a transaction the dropped items are only hidden, for its COMMIT to
release or its ROLLBACK to put back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.errors import PlanError


@dataclass(frozen=True)
class DropRule:
    """How one kind of object is named in a DROP's messages."""

    kind: str  # the catalog items' kind
    noun: str  # "type", "function"
    missing: str  # the error of a missing name, with {name}
    skipped: str  # IF EXISTS's notice of one
    missing_sqlstate: str
    hint: str  # what to do about the dependents
    dependents_of: Callable[[CatalogState, Item], list[str]]


def drop_items(
    env: Any, names: list[str], args: dict, rule: DropRule, keep: list[Item] | None
) -> list[tuple[str, str, str]]:
    """Drop the objects ``names`` (``args``: the statement's ``ie`` and ``mode``); return the
    notices. ``keep`` (a transaction's) takes the dropped items aside instead of removing
    them."""
    state = env.catalog.load()
    doomed, notices = [], []
    for object_name in names:
        item = state.find(object_name)
        if item is None or item.kind != rule.kind:
            if args.get("ie"):
                notices.append(("00000", rule.skipped.format(name=object_name), ""))
                continue
            raise PlanError(rule.missing.format(name=object_name), sqlstate=rule.missing_sqlstate)
        users = rule.dependents_of(state, item)
        if users:
            cascade = (args.get("mode") or "").upper() == "CASCADE"
            raise PlanError(
                f"cannot drop {rule.noun} {object_name} because other objects depend on it"
                + (" (CASCADE does not drop them here)" if cascade else ""),
                sqlstate="0A000" if cascade else "2BP01",
                detail="\n".join(users),
                hint=rule.hint,
            )
        doomed.append(item)
    ids = [i.id for i in doomed]
    if keep is not None:
        keep.extend(doomed)
        env.catalog.change(lambda s: (s.hiding(ids), None))
    else:
        env.catalog.change(lambda s: (s.without(ids), None))
    return notices
