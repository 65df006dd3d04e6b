"""Column definitions of CREATE TABLE and CREATE SOURCE (and ALTER TABLE's ADD COLUMN): each
column's SQL and Arrow types, NOT NULL, DEFAULT, length limit and generation expression."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from changeflow.adapter.deparse import stored_sql
from changeflow.adapter.sql.colnames import each_once
from changeflow.adapter.sql.types import column_type, domain_of, text_length
from changeflow.errors import PlanError


@dataclass(frozen=True)
class ColumnDef:
    """A column of CREATE TABLE or CREATE SOURCE: its SQL and Arrow types, NOT NULL, the SQL
    of its DEFAULT, the length limit of varchar(n) / char(n), and the SQL of its generation
    expression."""

    name: str
    kind: Any
    arrow: Any
    nullable: bool = True
    default: str | None = None
    length: int | None = None
    generated: str | None = None  # GENERATED ALWAYS AS (…) STORED
    domain: str | None = None  # the catalog name of the domain it is of

    @property
    def type_name(self) -> str:
        """Its type as the catalog keeps it: its domain's name, else its SQL type's."""
        return self.domain or self.kind.name


def table_columns(defs: list[exp.Expression]) -> list[ColumnDef]:
    """The columns of column definitions (table constraints are accepted, not enforced)."""
    out = []
    for d in defs:
        if not isinstance(d, exp.ColumnDef):
            continue
        name = d.name
        if d.args.get("kind") is None:
            raise PlanError(f'column "{name}" needs a type', sqlstate="42601")
        given = d.args["kind"]
        domain = domain_of(given)
        if domain is not None:  # stored as its base type, which the domain's checks guard
            given = domain.base_type
        kind, arrow = column_type(given)
        nullable, default, generated = True, None, None
        for c in d.args.get("constraints") or []:
            k = c.args.get("kind")
            if (
                isinstance(k, exp.NotNullColumnConstraint)
                and not k.args.get("allow_null")
                or isinstance(k, exp.PrimaryKeyColumnConstraint)
            ):
                nullable = False
            elif isinstance(k, exp.DefaultColumnConstraint):
                default = stored_sql(k.this)
            elif isinstance(k, exp.ComputedColumnConstraint):
                generated = stored_sql(k.this)
        if name.startswith("_"):
            raise PlanError(f'column name "{name}" may not start with "_"', sqlstate="42939")
        length = text_length(given)
        found = ColumnDef(name, kind, arrow, nullable, default, length, generated)
        out.append(found if domain is None else replace(found, domain=domain.name))
    each_once([c.name for c in out])
    if not out:
        raise PlanError("a table needs at least one column", sqlstate="42601")
    return out
