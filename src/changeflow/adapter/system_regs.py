"""Object identifier types in catalog queries: a result column cast to ``regclass``,
``regtype``, ``regproc``, ``regnamespace``, ``regprocedure``, ``regoper`` or ``regrole`` (or
given by ``to_regclass``, ``to_regtype``) has that type, and each value carries its OID with
its name (:class:`ObjectName`): shown as the name, sent in binary as the 4-byte OID, as
PostgreSQL sends them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from changeflow.compute.types import SqlType
from changeflow.errors import ChangeflowError

REG_TYPES = {
    name: SqlType(name, pa.string())
    for name in (
        "regclass",
        "regtype",
        "regproc",
        "regnamespace",
        "regprocedure",
        "regoper",
        "regrole",
    )
}


_LOOKUPS = {"to_regclass": "regclass", "to_regtype": "regtype"}  # the calls that give reg* values


class ObjectName(str):
    """A reg* value: its object's name (its text), with the object's ``oid``."""

    oid: int

    def __new__(cls, name: str, oid: int) -> ObjectName:
        out = super().__new__(cls, name)
        out.oid = oid
        return out

    def __reduce__(self) -> tuple[object, tuple[str, int]]:
        return (ObjectName, (str(self), self.oid))


def cast_kind(node: exp.Expression) -> str | None:
    """The reg* type ``node`` casts to, else None."""
    if not isinstance(node, exp.Cast):
        return None
    to = node.to
    name = str(to.this) if isinstance(to, exp.ObjectIdentifier) else to.sql("postgres")
    name = name.lower().split(".")[-1].strip('"')
    return name if name in REG_TYPES else None


class RegColumns:
    """The select list's reg* casts of one catalog query: each is read as its OID (a call of
    ``reg_oid`` in SQLite) and named again once the rows are in (``resolve(kind, value)`` gives
    an object's ``(oid, name)``); a failed lookup is raised after the query ran."""

    def __init__(self, select: exp.Expression, resolve: Callable[[str, Any], tuple[int, str]]):
        self.resolve = resolve
        self.kinds: dict[int, str] = {}
        self.failed: list[ChangeflowError] = []
        self.named: dict[tuple[str, int], str] = {}  # the name each OID was found by
        if not isinstance(select, exp.Select):
            return
        for i, e in enumerate(select.expressions):
            node = e.unalias()
            kind = cast_kind(node)
            if isinstance(node, exp.Anonymous) and str(node.this).lower() in _LOOKUPS:
                self.kinds[i] = _LOOKUPS[str(node.this).lower()]  # an OID, shown by name
            elif kind is not None:
                self.kinds[i] = kind
                call = exp.Anonymous(
                    this="reg_oid", expressions=[exp.Literal.string(kind), node.this]
                )
                node.replace(call)

    def oid(self, kind: str, value: Any) -> int | None:
        """``value`` (an OID or a name) as its object's OID (the SQLite function ``reg_oid``)."""
        found = self._found(kind, value, slice(None))
        if found is None:
            return None
        self.named[kind, found[0]] = found[1]  # 'f(text)'::regprocedure shows its arguments
        return found[0]

    def name(self, kind: str, value: Any) -> str | None:
        """``value`` as its object's name (``reg_name``: a reg* value cast to text)."""
        return self._found(kind, value, 1)

    def _found(self, kind: str, value: Any, part: int | slice) -> Any:
        if value is None:
            return None
        try:
            return self.resolve(kind, value)[part]
        except ChangeflowError as e:
            self.failed.append(e)
            return None

    def toggle(self, kind: str) -> Callable[[Any], Any]:
        """A reg* cast inside the query: an OID as its object's name, a name as its OID (shown,
        or compared with an oid column)."""

        def call(value: Any) -> Any:
            return self._found(kind, value, int(isinstance(value, int)))

        return call

    def finish(self, kinds: list[SqlType], rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The rows with each reg* column's OID as an :class:`ObjectName` (``kinds`` set)."""
        if self.failed:
            raise self.failed[0]
        for i, kind in self.kinds.items():
            kinds[i] = REG_TYPES[kind]
        if not self.kinds:
            return rows
        out = []
        for row in rows:
            values = list(row)
            for i, kind in self.kinds.items():
                if values[i] is not None:
                    shown = self.named.get((kind, values[i]))
                    if shown is None:
                        shown = self.resolve(kind, values[i])[1]
                    values[i] = ObjectName(shown, values[i])
            out.append(tuple(values))
        return out
