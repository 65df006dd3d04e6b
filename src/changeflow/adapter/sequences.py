"""Sequences and the columns that take their values: ``serial``, ``bigserial``,
``smallserial`` and ``GENERATED {BY DEFAULT | ALWAYS} AS IDENTITY`` columns (an ALWAYS
column takes only its DEFAULT: the planner refuses a value given), ``CREATE SEQUENCE``,
``DROP SEQUENCE``, ``nextval``, ``currval``, ``setval`` and ``pg_get_serial_sequence``.

A sequence is a catalog item (kind ``sequence``); a column's sequence depends on its table
(named ``<table>_<column>_seq``, as PostgreSQL names it) and is dropped with it. Its values
are handed out from blocks: each process reserves :data:`BLOCK` values at a time by
compare-and-set on the sequence's own consensus key, which holds the highest value reserved,
so no value is handed out twice across sessions, processes and restarts (what a process
reserved and did not hand out is a gap, as PostgreSQL's cached sequences leave).
``nextval`` is volatile: each row gets its own value, and a view refuses it.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter import ddl
from changeflow.adapter import sequence_holds as holds
from changeflow.adapter.catalog import SESSION_SETTINGS, Catalog, CatalogState, Item
from changeflow.adapter.privilege_checks import require
from changeflow.adapter.result import Result
from changeflow.adapter.sequence_options import (
    BIGINT,
    BOUNDS,
    SequenceOptions,
    block,
    restart_value,
    with_clauses,
)
from changeflow.adapter.sequence_owned import owned_clause, set_owned_by
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.adapter.sql.session_values import SEQUENCE_FUNCTIONS
from changeflow.adapter.sql.statements import Statement
from changeflow.compute import expr as X
from changeflow.compute.expr import _typed
from changeflow.compute.types import INT8, TEXT
from changeflow.compute.volatile import Volatile
from changeflow.errors import ChangeflowError, EvalError, PlanError
from changeflow.storage.consensus import VersionedData

BLOCK = 64  # values a process reserves at once
SERIAL = {
    exp.DataType.Type.SERIAL: exp.DataType.Type.INT,
    exp.DataType.Type.BIGSERIAL: exp.DataType.Type.BIGINT,
    exp.DataType.Type.SMALLSERIAL: exp.DataType.Type.SMALLINT,
}
# the statement's home and its session's last values (currval), set before planning
CONTEXT: ContextVar[tuple[Catalog, dict[str, int]] | None] = ContextVar("sequences", default=None)


def enter(session: Any) -> None:
    """The session's home and last values, for the statement it is about to plan."""
    last = session.__dict__.setdefault("sequence_values", {})  # currval's, by sequence id
    CONTEXT.set((session.env.catalog, last))
    holds.SESSION.set(session)


class _Blocks:
    """The values one process reserved of each sequence of one home, not yet handed out."""

    def __init__(self, catalog: Catalog) -> None:
        self.consensus = catalog.consensus
        self.lock = threading.Lock()
        self.free: dict[str, list[int]] = {}  # sequence id -> its values, the next last
        self.ends: dict[str, int] = {}  # the last value of the block reserved here
        self.given: dict[str, int] = {}  # the last value handed out here

    def next(self, seq_id: str, options: Callable[[], SequenceOptions], name: str) -> int:
        """The sequence's next value (of a block reserved with its present ``options``)."""
        with self.lock:
            values = self.free.get(seq_id)
            if not values:
                o = options()
                got: list[int] = []

                def step(old: int | None) -> int:
                    got[:] = block(o, o.first if old is None else old, BLOCK, name)
                    return got[-1]

                self._reserve(seq_id, step)
                values = self.free[seq_id] = got[::-1]
                self.ends[seq_id] = got[-1]
            self.given[seq_id] = values.pop()
            return self.given[seq_id]

    def set(self, seq_id: str, last: int) -> None:
        """The next value handed out here is the one after ``last``."""
        with self.lock:
            self._reserve(seq_id, lambda old: last)
            self.free.pop(seq_id, None)

    def forget(self, seq_id: str) -> None:
        """Hand out no more of the block reserved here (the sequence's options changed):
        where no one reserved after it, the next value follows the last one handed out."""
        with self.lock:
            if self.free.pop(seq_id, None) and seq_id in self.given:
                end, given = self.ends[seq_id], self.given[seq_id]
                self._reserve(seq_id, lambda old: given if old == end else old)

    def last(self, seq_id: str) -> int | None:
        """The value the next one follows: the last handed out here while a block reserved
        here lasts, else the last one reserved (None: none yet)."""
        with self.lock:
            if self.free.get(seq_id):
                return self.given[seq_id]
        head = self.consensus.head(f"adapter/sequence/{seq_id}")
        return json.loads(head.data)["reserved"] if head is not None else None

    def _reserve(self, seq_id: str, step: Any) -> int:
        key = f"adapter/sequence/{seq_id}"
        for _ in range(1000):
            head = self.consensus.head(key)
            old = json.loads(head.data)["reserved"] if head is not None else None
            new = step(old)
            seqno = head.seqno if head is not None else None
            data = json.dumps({"reserved": new}).encode()
            if self.consensus.compare_and_set(key, seqno, VersionedData((seqno or 0) + 1, data)):
                if seqno and seqno % 64 == 0:
                    self.consensus.truncate(key, seqno)
                return new
        raise ChangeflowError(f"sequence {seq_id} changed 1000 times under one reservation")


_BLOCKS: weakref.WeakKeyDictionary[Catalog, _Blocks] = weakref.WeakKeyDictionary()
_BLOCKS_LOCK = threading.Lock()


def _blocks(catalog: Catalog) -> _Blocks:
    with _BLOCKS_LOCK:
        if catalog not in _BLOCKS:
            _BLOCKS[catalog] = _Blocks(catalog)
        return _BLOCKS[catalog]


def _context() -> tuple[Catalog, dict[str, int]]:
    found = CONTEXT.get()
    if found is None:
        raise PlanError("sequences are used through a session", sqlstate="0A000")
    return found


@dataclass(frozen=True)
class _SequenceCall(Volatile):
    """A call of a sequence's function evaluated per row (``name`` is the sequence's)."""

    seq_id: str = ""
    name: str = ""
    function = ""

    def __post_init__(self) -> None:
        _typed(self, INT8, False)

    def __str__(self) -> str:
        return f"{self.function}('{self.name}')"


@dataclass(frozen=True)
class NextVal(_SequenceCall):
    """``nextval('name')``: the sequence's next value, a new one per row."""

    function = "nextval"

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        catalog, last = _context()
        holds.wait(catalog, self.seq_id, self.name)  # an open ALTER SEQUENCE of another session
        value = _blocks(catalog).next(
            self.seq_id, lambda: _options(catalog, self.seq_id), self.name
        )
        last[self.seq_id] = value
        return value


@dataclass(frozen=True)
class CurrVal(_SequenceCall):
    """``currval('name')``: the value the session's last ``nextval`` of the sequence gave,
    read as each row is computed (after a ``nextval`` before it in the row, as PostgreSQL)."""

    function = "currval"

    def eval(self, row: tuple[Any, ...], now: int | None = None) -> Any:
        _, last = _context()
        if self.seq_id not in last:
            message = f'currval of sequence "{self.name}" is not yet defined in this session'
            raise EvalError(message, sqlstate="55000")
        return last[self.seq_id]


# -- functions ---------------------------------------------------------------------------------


def sequence_call(node: exp.Expression) -> X.Expr | None:
    """``node`` planned, if it calls a sequence's function (setval and
    pg_get_serial_sequence are evaluated now, as constants of the statement)."""
    if not isinstance(node, exp.Anonymous) or str(node.this).lower() not in SEQUENCE_FUNCTIONS:
        return None
    func, args = str(node.this).lower(), node.expressions
    consts = [_constant(a) for a in args]
    arity = {"nextval": (1,), "currval": (1,), "setval": (2, 3), "pg_get_serial_sequence": (2,)}
    if len(args) in arity[func] and None in consts:  # strict: NULL (a column without one)
        return X.Lit(None, TEXT if func == "pg_get_serial_sequence" else INT8)
    wrong = any(c is _NOT for c in consts) or not (consts and isinstance(consts[0], str))
    if len(args) not in arity[func] or wrong:
        kinds = ", ".join(_kind(a) for a in args)
        raise PlanError(f"function {func}({kinds}) does not exist", sqlstate="42883")
    catalog, last = _context()
    if (
        func in ("nextval", "setval")
        and (SESSION_SETTINGS.get() or {}).get("transaction_read_only") == "on"
    ):
        raise PlanError(f"cannot execute {func}() in a read-only transaction", sqlstate="25006")
    if func == "pg_get_serial_sequence":
        return X.Lit(_serial_sequence(catalog, str(consts[0]), str(consts[1])), TEXT)
    item = _sequence(catalog, str(consts[0]))
    require(catalog.load(), item, {"nextval": "Uw", "currval": "rU", "setval": "w"}[func])
    if func == "nextval":
        return NextVal(item.id, item.name)
    if func == "currval":
        return CurrVal(item.id, item.name)
    value = _int(consts[1])
    options = SequenceOptions.of(item.options)
    options.check(value, "setval", item.name)
    called = len(consts) < 3 or consts[2] is True
    holds.wait(catalog, item.id, item.name)
    _blocks(catalog).set(item.id, value if called else value - options.increment)
    if called:
        last[item.id] = value
    return X.Lit(value, INT8)


_NOT = object()


def _constant(node: exp.Expression) -> Any:
    if isinstance(node, exp.Cast):  # 's'::regclass, 5::bigint
        return _constant(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "pg_get_serial_sequence":
        serial = sequence_call(node)  # nextval(pg_get_serial_sequence('t', 'id'))
        return serial.value if isinstance(serial, X.Lit) else _NOT
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else int(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -int(node.this.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    return _NOT


def _kind(node: exp.Expression) -> str:
    value = _constant(node)
    return "integer" if isinstance(value, int) and not isinstance(value, bool) else "text"


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError(f'invalid input syntax for type bigint: "{value}"', sqlstate="22P02")
    return value


def _options(catalog: Catalog, seq_id: str) -> SequenceOptions:
    item = catalog.load().items.get(seq_id)
    if item is None:
        raise PlanError(f"sequence {seq_id} was dropped", sqlstate="42P01")
    return SequenceOptions.of(item.options)


def _sequence(catalog: Catalog, name: str) -> Item:
    item = catalog.load().find(_catalog_name(name))
    if item is None or item.kind != "sequence":
        raise PlanError(f'relation "{name}" does not exist', sqlstate="42P01")
    return item


def _catalog_name(name: str) -> str:
    """A name as written in a string (``'s'``, ``'"S"'``, ``'public.s'``) as the catalog's."""
    parts = [p[1:-1] if p.startswith('"') else p.lower() for p in name.split(".")]
    return ".".join(parts)


def _serial_sequence(catalog: Catalog, table: str, column: str) -> str | None:
    state = catalog.load()
    owner = state.find(_catalog_name(table))
    if owner is None:
        raise PlanError(f'relation "{table}" does not exist', sqlstate="42P01")
    if column not in [c[0] for c in owner.columns]:
        raise PlanError(f'column "{column}" of relation "{table}" does not exist', sqlstate="42703")
    return serial_sequence(state, table, column)


def serial_sequence(state: CatalogState, table: str, column: str) -> str | None:
    """``pg_get_serial_sequence(table, column)``: the qualified name of the sequence that
    ``column`` of ``table`` owns; None if it owns none (or there is no such column)."""
    owner = state.find(_catalog_name(table))
    for item in owned_sequences(state, owner, column) if owner is not None else ():
        shown = item.name if "." in item.name else f"public.{item.name}"
        return ".".join(ddl.quote_ident(part) for part in shown.split("."))
    return None


# -- DDL ---------------------------------------------------------------------------------------


def create_table(env: Any, stmt: Statement) -> Result:
    """CREATE TABLE, its serial and identity columns made integers whose DEFAULT is the
    next value of a sequence created for each, owned by the column."""
    if stmt.args.get("query") is not None:  # CREATE TABLE … AS, SELECT … INTO
        from changeflow.adapter.table_as import create_table_as

        return create_table_as(env, stmt)
    create = stmt.ast
    assert isinstance(create, exp.Create)
    if not isinstance(create.this, exp.Schema):
        return ddl.create_table(env, stmt)
    tree = create.copy()
    table = ddl.table_name(tree.this.this)
    table = env.catalog.load().creation_name(table)
    owned = []
    for d in tree.this.expressions:
        found = serial_column(d, table) if isinstance(d, exp.ColumnDef) else None
        if found is not None:
            owned.append(found)
    if not owned:
        return ddl.create_table(env, stmt)
    state = env.catalog.load()
    if create.args.get("exists") and state.by_name(table) is not None:
        return ddl.create_table(env, stmt)
    for _, name, _ in owned:
        if state.by_name(name) is not None:
            raise PlanError(f'relation "{name}" already exists', sqlstate="42P07")
    for column, name, options in owned:  # first, so that the table's DEFAULTs are checked
        sql = f"CREATE SEQUENCE {name} OWNED BY {table}.{column}"
        add_sequence(env, name, sql, {"owned_by": column, **options})
    try:
        done = ddl.create_table(env, Statement(stmt.kind, stmt.text, tree, stmt.args))
    except BaseException:
        names = {name for _, name, _ in owned}
        env.catalog.change(lambda s: (s.without([i.id for i in _named(s, names)]), None))
        raise
    own(env, {name for _, name, _ in owned}, table)
    return done


def own(env: Any, names: set[str], table: str) -> None:
    """The sequences ``names`` owned by their columns of ``table`` (dropped with it)."""
    owner = env.catalog.load().by_name(table)
    env.catalog.change(lambda s: (_owned(s, _named(s, names), owner.id), None))


def serial_column(d: exp.ColumnDef, table: str) -> tuple[str, str, dict[str, Any]] | None:
    """If ``d`` is a serial or identity column of ``table``: its type made an integer, its
    DEFAULT the next value of its sequence and NOT NULL added; its name, its sequence's
    name and that sequence's options. Else None."""
    kind = _serial(d)
    if kind is None:
        return None
    name = f"{table}_{d.name}_seq"
    nextval = sqlglot.parse_one(_default_text(name), read="postgres")
    d.append("constraints", exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=nextval)))
    d.append("constraints", exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
    return d.name, name, _column_options(d, kind)


_TYPE_NAMES = {
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "integer",
    exp.DataType.Type.BIGINT: "bigint",
}


def _column_options(d: exp.ColumnDef, kind: str) -> dict[str, Any]:
    """The options of the sequence of ``d`` (a ``kind`` column, its type made an integer):
    ALWAYS or not, pg_attribute.attidentity, and the sequence's bounds by the type."""
    column_type = d.args.get("kind")
    type_name = _TYPE_NAMES.get(column_type.this if column_type else None, "bigint")
    options = SequenceOptions(max=BOUNDS.get(type_name, BIGINT)[1], type=type_name)
    identity = {"always": "a", "identity": "d"}.get(kind)
    return {"always": kind == "always", "identity": identity, "sequence": options.to_json()}


def _serial(d: exp.ColumnDef) -> str | None:
    """``serial`` if ``d`` is a serial column (its type made an integer), ``identity`` if it
    is a BY DEFAULT identity column, ``always`` if it is an ALWAYS one, else None."""
    kind = d.args.get("kind")
    if kind is not None and kind.this in SERIAL:
        d.set("kind", exp.DataType(this=SERIAL[kind.this]))
        return "serial"
    for c in d.args.get("constraints") or []:
        k = c.args.get("kind")
        if isinstance(k, exp.GeneratedAsIdentityColumnConstraint):
            c.pop()
            return "always" if k.this else "identity"
    return None


def _default_text(name: str) -> str:
    """The DEFAULT of a column of the sequence ``name``, as PostgreSQL shows it."""
    shown = ".".join(ddl.quote_ident(p) for p in name.split(".")).replace("'", "''")
    return f"nextval('{shown}'::regclass)"


def add_sequence(env: Any, name: str, sql: str, options: dict[str, Any]) -> None:
    def add(state: Any) -> tuple[Any, None]:
        item_id, state = state.allocate()
        item = Item(item_id, name, "sequence", sql, (), options=options)
        return state.with_item(item), None

    env.catalog.change(add)


def _named(state: Any, names: set[str]) -> list[Item]:
    return [i for i in state.items.values() if i.kind == "sequence" and i.name in names]


def _owned(state: Any, items: list[Item], owner: str) -> Any:
    """The state with ``items`` depending on (owned by) the table ``owner``, whose columns'
    DEFAULTs are written as PostgreSQL shows them (``nextval('t_id_seq'::regclass)``)."""
    table = state.items[owner]
    defaults = list(table.options["defaults"])
    names = [c[0] for c in table.columns]
    for item in items:
        state = state.with_item(replace(item, depends_on=(owner,)))
        defaults[names.index(item.options["owned_by"])] = _default_text(item.name)
    return state.with_item(replace(table, options={**table.options, "defaults": defaults}))


def owned_sequences(state: CatalogState, table: Item, column: str) -> list[Item]:
    """The sequences that ``column`` of ``table`` owns (dropped with the column)."""
    return [
        i
        for i in state.dependents(table.id)
        if i.kind == "sequence" and i.options.get("owned_by") == column
    ]


def identities(state: CatalogState, table: Item) -> dict[str, str]:
    """The identity columns of ``table`` and their pg_attribute.attidentity: ``a`` (ALWAYS)
    or ``d`` (BY DEFAULT)."""
    out = {}
    for s in state.dependents(table.id):
        if s.kind == "sequence" and s.options.get("owned_by") is not None:
            mark = s.options.get("identity") or ("a" if s.options.get("always") else None)
            if mark:
                out[s.options["owned_by"]] = mark
    return out


def sequence_depends(state: CatalogState, sequence: Item, oid: int) -> list[tuple[Any, ...]]:
    """pg_depend's row of a sequence a column owns: ``a`` (serial) or ``i`` (identity) on the
    column, as PostgreSQL records it."""
    from changeflow.adapter.system_indexes import relation_oid

    column = sequence.options.get("owned_by")
    table = state.items.get(sequence.depends_on[0]) if sequence.depends_on else None
    names = [c[0] for c in table.columns] if table is not None else []
    if column not in names:
        return []
    kind = "i" if identities(state, table).get(column) else "a"
    return [(1259, oid, 0, 1259, relation_oid(table), names.index(column) + 1, kind)]


def owned_by(sequence: Item, column: str) -> Item:
    """``sequence`` owned by the column renamed ``column``."""
    return replace(sequence, options={**sequence.options, "owned_by": column})


def create_sequence(env: Any, stmt: Statement) -> Result:
    """``CREATE SEQUENCE [IF NOT EXISTS] name [START n]``."""
    create = stmt.ast
    assert isinstance(create, exp.Create)
    name = env.catalog.load().creation_name(ddl.table_name(create.this))
    if env.catalog.load().by_name(name) is not None:
        if create.args.get("exists"):
            return Result("CREATE SEQUENCE")
        raise PlanError(f'relation "{name}" already exists', sqlstate="42P07")
    options = with_clauses(_clauses(create), stmt.text, None, create.args.get("expression"))
    add_sequence(env, name, stmt.text, {"owned_by": None, "sequence": options.to_json()})
    if options.first != 0:  # a sequence never used starts after 0
        item = env.catalog.load().by_name(name)
        _blocks(env.catalog).set(item.id, options.first)
    return Result("CREATE SEQUENCE")


def _clauses(create: exp.Expression) -> exp.SequenceProperties | None:
    """CREATE SEQUENCE's option clauses; 0A000 for those changeflow does not take."""
    props = create.args.get("properties")
    found = props.expressions if props is not None else []
    seq = next((p for p in found if isinstance(p, exp.SequenceProperties)), None)
    known = {"start", "increment", "minvalue", "maxvalue", "cache", "options"}
    if seq is not None and any(seq.args.get(k) for k in set(seq.args) - known):
        raise PlanError("this CREATE SEQUENCE option is not supported", sqlstate="0A000")
    words = {str(o.this).upper() for o in (seq.args.get("options") or [])} if seq else set()
    if words - {"CYCLE", "NO CYCLE", "NO MINVALUE", "NO MAXVALUE", "MINVALUE", "MAXVALUE"}:
        raise PlanError(f"sequence option {sorted(words)[0]} is not supported", sqlstate="0A000")
    return seq


def alter_sequence(env: Any, stmt: Statement) -> Result:
    """``ALTER SEQUENCE [IF EXISTS] name`` with RESTART [WITH n], OWNED BY and CREATE
    SEQUENCE's options: the options change for the next values; RESTART sets the next value."""
    g = stmt.args
    item = env.catalog.load().find(g["name"])
    if item is None or item.kind != "sequence":
        if g.get("ie"):
            return Result("ALTER SEQUENCE")
        raise PlanError(f'relation "{g["name"]}" does not exist', sqlstate="42P01")
    rest, owner = owned_clause(g["rest"])
    restart = None
    m = re.search(r"\bRESTART(?:\s+(?:WITH\s+)?(?P<n>-?\d+))?", rest, re.I)
    if m is not None:
        rest = rest[: m.start()] + rest[m.end() :]
    parsed = parse_sql(f"CREATE SEQUENCE x {rest}") if rest.strip() else None
    clauses = _clauses(parsed) if parsed is not None else None
    as_type = parsed.args.get("expression") if parsed is not None else None
    options = with_clauses(clauses, rest, SequenceOptions.of(item.options), as_type)
    if m is not None:
        restart = restart_value(options, int(m["n"]) if m["n"] else None)

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        now = state.items[item.id]
        now = replace(now, options={**now.options, "sequence": options.to_json()})
        return state.with_item(now if owner is None else set_owned_by(state, now, owner)), None

    env.catalog.change(change)
    if restart is not None:
        _blocks(env.catalog).set(item.id, restart - options.increment)
    else:
        _blocks(env.catalog).forget(item.id)
    return Result("ALTER SEQUENCE")


def sequence_undo(env: Any, name: str) -> Callable[[], None] | None:
    """What puts back the sequence ``name`` as it is now (its options, and the value its next
    one follows) after an ALTER SEQUENCE (None if there is no such sequence)."""
    item = env.catalog.load().find(name)
    if item is None or item.kind != "sequence":
        return None
    kept = item.options.get("sequence")
    last = _blocks(env.catalog).last(item.id)
    if last is None:  # none handed out yet: the next is the start
        last = SequenceOptions.of(item.options).first
    holds.hold(env.catalog, item.id)  # other sessions' nextval waits for the end

    def undo() -> None:
        def change(state: CatalogState) -> tuple[CatalogState, None]:
            now = state.items.get(item.id)
            if now is None:
                return state, None
            return state.with_item(replace(now, options={**now.options, "sequence": kept})), None

        env.catalog.change(change)
        _blocks(env.catalog).set(item.id, last)
        holds.release(env.catalog, item.id)

    return undo


def drop_sequence(env: Any, stmt: Statement) -> Result:
    """``DROP SEQUENCE [IF EXISTS] name, …``; a column's sequence goes with its table."""
    state = env.catalog.load()
    doomed = []
    for n in stmt.args["names"]:
        item = state.find(n)
        if item is None or item.kind != "sequence":
            if stmt.args.get("ie"):
                continue
            raise PlanError(f'sequence "{n}" does not exist', sqlstate="42P01")
        if item.depends_on:
            owner = state.items[item.depends_on[0]]
            raise PlanError(
                f'cannot drop sequence "{n}": the default of column '
                f'"{item.options.get("owned_by")}" of table "{owner.name}" requires it; '
                "drop the table instead",
                sqlstate="2BP01",
            )
        doomed.append(item.id)
    env.catalog.change(lambda s: (s.without(doomed), None))
    return Result("DROP SEQUENCE")


DDL = {
    "create_sequence": create_sequence,
    "alter_sequence": alter_sequence,
    "drop_sequence": drop_sequence,
}
