"""Query cursors: ``DECLARE name [NO] [SCROLL] CURSOR [WITH[OUT] HOLD] FOR query``, ``FETCH``
and ``MOVE`` in every direction PostgreSQL has (NEXT, PRIOR, FIRST, LAST, ABSOLUTE n,
RELATIVE n, n, ALL, FORWARD [n | ALL], BACKWARD [n | ALL]) and ``CLOSE name | ALL``.

A cursor holds its query's rows, taken when it is declared, and a position as PostgreSQL's:
before the first row (0), on row k (1…N), or after the last (N + 1). A FETCH returns the rows
it passes and stops on the last one it returned, or before the first or after the last when
it ran out; MOVE moves the same way and counts those rows. A NO SCROLL cursor only goes
forward (55000). One declared in a transaction block closes when it ends; outside one only a
WITH HOLD cursor may be declared (25P01), as in PostgreSQL.

The embedded session answers these statements here; the server uses the same cursors for
its queries (and its own for SUBSCRIBE)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from changeflow.adapter.result import Result
from changeflow.adapter.sql.names import NAME
from changeflow.adapter.sql.statements import Statement, name, parse
from changeflow.compute.types import Schema
from changeflow.errors import PlanError

_FLAGS = re.IGNORECASE | re.DOTALL
DECLARE = re.compile(
    rf"DECLARE\s+(?P<name>{NAME})\s+(?:BINARY\s+)?(?:INSENSITIVE\s+|ASENSITIVE\s+)?"
    r"(?:(?P<scroll>NO\s+SCROLL|SCROLL)\s+)?CURSOR\s+(?:(?P<hold>WITH|WITHOUT)\s+HOLD\s+)?"
    r"FOR\s+(?P<query>.+)",
    _FLAGS,
)
_COUNT = r"[+-]?\d+"
MOTION = re.compile(
    r"(?P<verb>FETCH|MOVE)\s+(?:"
    r"(?P<simple>NEXT|PRIOR|FIRST|LAST)"
    rf"|(?P<absolute>ABSOLUTE|RELATIVE)\s+(?P<n>{_COUNT})"
    rf"|(?P<way>FORWARD|BACKWARD)(?:\s+(?P<way_count>ALL|{_COUNT}))?"
    rf"|(?P<count>ALL|{_COUNT})"
    rf")?\s*(?:(?:FROM|IN)\s+)?(?P<name>{NAME})\s*(?:WITH\s*\((?P<with>.*)\))?",
    _FLAGS,
)
CLOSE = re.compile(rf"CLOSE\s+(?P<name>{NAME})", _FLAGS)


@dataclass(frozen=True)
class Motion:
    """Where a FETCH or MOVE goes: ``kind`` is ``forward``/``backward`` with ``count`` rows
    (None: all), or ``absolute``/``relative`` with ``count`` the row."""

    kind: str
    count: int | None


def motion(m: re.Match[str]) -> Motion:
    """The motion a :data:`MOTION` match names (FETCH alone is FETCH NEXT)."""
    if m["simple"]:
        word = m["simple"].upper()
        return {
            "NEXT": Motion("forward", 1),
            "PRIOR": Motion("backward", 1),
            "FIRST": Motion("absolute", 1),
            "LAST": Motion("absolute", -1),
        }[word]
    if m["absolute"]:
        return Motion(m["absolute"].lower(), int(m["n"]))
    count = m["way_count"] if m["way"] else m["count"]
    backward = bool(m["way"]) and m["way"].upper() == "BACKWARD"
    if (count or "").upper() == "ALL":
        return Motion("backward" if backward else "forward", None)
    n = int(count) if count is not None else 1
    if n < 0:
        backward, n = not backward, -n
    return Motion("backward" if backward else "forward", n)


@dataclass
class QueryCursor:
    """A declared query's rows and the cursor's position among them."""

    columns: Schema
    rows: list[tuple[Any, ...]]
    scroll: bool = True
    in_transaction: bool = False
    position: int = 0  # 0: before the first row; len(rows) + 1: after the last

    def go(self, where: Motion) -> list[tuple[Any, ...]]:
        """The rows a FETCH of ``where`` returns, the cursor moved as PostgreSQL moves it."""
        n, p = len(self.rows), self.position
        backward = where.kind == "backward" or (
            where.kind in ("absolute", "relative") and self._target(where) < p
        )
        if backward and not self.scroll:
            raise PlanError(
                "cursor can only scan forward",
                sqlstate="55000",
                hint="Declare it with SCROLL option to enable backward scan.",
            )
        if where.kind in ("absolute", "relative"):
            if where.kind == "relative" and where.count == 0:
                return self._current()
            target = self._target(where)
            self.position = min(max(target, 0), n + 1)
            return self._current()
        if where.count == 0:
            return self._current()
        if where.kind == "forward":
            ahead = n - min(p, n)  # rows p+1 … N
            if where.count is None or where.count > ahead:
                self.position = n + 1
                return self.rows[p:]
            self.position = p + where.count
            return self.rows[p : self.position]
        start = p - 1  # rows start, start-1 … 1 (1-based)
        if where.count is None or where.count > start:
            self.position = 0
            return self.rows[max(start, 0) - 1 :: -1] if start > 0 else []
        self.position = start - where.count + 1
        return self.rows[start - 1 : self.position - 2 if self.position > 1 else None : -1]

    def _target(self, where: Motion) -> int:
        """The 1-based row ABSOLUTE or RELATIVE names (out of range: past an end)."""
        n, count = len(self.rows), where.count or 0
        if where.kind == "absolute":
            return count if count >= 0 else n + 1 + count
        return self.position + count

    def _current(self) -> list[tuple[Any, ...]]:
        p = self.position
        return [self.rows[p - 1]] if 1 <= p <= len(self.rows) else []


def declared(match: re.Match[str], columns: Schema, rows: Any, in_block: bool) -> QueryCursor:
    """The cursor a DECLARE match makes of a query's result; 25P01 outside a transaction
    block without WITH HOLD."""
    hold = (match["hold"] or "").upper() == "WITH"
    if not in_block and not hold:
        raise PlanError("DECLARE CURSOR can only be used in transaction blocks", sqlstate="25P01")
    scroll = (match["scroll"] or "").upper().replace(" ", "") != "NOSCROLL"
    return QueryCursor(columns, list(rows), scroll, in_transaction=not hold)


def moved(cursor: QueryCursor, match: re.Match[str]) -> Result:
    """FETCH's rows (``FETCH n``) or MOVE's count (``MOVE n``)."""
    rows = cursor.go(motion(match))
    if match["verb"].upper() == "MOVE":
        return Result(f"MOVE {len(rows)}")
    return Result(f"FETCH {len(rows)}", cursor.columns, rows)


def cursor_statement(session: Any, stmt: Statement) -> Result:
    """DECLARE, FETCH, MOVE or CLOSE of a query cursor of ``session``."""
    if not session.in_transaction:  # the cursors of a transaction end with it
        session.cursors = {k: c for k, c in session.cursors.items() if not c.in_transaction}
    text = stmt.text.strip().rstrip(";").strip()
    if (m := DECLARE.fullmatch(text)) is not None:
        key = name(m["name"])
        if key in session.cursors:
            raise PlanError(f'cursor "{key}" already exists', sqlstate="42P03")
        query = parse(m["query"].strip())
        if query.kind not in ("select", "show_items", "show_columns", "show_create"):
            raise PlanError("DECLARE takes a query", sqlstate="42601")
        result = session.run(query)
        session.cursors[key] = declared(m, result.columns, result.rows, session.in_transaction)
        return Result("DECLARE CURSOR")
    if (m := CLOSE.fullmatch(text)) is not None and m["name"].upper() == "ALL":
        session.cursors.clear()
        return Result("CLOSE CURSOR")
    m = m or MOTION.fullmatch(text)
    if m is None:
        raise PlanError(f"syntax error in {text[:60]!r}", sqlstate="42601")
    key = name(m["name"])
    if key not in session.cursors:
        raise PlanError(f'cursor "{key}" does not exist', sqlstate="34000")
    if m.re is CLOSE:
        del session.cursors[key]
        return Result("CLOSE CURSOR")
    return moved(session.cursors[key], m)
