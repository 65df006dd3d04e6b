"""CREATE INDEX's key and clauses as PostgreSQL writes them (pg_dump, Django, Alembic), read
down to what an index here is: an arrangement of its relation by equality of key columns.

A key item's collation, operator class (``varchar_pattern_ops``, Django's ``_like`` indexes),
ASC/DESC and NULLS FIRST/LAST order entries within a key and do not change which rows are
equal, so the item is its column. ``USING btree`` or ``hash``, ``INCLUDE (…)`` (the arrangement
holds whole rows) and ``WITH (…)`` storage parameters are taken as they are; a partial index's
WHERE is :mod:`~changeflow.adapter.partial_index`'s. What would change the index's meaning is
refused with 0A000: an expression as a key, another access method, NULLS NOT DISTINCT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from changeflow.errors import PlanError

_NAME = r'(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)'
_ITEM = re.compile(
    rf"(?P<column>{_NAME})(?:\s+COLLATE\s+(?:{_NAME}\.)?(?P<collate>{_NAME}))?"
    rf"(?:\s+(?:{_NAME}\.)?(?P<opclass>[\w$]+_ops))?"
    r"(?:\s+(?P<order>ASC|DESC))?(?:\s+NULLS\s+(?P<nulls>FIRST|LAST))?",
    re.I,
)
METHODS = ("btree", "hash")


def key_columns(items: list[str]) -> list[str]:
    """The key columns of CREATE INDEX's key ``items`` (as written); 0A000 for an expression."""
    out = []
    for item in items:
        m = _ITEM.fullmatch(item.strip())
        if m is None:
            raise PlanError(
                f"an index on an expression is not supported ({item.strip()}): index the "
                "columns it reads",
                sqlstate="0A000",
            )
        out.append(m["column"])
    return out


@dataclass(frozen=True)
class KeyItem:
    """A key item as written: its column (as written, quotes and all), collation, operator
    class, DESC and NULLS FIRST."""

    column: str
    collate: str | None = None
    opclass: str | None = None
    desc: bool = False
    nulls_first: bool = False

    @property
    def option(self) -> int:
        """pg_index.indoption's bits: 1 DESC, 2 NULLS FIRST."""
        return int(self.desc) | (2 * int(self.nulls_first))


def key_item(text: str) -> KeyItem:
    """A key item as :data:`_ITEM` reads it (one that key_columns accepted)."""
    m = _ITEM.fullmatch(text.strip())
    if m is None:
        return KeyItem(text.strip())
    desc = (m["order"] or "").upper() == "DESC"
    nulls = (m["nulls"] or ("FIRST" if desc else "LAST")).upper() == "FIRST"
    opclass = m["opclass"].lower() if m["opclass"] else None
    return KeyItem(m["column"], m["collate"], opclass, desc, nulls)


def tail_clauses(tail: str | None) -> tuple[list[str], list[tuple[str, str]]]:
    """INCLUDE's columns (as written) and WITH's storage parameters (name, value) of the
    clauses after an index's key."""
    from changeflow.adapter.sql.statements import commas

    text = tail or ""
    include, params = [], []
    m = re.search(r"\bINCLUDE\s*\(([^)]*)\)", text, re.I)
    if m:
        include = [c.strip() for c in commas(m[1]) if c.strip()]
    m = re.search(r"\bWITH\s*\(([^)]*)\)", text, re.I)
    if m:
        for part in commas(m[1]):
            name, _, value = part.partition("=")
            if name.strip():
                value = value.strip() or "true"
                params.append((name.strip().lower(), value.strip("'\"")))
    return include, params


def check_clauses(method: str | None, tail: str | None) -> None:
    """0A000 for an access method or a clause after the key that changes what the index
    holds or means."""
    if method is not None and method.lower() not in METHODS:
        raise PlanError(
            f'index access method "{method.lower()}" is not supported: an index here is an '
            "arrangement by equality of its key (btree or hash)",
            sqlstate="0A000",
        )
    words = " ".join((tail or "").upper().split())
    if "NULLS NOT DISTINCT" in words:
        raise PlanError("NULLS NOT DISTINCT indexes are not supported", sqlstate="0A000")
