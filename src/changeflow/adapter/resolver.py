"""A catalog version as plans see it: an item's columns as a plan's schema, a view's plan
stored in the catalog and read back, and names resolved for the SQL planner."""

from __future__ import annotations

import base64
import pickle

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.checks import checks_of
from changeflow.adapter.constraints import Unique
from changeflow.adapter.domains import domain_checks, domain_defaults
from changeflow.adapter.relations import Relation
from changeflow.adapter.typmods import mods_of
from changeflow.adapter.unique_index import index_constraints
from changeflow.compute import plan as P
from changeflow.compute.types import Column, Schema, sql_type
from changeflow.errors import PlanError

QUERYABLE = ("table", "source", "view", "materialized view")


# a catalog column type a plan holds as another: a view's oid column (``x::oid``) as a bigint,
# and its reg* columns (``'t'::regclass``) as the bigint OIDs they name
PLANNED_AS = dict.fromkeys(("oid", "regclass", "regtype", "regnamespace", "regproc"), "bigint")
PLANNED_AS["regprocedure"] = "bigint"


def schema_of(item: Item) -> Schema:
    """An item's columns as a plan reads them (numeric ones with the scale they show, char(n)
    ones with n)."""
    scales = item.options.get("scales") or [None] * len(item.columns)
    return tuple(
        Column(n, sql_type(PLANNED_AS.get(t, t)), nullable, scale, *mod)
        for (n, t, nullable), scale, mod in zip(item.columns, scales, mods_of(item), strict=True)
    )


def columns_of(
    schema: Schema, oids: dict[int, str] | None = None
) -> tuple[tuple[str, str, bool], ...]:
    """A schema's columns as an item keeps them; those at ``oids`` (bigints a view's select
    list casts to oid or a reg* type) have that type in the catalog."""
    oids = oids or {}
    return tuple(
        (c.name, oids[i] if i in oids and c.type.name == "bigint" else c.type.name, c.nullable)
        for i, c in enumerate(schema)
    )


def scales_of(schema: Schema) -> list[int | None]:
    """The scales of a schema's columns, as an item keeps them in its options."""
    return [c.scale for c in schema]


def encode_plan(plan: P.Plan) -> str:
    return base64.b64encode(pickle.dumps(plan)).decode()


def decode_plan(text: str) -> P.Plan:
    return pickle.loads(base64.b64decode(text))


class CatalogResolver:
    """Names of one catalog version as the SQL planner sees them; an index on a view serves
    reads of that view."""

    def __init__(self, state: CatalogState) -> None:
        self.state = state

    def row_type(self, name: str) -> Schema | None:
        """The fields of the composite type ``name``, None if there is none."""
        item = self.state.find(name)
        return schema_of(item) if item is not None and "fields" in item.options else None

    def relation(self, name: str) -> Relation:
        item = self.state.find(name)
        if item is None and self.state.elsewhere(name):
            raise PlanError("cannot access temporary tables of other sessions", sqlstate="0A000")
        if item is None or item.kind not in QUERYABLE:
            raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
        unique = tuple(Unique.from_json(u) for u in item.options.get("unique") or [])
        unique += index_constraints(self.state, item)
        plan = self.plan(item)
        owned = [
            i
            for i in self.state.dependents(item.id)
            if i.kind == "sequence" and i.options.get("owned_by") is not None
        ]
        always = frozenset(i.options["owned_by"] for i in owned if i.options.get("always"))
        identity = always | {i.options["owned_by"] for i in owned if i.options.get("identity")}
        return Relation(
            item.name,
            item.kind,
            plan,
            item.timeline,
            domain_defaults(self.state, item, defaults(item)),
            unique,
            always,
            identity,
            tuple(checks_of(item)) + domain_checks(self.state, item),
            bool(item.options.get("foreign_keys")),
            generated_of(item),
        )

    def plan(self, item: Item) -> P.Plan:
        """The plan that reads ``item``: its shard, or an index's, or a view's own plan."""
        if item.kind in ("table", "source", "materialized view"):
            return P.Get(item.id, schema_of(item))
        index = next(
            (
                i
                for i in self.state.items.values()
                if i.kind == "index" and i.options.get("on") == item.id
            ),
            None,
        )
        if index is not None:
            return P.Get(index.id, schema_of(index))
        return decode_plan(item.options["plan"])


def defaults(item: Item) -> tuple[str | None, ...]:
    return tuple(item.options.get("defaults") or (None,) * len(item.columns))


def generated_of(item: Item) -> tuple[str | None, ...]:
    """Per column, the SQL of its generation expression (None: not generated)."""
    found = list(item.options.get("generated") or [])
    return tuple(found + [None] * (len(item.columns) - len(found)))


def generated_names(item: Item) -> set[str]:
    """The names of the item's generated columns."""
    return {c[0] for c, g in zip(item.columns, generated_of(item), strict=True) if g}
