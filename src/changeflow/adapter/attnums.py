"""A table's column numbers (pg_attribute's ``attnum``), kept as PostgreSQL keeps them: a
column keeps its number when another is dropped, a dropped column's number is not used again
(it keeps a pg_attribute row with ``attisdropped``), and an added column takes the next one.
The item's ``attnums`` option holds its columns' numbers and ``dropped`` the dropped ones
(neither is set until a column is dropped: the columns are then numbered 1, 2, …)."""

from __future__ import annotations

from typing import Any

from changeflow.adapter.catalog import Item


def attnums(item: Item) -> list[int]:
    """The numbers of the item's columns, in their order."""
    return list(item.options.get("attnums") or range(1, len(item.columns) + 1))


def dropped(item: Item) -> list[int]:
    """The numbers of the item's dropped columns."""
    return list(item.options.get("dropped") or [])


def after_drop(item: Item, i: int) -> dict[str, Any]:
    """The options that number the columns once the ``i``-th (from 0) is dropped."""
    nums = attnums(item)
    return {"attnums": nums[:i] + nums[i + 1 :], "dropped": [*dropped(item), nums[i]]}


def after_add(item: Item) -> dict[str, Any]:
    """The options that number the columns once one is added (after the last ever used)."""
    nums = attnums(item)
    if "attnums" not in item.options:
        return {}
    return {"attnums": [*nums, max(nums + dropped(item), default=0) + 1]}
