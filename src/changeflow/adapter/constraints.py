"""PRIMARY KEY and UNIQUE constraints of tables: read from CREATE TABLE, named as PostgreSQL
names them (``t_pkey``, ``t_a_b_key``), and enforced on every write (23505), and INSERT … ON
CONFLICT resolved against them (DO NOTHING skips a row whose key exists; DO UPDATE turns the
existing row into the SET list's values over it and EXCLUDED).

A write checks the table as its transaction will leave it: the rows at its read timestamp, the
transaction's earlier writes and its own. The table joins the transaction's reads, so a
concurrent commit that wrote the table makes this one fail with 40001 instead of letting two
equal keys in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlglot import exp

from changeflow.compute import expr as X
from changeflow.errors import EvalError, PlanError

Row = tuple[Any, ...]
Counted = dict[Row, int]
_E = TypeVar("_E", EvalError, PlanError)


@dataclass(frozen=True)
class Unique:
    """A PRIMARY KEY or UNIQUE constraint: its name and its columns' positions; ``index``
    for a unique index's (enforced alike, but no constraint ON CONFLICT ON CONSTRAINT names)."""

    name: str
    columns: tuple[int, ...]
    primary: bool = False
    index: bool = False
    where: X.Expr | None = None  # a partial unique index's predicate: the rows it constrains

    def to_json(self) -> list:
        return [self.name, list(self.columns), self.primary]

    @staticmethod
    def from_json(value: list) -> Unique:
        return Unique(value[0], tuple(value[1]), bool(value[2]))

    def key(self, row: Row) -> Row | None:
        """The row's key; None if a column is NULL (NULLs are never equal: no conflict), or
        if the row is not one a partial index's predicate holds for."""
        if self.where is not None and self.where.eval(row) is not True:
            return None
        values = tuple(row[i] for i in self.columns)
        return None if any(v is None for v in values) else values


def table_constraints(table: str, defs: list[exp.Expression], names: list[str]) -> list[Unique]:
    """The PRIMARY KEY and UNIQUE constraints of CREATE TABLE's definitions (column and
    table constraints), the primary key first; 42P16 for two primary keys."""
    found: list[Unique] = []

    def add(columns: list[str], primary: bool, given: str | None) -> None:
        missing = [c for c in columns if c not in names]
        if missing:
            raise PlanError(f'column "{missing[0]}" named in key does not exist', sqlstate="42703")
        if primary and any(u.primary for u in found):
            raise PlanError(
                f'multiple primary keys for table "{table}" are not allowed', sqlstate="42P16"
            )
        suffix = "pkey" if primary else "_".join(columns) + "_key"
        name = given or f"{table.split('.')[-1]}_{suffix}"
        found.append(Unique(name, tuple(names.index(c) for c in columns), primary))

    for d in defs:
        given = None
        if isinstance(d, exp.Constraint):
            given = str(d.this.name)
            parts = list(d.expressions)
        else:
            parts = [d]
        for part in parts:
            if isinstance(part, exp.ColumnDef):
                for c in part.args.get("constraints") or []:
                    kind = c.args.get("kind")
                    if isinstance(kind, exp.PrimaryKeyColumnConstraint):
                        add([part.name], True, None)
                    elif isinstance(kind, exp.UniqueColumnConstraint):
                        add([part.name], False, None)
            elif isinstance(part, exp.PrimaryKey):
                add([_name(e) for e in part.expressions], True, given)
            elif isinstance(part, exp.UniqueColumnConstraint):
                schema = part.this
                columns = schema.expressions if isinstance(schema, exp.Schema) else []
                add([_name(e) for e in columns], False, given)
    found.sort(key=lambda u: not u.primary)
    return found


def _name(node: exp.Expression) -> str:
    ident = node if isinstance(node, exp.Identifier) else node.this
    return ident.this if ident.quoted else ident.this.lower()


def check_unique(
    constraints: list[Unique],
    before: Counted,
    changes: list[tuple[Row, int]],
    table: str,
    names: list[str],
) -> None:
    """23505 if the table, ``before`` with ``changes`` applied, has two rows with one key."""
    after: Counter[Row] = Counter(before)
    for row, diff in changes:
        after[row] += diff
    added = {row for row, diff in changes if diff > 0}
    for u in constraints:
        keys = {u.key(r) for r in added} - {None}
        if not keys:
            continue
        seen: Counter[Row] = Counter()
        for row, count in after.items():
            k = u.key(row)
            if count > 0 and k in keys:
                seen[k] += count
        for k, n in seen.items():
            if n > 1:
                raise duplicate(u, k, table, names)


def duplicate(u: Unique, key: Row, table: str, names: list[str]) -> EvalError:
    """23505 for a write that would give ``u``'s ``key`` a second row."""
    message = f'duplicate key value violates unique constraint "{u.name}"'
    return _key_error(EvalError, message, "already exists", u, key, table, names)


def _key_error(
    kind: type[_E], message: str, state: str, u: Unique, key: Row, table: str, names: list[str]
) -> _E:
    """A 23505 of ``kind`` naming ``u`` and, in its detail, ``key`` and its ``state``."""
    columns = ", ".join(names[i] for i in u.columns)
    shown = f"({columns})=({', '.join('null' if v is None else str(v) for v in key)})"
    return kind(
        message, sqlstate="23505", detail=f"Key {shown} {state}.", table=table, constraint=u.name
    )


def check_build(u: Unique, rows: Iterable[tuple[Row, int]], table: str, names: list[str]) -> None:
    """23505 if the index of ``u`` cannot be built on ``rows`` (two live rows with one key)."""
    seen: set[Row] = set()
    for row, count in rows:
        key = u.key(row)
        if key is None or count <= 0:
            continue
        if key in seen or count > 1:
            message = f'could not create unique index "{u.name}"'
            raise _key_error(PlanError, message, "is duplicated", u, key, table, names)
        seen.add(key)


@dataclass(frozen=True)
class Conflict:
    """ON CONFLICT: the constraint it arbitrates on (None: any), DO NOTHING or DO UPDATE's
    new values (expressions over the existing row then the proposed one, EXCLUDED) and its
    WHERE."""

    target: Unique | None
    update: tuple[X.Expr, ...] | None = None
    where: X.Expr | None = None


def resolve(
    conflict: Conflict, constraints: list[Unique], before: Counted, proposed: list[tuple[Row, int]]
) -> list[tuple[Row, int]]:
    """The changes an INSERT … ON CONFLICT makes: proposed rows without a conflict are
    inserted; a conflicting one is skipped (DO NOTHING) or updates the row it conflicts with
    (DO UPDATE; a row affected twice is 21000)."""
    arbiters = [conflict.target] if conflict.target is not None else constraints
    live: Counter[Row] = Counter({r: c for r, c in before.items() if c > 0})
    index = [{u.key(r): r for r in live if u.key(r) is not None} for u in arbiters]

    def place(row: Row, diff: int) -> None:
        live[row] += diff
        for u, keys in zip(arbiters, index, strict=True):
            k = u.key(row)
            if k is not None and diff > 0:
                keys[k] = row
            elif k is not None and not live[row]:
                keys.pop(k, None)

    out: list[tuple[Row, int]] = []
    touched: set[Row] = set()
    for row, count in proposed:
        for _ in range(count):
            hit = next(
                (
                    keys[k]
                    for u, keys in zip(arbiters, index, strict=True)
                    if (k := u.key(row)) is not None and k in keys
                ),
                None,
            )
            if hit is None:
                place(row, 1)
                out.append((row, 1))
                touched.add(row)
                continue
            if conflict.update is None:
                continue
            if hit in touched:
                raise EvalError(
                    "ON CONFLICT DO UPDATE command cannot affect row a second time",
                    sqlstate="21000",
                    hint="Ensure that no rows proposed for insertion within the same command "
                    "have duplicate constrained values.",
                )
            pair = hit + row
            if conflict.where is not None and conflict.where.eval(pair) is not True:
                continue
            new = tuple(e.eval(pair) for e in conflict.update)
            place(hit, -1)
            place(new, 1)
            out += [(hit, -1), (new, 1)]
            touched.add(new)
    return out
