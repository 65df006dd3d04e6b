"""What the SQL planner asks of the catalog, and what it gives back.

The planner knows nothing of storage: it resolves each name through a :class:`Resolver`, which
answers with a :class:`Relation` (the plan that reads the item, its timeline, and for tables what
DML needs). It returns a :class:`Query`: a plan, the finishing that SQL applies to the final
result only (ORDER BY, LIMIT, OFFSET, the visible columns), and the timelines it read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from changeflow.adapter.checks import Check
from changeflow.adapter.constraints import Unique
from changeflow.compute.plan import Order, Plan

KINDS = ("table", "source", "view", "materialized view", "index", "sink")


@dataclass(frozen=True)
class Relation:
    """A catalog item as a query sees it.

    ``plan`` reads it: a :class:`~changeflow.compute.plan.Get` of the item's shard (tables,
    sources, materialized views), or a plain view's own plan, inlined. ``defaults`` holds, per
    column, the SQL text of its DEFAULT (None: NULL), for INSERT.
    """

    name: str
    kind: str
    plan: Plan
    timeline: str
    defaults: tuple[str | None, ...] = ()
    unique: tuple[Unique, ...] = ()  # a table's PRIMARY KEY and UNIQUE constraints
    always: frozenset[str] = frozenset()  # its GENERATED ALWAYS AS IDENTITY columns
    identity: frozenset[str] = frozenset()  # its identity columns, ALWAYS or BY DEFAULT
    checks: tuple[Check, ...] = ()  # a table's CHECK constraints
    referencing: bool = False  # a table with a FOREIGN KEY constraint
    generated: tuple[str | None, ...] = ()  # per column, its generation expression's SQL


class Resolver(Protocol):
    def relation(self, name: str) -> Relation:
        """The item named ``name``; a PlanError with SQLSTATE 42P01 if there is none."""
        ...


@dataclass(frozen=True)
class Finishing:
    """What SQL does to a query's final rows and nothing else: sort, skip, limit, then keep
    the first ``width`` columns (ORDER BY may sort by columns that are not shown)."""

    order_by: tuple[Order, ...] = ()
    limit: int | None = None
    offset: int = 0
    width: int | None = None  # None: every column of the plan


@dataclass(frozen=True)
class Query:
    """A planned query: ``plan`` is its rows as a collection; ``finishing`` applies on output;
    ``timelines`` are those of every item it reads (the adapter refuses more than one)."""

    plan: Plan
    finishing: Finishing = Finishing()
    timelines: frozenset[str] = field(default_factory=frozenset)
    items: frozenset[str] = field(default_factory=frozenset)  # names of the items read
    shown: tuple[tuple[int, str], ...] = ()  # select list positions cast to oid or a reg* type
