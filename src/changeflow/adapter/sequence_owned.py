"""``ALTER SEQUENCE … OWNED BY table.column | NONE``: the column a sequence belongs to, which
drops it with the column or the table, as a serial column's sequence is (pg_dump writes every
serial column so: the sequence, then OWNED BY, then the column's DEFAULT). The column's
DEFAULT is left as it is, as in PostgreSQL."""

from __future__ import annotations

import re
from dataclasses import replace

from changeflow.adapter.catalog import CatalogState, Item
from changeflow.errors import PlanError

_NAME = r"(?:\"[^\"]+\"|[\w$]+)"
_OWNED = re.compile(rf"\bOWNED\s+BY\s+(?P<target>NONE\b|{_NAME}(?:\.{_NAME})+)", re.I)


def owned_clause(rest: str) -> tuple[str, str | None]:
    """``rest`` (ALTER SEQUENCE's options) without its OWNED BY clause, and that clause's
    target (``NONE``, or ``[schema.]table.column``) or None."""
    m = _OWNED.search(rest)
    if m is None:
        return rest, None
    return rest[: m.start()] + rest[m.end() :], m["target"]


def set_owned_by(state: CatalogState, sequence: Item, target: str) -> Item:
    """``sequence`` owned by ``target`` (``NONE``: by nothing); 42P01 or 42703 if the table
    or its column does not exist, 55000 if it is not a table."""
    if target.upper() == "NONE":
        return replace(sequence, depends_on=(), options={**sequence.options, "owned_by": None})
    parts = [_ident(p) for p in re.findall(r"\"[^\"]+\"|[^.]+", target)]
    column, table_name = parts[-1], ".".join(parts[:-1])
    table = state.find(table_name)
    if table is None:
        raise PlanError(f'relation "{table_name}" does not exist', sqlstate="42P01")
    if table.kind != "table":
        raise PlanError(f'sequence cannot be owned by relation "{table.name}"', sqlstate="55000")
    if column not in (c[0] for c in table.columns):
        raise PlanError(
            f'column "{column}" of relation "{table.name}" does not exist', sqlstate="42703"
        )
    return replace(
        sequence, depends_on=(table.id,), options={**sequence.options, "owned_by": column}
    )


def _ident(part: str) -> str:
    return part[1:-1] if part.startswith('"') else part.lower()
