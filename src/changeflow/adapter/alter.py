"""ALTER TABLE: a column added, dropped or renamed (its type changed: :mod:`.alter_type`).

A table's shard stores its columns by name (the table's *layout*, kept in the catalog item as
the shard's Arrow schema) and its readers take them by position, so the SQL name of a column
and its stored name may differ: a rename changes the catalog only, and an added column whose
name was stored before gets a fresh stored name. The shard's schema changes with the table
(:meth:`~changeflow.storage.shard.Storage.evolve`): an added column reads as NULL in older
batches, a dropped one is no longer read. Existing rows get an added column's DEFAULT by one
write at the change's timestamp that retracts each row as it reads and adds it with the
default (PostgreSQL rewrites the table too).

The shard's schema changes first, then the rows are rewritten, then the catalog item is
replaced in one compare-and-set; a failure in between puts the schema back, and a process
that stopped in between leaves a shard whose schema is not the item's layout, which
:func:`reconcile` puts back when the home is next opened.

Items that read the table keep the columns it had when they were created, as PostgreSQL's
views do. A view's plan is rewritten, in the same catalog change, to read the new layout and
keep its old columns; a rename changes no position, so views, materialized views and indexes
(whose key is renamed) stay as they are. Materialized views and indexes have their plans
rewritten as views do, and their dataflows start again on the new plans (:func:`_restarting`).
DROP COLUMN is refused (2BP01) by the views and materialized views that read the column
(:func:`_demand`), as in PostgreSQL, or drops them (and what depends on them) with CASCADE;
an index keyed on it is dropped with it, and the others get a NULL in its place. A sink
writes stored columns under the names its target has (pinned at CREATE SINK, or by the first
ADD COLUMN for an older one: :func:`_pinned`): a rename leaves them as they are, an added
column is not among them, so its target keeps its shape, and a column it writes cannot be
dropped (2BP01) but with CASCADE, which drops the sink.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

import pyarrow as pa
from sqlglot import exp

from changeflow.adapter import partial_index
from changeflow.adapter.added_column import default_value, with_default, with_generated
from changeflow.adapter.attnums import after_add, after_drop
from changeflow.adapter.catalog import CatalogState, Item
from changeflow.adapter.check_alter import CONSTRAINT_ACTIONS, add_check
from changeflow.adapter.column_defs import table_columns
from changeflow.adapter.constraints import Unique
from changeflow.adapter.ddl import release
from changeflow.adapter.domains import domain_default, values_pass
from changeflow.adapter.environment import EPOCH, Environment
from changeflow.adapter.fk_catalog import (
    add_foreign_key,
    constraint_names,
    drop_referenced,
    fks_without_column,
)
from changeflow.adapter.group_commit import Reads
from changeflow.adapter.resolver import decode_plan, encode_plan, schema_of
from changeflow.adapter.result import Result
from changeflow.adapter.sequences import own, owned_by, owned_sequences
from changeflow.adapter.serial_add import add_serial, discard, numbered
from changeflow.adapter.sql.dialect import parse_sql, sql_text
from changeflow.adapter.sql.generated import (
    added_generated,
    expressions_renamed,
    expressions_without,
)
from changeflow.adapter.sql.statements import Statement, commas
from changeflow.adapter.view_sql import column_renamed
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.optimize import with_inputs
from changeflow.compute.types import numeric_scale
from changeflow.errors import PlanError
from changeflow.storage.state import decode_schema, encode_schema
from changeflow.storage.txns import reader

TAG = "ALTER TABLE"
_CONSTRAINT = re.compile(r"(?:CONSTRAINT|PRIMARY|UNIQUE|CHECK|FOREIGN|EXCLUDE)\b", re.I)


def alter_table(env: Environment, stmt: Statement) -> Result:
    """``ALTER TABLE t ADD|DROP|RENAME COLUMN …``."""
    g = stmt.args
    state = env.catalog.load()
    item = state.find(g["name"])
    if item is None:
        if g.get("ie"):
            return Result(TAG)
        raise PlanError(f'relation "{g["name"]}" does not exist', sqlstate="42P01")
    if item.kind != "table":
        raise PlanError(f'"{g["name"]}" is not a table', sqlstate="42809")
    if g["action"] == "type":
        from changeflow.adapter.alter_type import alter_type

        return alter_type(env, state, item, g)
    if g["action"] == "many":
        from changeflow.adapter.alter_many import alter_many

        return alter_many(env, item, g)
    if g["action"] == "column":
        from changeflow.adapter.alter_column import alter_column

        return alter_column(env, state, item, g)
    if g["action"] in CONSTRAINT_ACTIONS:
        return CONSTRAINT_ACTIONS[g["action"]](env, item, g)
    action = {"add": _add, "drop": _drop, "rename": _rename}[g["action"]]
    return action(env, state, item, g)


def is_constraint(text: str) -> bool:
    """Whether ALTER TABLE … ADD's ``text`` is a table constraint (else a column)."""
    return _CONSTRAINT.match(text.strip()) is not None


def _add(env: Environment, state: CatalogState, item: Item, g: dict[str, Any]) -> Result:
    text = g["column"].strip()
    if is_constraint(text):
        return add_check(env, item, text)
    if len(commas(text)) > 1:
        raise PlanError("ALTER TABLE with several actions is not supported", sqlstate="0A000")
    node = parse_sql(f"CREATE TABLE x ({text})").this.expressions
    if len(node) != 1 or not isinstance(node[0], exp.ColumnDef):
        raise PlanError("syntax error: ADD COLUMN takes a name and a type", sqlstate="42601")
    ident = node[0].this
    name = ident.this if ident.quoted else ident.this.lower()
    if name in (c[0] for c in item.columns):
        if g.get("cie"):
            return Result(TAG)
        raise PlanError(
            f'column "{name}" of relation "{item.name}" already exists', sqlstate="42701"
        )
    serial = add_serial(env, item, node[0])  # a serial column's sequence, made first
    try:
        _add_column(env, state, item, node, serial)
    except BaseException:
        if serial is not None:
            discard(env, serial)
        raise
    if serial is not None:
        own(env, {serial.name}, item.name)
    from changeflow.adapter.key_alter import add_key

    keys = (exp.Reference, exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint)
    if node[0].find(*keys):  # its keys, once the column is there
        now = env.catalog.load().items[item.id]
        try:
            add_key(env, now, node, constraint_names(now))
            if node[0].find(exp.Reference):
                now = env.catalog.load().items[item.id]
                add_foreign_key(env, now, node, constraint_names(now))
        except BaseException:
            _drop(env, env.catalog.load(), now, {"column": name})
            raise
    return Result(TAG)


def _add_column(
    env: Environment,
    state: CatalogState,
    item: Item,
    node: list[exp.Expression],
    serial: Item | None,
) -> None:
    (column,) = table_columns(node)
    views = _readers(state, item, f'add a column to table "{item.name}"', READ_BY_POSITION)
    sinks = _sinks(state, item)
    given = column.default or domain_default(state, column.domain)  # (a domain's for its own)
    value = default_value(replace(column, default=given)) if given and not serial else None
    # existing rows are read only when they get a value, or must be none (NOT NULL)
    filled = value is not None or column.generated is not None
    read = filled or not column.nullable or column.domain is not None
    ts, rows = _contents(env, item) if read else (None, None)
    if column.domain is not None and rows is not None and rows.num_rows:
        values_pass(state, column.domain, [value])  # its DEFAULT (or NULL) for every row
    if not filled and rows is not None and rows.num_rows and serial is None:
        raise PlanError(
            f'column "{column.name}" of relation "{item.name}" contains null values',
            sqlstate="23502",
        )
    old = layout(env, item)
    used = set(old.names) | set(item.options.get("retired") or [])
    stored, n = column.name, 1
    while stored in used:  # a name stored before: older batches hold its values
        stored, n = f"{column.name}_{n}", n + 1
    new = old.append(pa.field(stored, column.arrow, True))
    o = item.options
    options = {
        **o,
        "defaults": [*_per_column(o, "defaults", item), column.default],
        "lengths": [*_per_column(o, "lengths", item), column.length],
        "scales": [*_per_column(o, "scales", item), numeric_scale(column.arrow)],
        "layout": encode_schema(new),
        **after_add(item),
        **added_generated(item, column),
    }
    sql = _edit_sql(item.sql, lambda defs: [*defs, node[0]])
    columns = (*item.columns, (column.name, column.type_name, column.nullable))
    changed = replace(item, columns=columns, options=options, sql=sql)
    rewrite = with_default(rows, new, value, column.length, item.name) if rows else None
    if column.generated is not None and rows is not None:  # each row its own value
        rewrite = with_generated(rows, new, changed, column.length)
    if serial is not None and rows is not None:  # each row its own value
        rewrite = numbered(env, serial, rows, new, item.name)
    read = P.Project(P.Get(item.id, schema_of(changed)), tuple(range(len(item.columns))))
    others = [(v, _reget(v, item.id, read)) for v in views]
    others += [(k, _pinned(k, old)) for k in sinks]
    with _restarting(env, item, [*views, *sinks]):
        _change(env, item, changed, old, new, ts, rewrite, others, {v.id for v in [*views, *sinks]})


def _drop(env: Environment, state: CatalogState, item: Item, g: dict[str, Any]) -> Result:
    names = [c[0] for c in item.columns]
    if g["column"] not in names:
        if g.get("cie"):
            return Result(TAG)
        raise PlanError(
            f'column "{g["column"]}" of relation "{item.name}" does not exist', sqlstate="42703"
        )
    if len(names) == 1:
        raise PlanError(
            f'cannot drop column "{g["column"]}": a table needs at least one column',
            sqlstate="0A000",
        )
    i = names.index(g["column"])
    unreferenced = drop_referenced(state, item, i, bool(g.get("cascade")))
    old = layout(env, item)
    views = _plan_readers(state, item.id)
    needing = [v for v in views if _needs(v, item.id, g["column"], i)]
    # an index keyed on the column goes with it, as in PostgreSQL; a view or sink refuses,
    # or goes too (with what depends on it) under CASCADE
    doomed = {v.id: v for v in needing if v.kind == "index" and v.options.get("on") == item.id}
    doomed |= {s.id: s for s in owned_sequences(state, item, g["column"])}  # as in PostgreSQL
    sinks = _sinks(state, item)
    writing = [k for k in sinks if old.names[i] in _written(k, old)]
    for d in writing + [v for v in needing if v.id not in doomed]:
        if not g.get("cascade"):
            raise PlanError(
                f"cannot drop column {g['column']} of table {item.name} because other objects "
                f"depend on it ({d.kind} {d.name} reads it); drop it first, or use DROP "
                "COLUMN … CASCADE to drop them too",
                sqlstate="2BP01",
            )
        doomed.update({c.id: c for c in state.closure(d.id)})
    new = old.remove(i)
    o = item.options
    unique = []
    for u in (Unique.from_json(u) for u in o.get("unique") or []):
        if i not in u.columns:  # a key of the column goes with it, as in PostgreSQL
            unique.append(Unique(u.name, tuple(c - (c > i) for c in u.columns), u.primary))
    options = {
        **o,
        **{k: _without(_per_column(o, k, item), i) for k in PER_COLUMN},
        "unique": [u.to_json() for u in unique],
        **expressions_without(item, g["column"], i),
        "foreign_keys": fks_without_column(item, i),
        "layout": encode_schema(new),
        "retired": [*(o.get("retired") or []), old.names[i]],
        **after_drop(item, i),
    }
    sql = _edit_sql(item.sql, lambda defs: _drop_def(defs, g["column"]))
    changed = replace(item, columns=_without(list(item.columns), i), options=options, sql=sql)
    # the views read the column no more: a NULL in its place keeps their plans' positions
    gone = schema_of(item)[i]
    nulls = P.Map(P.Get(item.id, schema_of(changed)), ((gone.name, X.Lit(None, gone.type)),))
    width = len(changed.columns)
    read = P.Project(nulls, (*range(i), width, *range(i, width)))
    others: list[tuple[Item, Item | None]] = [
        (v, None if v.id in doomed else _reget(v, item.id, read)) for v in views
    ]
    others += [(d, None) for d in doomed.values() if d not in views]
    others += unreferenced  # other tables' foreign keys of the column, under CASCADE
    with _restarting(env, item, [*views, *sinks]):
        _change(env, item, changed, old, new, None, None, others, {v.id for v in [*views, *sinks]})
    release(env, list(doomed.values()))
    return Result(TAG)


def _rename(env: Environment, state: CatalogState, item: Item, g: dict[str, Any]) -> Result:
    names = [c[0] for c in item.columns]
    old_name, new_name = g["column"], g["new"]
    if old_name not in names:
        raise PlanError(f'column "{old_name}" does not exist', sqlstate="42703")
    if new_name in names:
        raise PlanError(
            f'column "{new_name}" of relation "{item.name}" already exists', sqlstate="42701"
        )
    if new_name.startswith("_"):
        raise PlanError(f'column name "{new_name}" may not start with "_"', sqlstate="42939")
    _readers(state, item, f'rename a column of table "{item.name}"', READ_BY_POSITION)
    i = names.index(old_name)
    schema = layout(env, item)
    columns = list(item.columns)
    columns[i] = (new_name, *columns[i][1:])

    def renamed(defs: list[exp.Expression]) -> list[exp.Expression]:
        for ident in (n for d in defs for n in d.find_all(exp.Identifier)):
            if ident.name == old_name:
                ident.set("this", new_name)
        return defs

    options = {**item.options, "layout": encode_schema(schema)}
    options |= expressions_renamed(item, old_name, new_name)
    sql = _edit_sql(item.sql, renamed)
    changed = replace(item, columns=tuple(columns), options=options, sql=sql)
    indexes = [
        d for d in state.items.values() if d.kind == "index" and d.options.get("on") == item.id
    ]
    others = []
    for index in indexes:  # an index keeps its table's columns and names its key by them
        options = partial_index.renamed(index.options, old_name, new_name)
        others.append((index, replace(index, columns=changed.columns, options=options)))
    others += column_renamed(state, item, old_name, new_name)
    others += [(s, owned_by(s, new_name)) for s in owned_sequences(state, item, old_name)]
    _change(env, item, changed, schema, schema, None, None, others)
    return Result(TAG)


def layout(env: Environment, item: Item) -> pa.Schema:
    """The schema a table's shard stores its columns in (one field per column, in order)."""
    if "layout" in item.options:
        return decode_schema(item.options["layout"])
    return env.storage.state(item.id).schema


def reconcile(env: Environment) -> None:
    """Put back the schema of each table's shard that a process stopped while changing left
    different from its catalog item's layout."""
    for item in env.catalog.load().items.values():
        if item.kind == "table" and "layout" in item.options:
            want = decode_schema(item.options["layout"])
            if env.storage.state(item.id).schema != want:
                env.storage.evolve(item.id, want)


# a rename leaves their plans right, and a sink writes the columns' stored names
READ_BY_POSITION = ("view", "materialized view", "index", "sink")


def _plan_readers(state: CatalogState, shard: str) -> list[Item]:
    """The items whose plans read ``shard`` (views over views too: a view's plan is inlined)."""
    return [
        i
        for i in state.items.values()
        if "plan" in i.options and shard in decode_plan(i.options["plan"]).collections()
    ]


def _readers(state: CatalogState, item: Item, what: str, allowed: tuple[str, ...]) -> list[Item]:
    """The items whose plans read the table; 0A000 if one (or a sink of it) is not of the
    ``allowed`` kinds."""
    found = _plan_readers(state, item.id)
    for d in [i for i in [*_sinks(state, item), *found] if i.kind not in allowed]:
        raise PlanError(
            f'cannot {what}: {d.kind} "{d.name}" reads its columns as they are; drop it '
            "first and create it again after",
            sqlstate="0A000",
        )
    return found


def _sinks(state: CatalogState, item: Item) -> list[Item]:
    """The sinks that write the table's rows to their targets."""
    return [d for d in state.dependents(item.id) if d.kind == "sink"]


def _pinned(sink: Item, layout: pa.Schema) -> Item:
    """``sink`` writing the stored columns it writes now (as named in its target: all of
    ``layout`` unless pinned before), whatever the table gains: its target keeps its shape."""
    if "columns" in sink.options:
        return sink
    return replace(sink, options={**sink.options, "columns": [[n, n] for n in layout.names]})


def _written(sink: Item, layout: pa.Schema) -> list[str]:
    """The stored columns ``sink`` writes."""
    return [s for s, _ in sink.options["columns"]] if "columns" in sink.options else layout.names


def _needs(reader: Item, shard: str, column: str, i: int) -> bool:
    """Whether ``reader`` depends on column ``i`` (named ``column``) of ``shard``: an index on
    the table by its key, a view or materialized view if its rows read it."""
    if reader.kind == "index" and reader.options.get("on") == shard:
        return column in reader.options["key"] or partial_index.reads(reader.options, column)
    return i in _reads(reader, shard)


def readers_of(state: CatalogState, item: Item) -> tuple[list[Item], list[Item]]:
    """The table's own indexes arranged in the process (built again from its rows when its
    columns change), and the other items that read it (views, sinks, cluster-tier indexes)."""
    readers = [*_plan_readers(state, item.id), *_sinks(state, item)]
    own = [r for r in readers if r.kind == "index" and r.options.get("on") == item.id]
    own = [r for r in own if r.options.get("tier") != "cluster"]
    return own, [r for r in readers if r not in own]


def change_rebuilding(
    env: Environment, item: Item, changed: Item, indexes: list[Item], *change: Any
) -> None:
    """:func:`_change` (``change``: its layouts, timestamp and rewrite), the table's own
    ``indexes`` then reading its new columns, restarted."""
    read = P.Get(item.id, schema_of(changed))
    others = [(ix, _reget(ix, item.id, read)) for ix in indexes]
    with _restarting(env, item, indexes):
        _change(env, item, changed, *change, others, {ix.id for ix in indexes})


@contextmanager
def _restarting(env: Environment, table: Item, readers: list[Item]) -> Iterator[None]:
    """Hold the dataflows of the materialized views and indexes among ``readers``, its sinks
    (and the host's arrangements of ``table``) still while the table changes; they start
    again from the catalog's items, reading the table's new columns."""
    ids = sorted(r.id for r in readers if r.kind in ("materialized view", "index", "sink"))
    with ExitStack() as stack:
        for i in ids:
            stack.enter_context(env.item_lock(i))
        try:
            yield
        finally:
            with env._hosting:  # closed before a reader or the host can start them again
                for flow in [env.dataflows.pop(i, None) for i in ids]:
                    if flow is not None:
                        flow.close()
                for key in [k for k in list(env.arrangements) if k[0] == table.id]:
                    env.arrangements.pop(key, None)


def _reads(view: Item, shard: str) -> set[int]:
    """The columns of ``shard`` that ``view``'s rows depend on (more where unsure)."""
    plan, out = decode_plan(view.options["plan"]), set()
    _demand(plan, set(range(len(plan.schema))), shard, out)
    return out


def _demand(plan: P.Plan, needed: set[int], shard: str, out: set[int]) -> None:
    """Add to ``out`` the columns of ``shard`` that the ``needed`` columns of ``plan`` read:
    exactly through reads, projections, maps, filters, joins, unions and reduces; every column
    of its inputs for any other node (a distinct, a top-k… reads whole rows)."""
    if isinstance(plan, P.Get):
        out |= needed if plan.name == shard else set()
    elif isinstance(plan, P.Project):
        _demand(plan.input, {plan.columns[i] for i in needed}, shard, out)
    elif isinstance(plan, P.Map):
        width, inner = len(plan.input.schema), set(needed)
        for k, (_, e) in enumerate(plan.exprs):
            if width + k in needed:
                inner |= e.columns()
        _demand(plan.input, {i for i in inner if i < width}, shard, out)
    elif isinstance(plan, P.Filter):
        _demand(plan.input, needed.union(*(p.columns() for p in plan.predicates)), shard, out)
    elif isinstance(plan, P.Reduce):  # a group's rows count whatever their other columns
        args = [a.arg.columns() for a in plan.aggregates if a.arg is not None]
        _demand(plan.input, set(plan.group_by).union(*args), shard, out)
    elif isinstance(plan, P.Union):
        for p in plan.inputs_:
            _demand(p, needed, shard, out)
    elif isinstance(plan, P.Join):
        wanted = needed.union(*plan.equivalences)
        wanted |= plan.residual.columns() if plan.residual is not None else set()
        start = 0
        for p in plan.inputs_:
            width = len(p.schema)
            _demand(p, {i - start for i in wanted if start <= i < start + width}, shard, out)
            start += width
    else:
        for p in plan.inputs():
            _demand(p, set(range(len(p.schema))), shard, out)


def _reget(view: Item, shard: str, read: P.Plan) -> Item:
    """``view`` with its plan reading ``shard`` by ``read`` (the columns it read before)."""

    def swap(plan: P.Plan) -> P.Plan:
        if isinstance(plan, P.Get) and plan.name == shard:
            return read
        return with_inputs(plan, tuple(swap(p) for p in plan.inputs()))

    plan = swap(decode_plan(view.options["plan"]))
    return replace(view, options={**view.options, "plan": encode_plan(plan)})


def _contents(env: Environment, item: Item) -> tuple[int, pa.Table]:
    """A timestamp and the table's consolidated contents there (as stored, with their counts),
    every earlier write applied."""
    ts = env.read_ts(EPOCH, {item.id})
    env.log.ready({item.id}, ts)
    return ts, reader(env.storage, item.id).snapshot_table(ts)


def _change(
    env: Environment,
    item: Item,
    changed: Item,
    old: pa.Schema,
    new: pa.Schema,
    ts: int | None,
    rewrite: pa.Table | None,
    others: list[tuple[Item, Item | None]] | None = None,
    readers: set[str] | None = None,
) -> None:
    """The shard's schema from ``old`` to ``new``, ``rewrite`` written (failing with 40001 if
    the table was written after ``ts``), then ``item`` replaced by ``changed`` and each of
    ``others`` (before, after) by its new version (removed for None), in one change of the
    catalog that fails (40001) if one of them changed meanwhile, or if the items reading the
    table (sinks too) are no longer ``readers``."""
    pairs: list[tuple[Item, Item | None]] = [(item, changed), *(others or [])]
    if new != old:
        env.storage.evolve(item.id, new)
    try:
        if rewrite is not None:
            shards = frozenset({item.id})
            env.committer.commit({item.id: rewrite}, Reads(ts, shards, _moved, _same))  # type: ignore[arg-type]

        def swap(state: CatalogState) -> tuple[CatalogState, None]:
            moved = any(state.items.get(b.id) != b for b, _ in pairs)
            now = {i.id for i in [*_plan_readers(state, item.id), *_sinks(state, item)]}
            if moved or (readers is not None and now != readers):
                raise PlanError(
                    f'table "{item.name}" was changed by another session; try again',
                    sqlstate="40001",
                )
            for before, after in pairs:
                state = state.without([before.id])
                state = state if after is None else state.with_item(after)
            return state, None

        env.catalog.change(swap)
    except BaseException:
        if new != old:
            env.storage.evolve(item.id, old)
        raise


def _moved(upper: int, moved: set[str]) -> bool:
    return False  # any write after the rewrite's read is a conflict


def _same(written: dict[str, pa.Table]) -> bool:
    return True


# a table's options that hold one entry per column (a dropped column's goes with it)
PER_COLUMN = ("defaults", "lengths", "scales", "comments")


def _per_column(options: dict[str, Any], key: str, item: Item) -> list[Any]:
    return list(options.get(key) or [None] * len(item.columns))


def _without(values: list[Any], i: int) -> Any:
    out = values[:i] + values[i + 1 :]
    return tuple(out) if isinstance(values, tuple) else out


def _drop_def(defs: list[exp.Expression], column: str) -> list[exp.Expression]:
    """The definitions without ``column``'s and without the table constraints naming it."""
    out = []
    for d in defs:
        if isinstance(d, exp.ColumnDef):
            if d.name != column:
                out.append(d)
        elif not any(i.name == column for i in d.find_all(exp.Identifier)):
            out.append(d)
    return out


def _edit_sql(sql: str, edit: Any) -> str:
    """A table's CREATE TABLE text with its definitions changed by ``edit``."""
    create = parse_sql(sql)
    schema = create.this
    if isinstance(schema, exp.Schema):
        schema.set("expressions", edit(list(schema.expressions)))
    return sql_text(create)
