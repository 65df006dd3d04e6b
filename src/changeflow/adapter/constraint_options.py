"""Named constraints kept in a table's options (``checks``, ``foreign_keys``: lists whose
entries start with the constraint's name): added by ALTER TABLE … ADD with the table's rows
checked before and after (or, ``NOT VALID``, not checked: named in ``not_valid`` until
``VALIDATE CONSTRAINT`` checks them), and taken out by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.errors import EvalError

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment


def without(state: CatalogState, item_id: str, option: str, name: str) -> CatalogState:
    """``state`` with constraint ``name`` taken out of the item's ``option`` list."""
    now = state.items[item_id]
    kept = [c for c in now.options.get(option) or [] if c[0] != name]
    return state.with_item(replace(now, options={**now.options, option: kept}))


def add_checked(
    env: Environment,
    item: Item,
    option: str,
    constraint: Any,
    check: Callable[[Item], None],
    valid: bool = True,
) -> None:
    """Keep ``constraint`` (with ``name`` and ``to_json()``) in the item's ``option`` list
    once ``check(item)`` passes for the table's rows, then check them again (a write planned
    before the change may have added a row meanwhile: then the constraint goes again); not
    ``valid`` (``NOT VALID``): kept unchecked, for the writes from now on."""
    if valid:
        check(item)

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        now = state.items[item.id]
        options = {**now.options, option: [*(now.options.get(option) or []), constraint.to_json()]}
        if not valid:
            options["not_valid"] = sorted({*not_valid(now), constraint.name})
        return state.with_item(replace(now, options=options)), None

    env.catalog.change(change)
    if not valid:
        return
    try:
        check(env.catalog.load().items[item.id])
    except EvalError:
        env.catalog.change(lambda s: (without(s, item.id, option, constraint.name), None))
        raise


def not_valid(item: Item) -> set[str]:
    """The table's constraints added ``NOT VALID`` and not validated since."""
    return set(item.options.get("not_valid") or ())
