"""DDL: items created, dropped and renamed, and the SHOW statements that list them.

Creating an item that holds data takes three steps, each durable on its own: a GlobalId is
allocated in the catalog (never handed out again), the item's shard is created (and a view's
dataflow installed, or a source's files ingested once, so that a bad definition fails here),
then the item is added to the catalog in one compare-and-set. A process killed before the last
step leaves the catalog as it was (and an unnamed shard); a failure in any step removes what
the earlier ones made. Dropping removes the items from the catalog first, then stops their
dataflows and sinks and releases their shards (a transaction's DROP: at its COMMIT)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from sqlglot import exp

from changeflow.adapter import partial_index
from changeflow.adapter.catalog import PUBLIC, CatalogState, Item, already_exists, split_name
from changeflow.adapter.checks import table_checks
from changeflow.adapter.column_defs import ColumnDef, table_columns
from changeflow.adapter.constraints import table_constraints
from changeflow.adapter.environment import EPOCH, Environment
from changeflow.adapter.fk_catalog import unreferenced, with_foreign_keys
from changeflow.adapter.object_ids import held_as_oids, read_ids, regclass_names, shown_ids
from changeflow.adapter.privilege_checks import require_reads
from changeflow.adapter.resolver import (
    CatalogResolver,
    columns_of,
    decode_plan,
    encode_plan,
    scales_of,
    schema_of,
)
from changeflow.adapter.result import Result, text_result
from changeflow.adapter.sources import ingest_source
from changeflow.adapter.sql.colnames import renamed
from changeflow.adapter.sql.dialect import parse_sql
from changeflow.adapter.sql.dml import default_plan
from changeflow.adapter.sql.generated import generated_columns
from changeflow.adapter.sql.maintainable import refuse_unmaintainable
from changeflow.adapter.sql.query import plan_query, view_plan
from changeflow.adapter.sql.scope import table_name
from changeflow.adapter.sql.statements import QNAME, Statement
from changeflow.adapter.sql_functions import functions_called, inline_calls
from changeflow.adapter.table_like import table_definitions
from changeflow.adapter.timelines import Timeline, check_single
from changeflow.adapter.typmods import stored_mods
from changeflow.adapter.unique_index import confirm, unique_index, unique_name
from changeflow.adapter.view_replace import replace_view, replaced_view, same_columns
from changeflow.adapter.view_sql import relation_renamed
from changeflow.compute import plan as P
from changeflow.compute.dataflow import drop_view
from changeflow.compute.functions.chars import quote_ident
from changeflow.compute.types import Column, numeric_scale
from changeflow.errors import ChangeflowError, PlanError, with_context
from changeflow.failpoints import failpoint
from changeflow.redact import redact
from changeflow.storage.ingest import forget_retired
from changeflow.storage.txns import WRITER

TAGS = {
    "table": "TABLE",
    "source": "SOURCE",
    "view": "VIEW",
    "materialized view": "MATERIALIZED VIEW",
    "index": "INDEX",
    "sink": "SINK",
}


def _timeline(query: Any, what: str) -> str:
    check_single(query.timelines, what)
    return next(iter(query.timelines), EPOCH)


def _depends(state: CatalogState, names: frozenset[str]) -> tuple[str, ...]:
    """The ids of the items named ``names``."""
    return tuple(sorted(item.id for n in names if (item := state.by_name(n)) is not None))


def _exists(env: Environment, name: str, if_not_exists: bool) -> Result | None:
    item = env.catalog.load().by_name(name)
    if item is None:
        return None
    if if_not_exists:
        return Result(f"CREATE {TAGS[item.kind]}")
    raise already_exists(item.kind, name)


def _created(env: Environment, stmt: Statement) -> dict[str, Any]:
    """The statement's arguments, its item's name in the schema it is created in."""
    return {**stmt.args, "name": env.catalog.load().creation_name(stmt.args["name"])}


def _allocate(env: Environment) -> str:
    return env.catalog.change(lambda s: tuple(reversed(s.allocate())))  # type: ignore[arg-type]


def _add(env: Environment, item: Item) -> None:
    env.catalog.change(lambda s: (s.with_item(item), None))


def _create_shard(
    env: Environment, item_id: str, columns: list[tuple[str, Any, bool]], timeline: str
) -> None:
    import pyarrow as pa

    schema = pa.schema([pa.field(n, a, nullable) for n, a, nullable in columns])
    read, write = env.storage.create(item_id, schema, timeline, writer=WRITER)
    try:  # all or nothing: a shard without its reader is dropped again
        env.storage.register_reader(item_id, WRITER, "the adapter reads it for queries")
        env.storage.drop(read)
    except BaseException:
        env.storage.drop_shard(item_id, force=True)
        raise


def _undo(env: Environment, item_id: str) -> None:
    """Remove what a failed CREATE made: its dataflow and holds, and its shard."""
    env.stop_hosting([item_id])
    if item_id in env.storage.catalog().entries:
        env.storage.drop_shard(item_id, force=True)


# -- CREATE ----------------------------------------------------------------------------------


def _columns(columns: list[ColumnDef]) -> tuple[tuple[str, str, bool], ...]:
    return tuple((c.name, c.type_name, c.nullable) for c in columns)


def _arrow(columns: list[ColumnDef]) -> list[tuple[str, Any, bool]]:
    return [(c.name, c.arrow, c.nullable) for c in columns]


def create_table(env: Environment, stmt: Statement) -> Result:
    create = stmt.ast
    assert isinstance(create, exp.Create)
    name = table_name(create.this.this if isinstance(create.this, exp.Schema) else create.this)
    name = env.catalog.load().creation_name(name)
    if (done := _exists(env, name, bool(create.args.get("exists")))) is not None:
        return done
    defs, text = table_definitions(env, stmt)
    columns = table_columns(defs)
    unique = table_constraints(name, defs, [c.name for c in columns])
    keyed = {i for u in unique if u.primary for i in u.columns}  # a primary key is NOT NULL
    columns = [replace(c, nullable=False) if i in keyed else c for i, c in enumerate(columns)]
    for c in columns:  # a DEFAULT the column cannot take is refused now, as PostgreSQL does
        if c.default is not None:
            target = Column(c.name, c.kind, c.nullable, numeric_scale(c.arrow))
            default_plan(target, c.default)
    schema = tuple(Column(c.name, c.kind, c.nullable, numeric_scale(c.arrow)) for c in columns)
    checks = table_checks(name, defs, schema, {u.name for u in unique})
    generated = generated_columns(columns, schema, name)
    item_id = _allocate(env)
    _create_shard(env, item_id, _arrow(columns), EPOCH)
    options = {
        "defaults": [c.default for c in columns],
        "lengths": [c.length for c in columns],
        "scales": [numeric_scale(c.arrow) for c in columns],
        "unique": [u.to_json() for u in unique],
        "checks": [c.to_json() for c in checks],
        **generated,
    }
    item = Item(item_id, name, "table", text, _columns(columns), EPOCH, (), item_id, options)
    item = with_foreign_keys(env, item, defs, {u.name for u in unique} | {c.name for c in checks})
    _finish(env, item)
    return Result("CREATE TABLE")


def _finish(env: Environment, item: Item) -> None:
    """Add ``item`` to the catalog; if that fails (its name was taken meanwhile), undo."""
    failpoint("ddl.before_catalog")
    try:
        _add(env, item)
    except BaseException:
        _undo(env, item.id)
        raise


def create_view(env: Environment, stmt: Statement) -> Result:
    g = _created(env, stmt)
    materialized = g["materialized"]
    tag = "CREATE MATERIALIZED VIEW" if materialized else "CREATE VIEW"
    if g.get("as_of"):
        raise PlanError("a view cannot be defined AS OF a time", sqlstate="0A000")
    old = replaced_view(env.catalog.load(), g) if g.get("replace") else None
    if stmt.ast is not None:
        refuse_unmaintainable(inline_calls(stmt.ast.copy()))  # its functions' bodies too
    if old is None and (done := _exists(env, g["name"], bool(g.get("ine")))) is not None:
        return done
    state = env.catalog.load()
    shown = shown_ids(stmt.ast) + read_ids(stmt.ast, state)  # before planning folds
    oids = {i: kind for i, kind in shown if kind == "oid"} | held_as_oids(stmt.ast)
    named = regclass_names(stmt.ast) | functions_called(stmt.ast, state)  # by 'x'::regclass
    query = plan_query(stmt.ast, CatalogResolver(state), temporal_and_only=True)
    require_reads(state, query.items)  # the view reads them as its owner, who needs SELECT
    timeline = _timeline(query, f'{"materialized " if materialized else ""}view "{g["name"]}"')
    plan = renamed(view_plan(query), g.get("columns"), materialized)
    if materialized and not plan.schema:
        raise PlanError("a materialized view needs at least one column", sqlstate="0A000")
    depends = _depends(state, query.items | named)
    kind = "materialized view" if materialized else "view"
    setting = _cluster_setting(g.get("with") or {}, materialized)
    if old is not None:  # the same view (its OID too), defined anew
        same_columns(old, columns_of(plan.schema, oids))
    item_id = old.id if old is not None else _allocate(env)
    options = {
        "plan": encode_plan(plan),
        "scales": scales_of(plan.schema),
    } | stored_mods(plan.schema)
    if materialized:
        options["tier"] = env.choose_tier(plan, setting)
    item = Item(
        item_id,
        g["name"],
        kind,
        stmt.text,
        columns_of(plan.schema, oids),
        timeline,
        depends,
        item_id if materialized else None,
        options,
    )
    if materialized:
        _install(env, item, plan)
    if old is not None:
        env.catalog.change(lambda s: replace_view(s, g, item))
        return Result(tag)
    _finish(env, item)
    return Result(tag)


def _cluster_setting(options: dict[str, str], materialized: bool) -> bool | None:
    """The view's ``WITH (CLUSTER = true|false)``: None leaves the tier to the inputs' size."""
    unknown = sorted(set(options) - {"cluster"})
    if unknown:
        raise PlanError(
            f"unknown view option {unknown[0].upper()}; a materialized view takes "
            "WITH (CLUSTER = true | false)",
            sqlstate="42601",
        )
    if "cluster" not in options:
        return None
    if not materialized:
        raise PlanError(
            "CLUSTER applies to materialized views: a view keeps no state", sqlstate="42601"
        )
    value = options["cluster"].strip().lower()
    if value not in ("true", "false", "on", "off"):
        raise PlanError(
            f"CLUSTER takes true or false, not {options['cluster']!r}", sqlstate="22023"
        )
    return value in ("true", "on")


def _install(env: Environment, item: Item, plan: P.Plan) -> None:
    """Create the output shard and start the dataflow of a materialized view or index."""
    try:
        env.start_dataflow(item, plan)
        env.storage.register_reader(item.id, WRITER, "the adapter reads it for queries")
    except BaseException:
        _undo(env, item.id)
        raise


def create_index(env: Environment, stmt: Statement) -> Result:
    g = stmt.args
    state = env.catalog.load()
    on = state.get(g["item"])
    if on.kind not in ("view", "materialized view", "table", "source"):
        raise PlanError(f'cannot create an index on {on.kind} "{on.name}"', sqlstate="42809")
    from changeflow.adapter.sql.statements import name as ident

    key = g.get("key") or [c[0] for c in on.columns]
    unknown = [k for k in key if ident(k) not in {c[0] for c in on.columns}]
    if unknown:
        raise PlanError(f'column "{unknown[0]}" does not exist', sqlstate="42703")
    keyed = g.get("key") or g.get("unique")  # PostgreSQL's name; without a key Materialize's
    unnamed = unique_name(on, [ident(k) for k in key], state) if keyed else f"{on.name}_primary_idx"
    name = (g.get("name") or "").strip() or unnamed
    name = _in_schema_of(ident(name), on.name)  # an index is in its table's schema
    if (done := _exists(env, name, bool(g.get("ine")))) is not None:
        return done
    where = partial_index.predicate(g.get("tail"), schema_of(on), on.name)
    unique = g.get("unique") and unique_index(env, on, name, [ident(k) for k in key], where)
    plan = CatalogResolver(state).plan(on)
    item_id = _allocate(env)
    item = Item(
        item_id,
        name,
        "index",
        stmt.text,
        on.columns,
        on.timeline,
        (on.id,),
        item_id,
        {
            "plan": encode_plan(plan),
            "on": on.id,
            "key": [ident(k) for k in key],
            # an index of a stored item copies it: Spark's bulk hydration buys nothing there
            "tier": "process" if isinstance(plan, P.Get) else env.choose_tier(plan, None),
            "scales": on.options.get("scales"),
        }
        | stored_mods(schema_of(on))
        | ({"unique": unique} if unique else {})
        | ({"where": where} if where else {}),
    )
    _install(env, item, plan)
    _finish(env, item)
    if unique:
        confirm(env, item)
    return Result("CREATE INDEX")


def create_source(env: Environment, stmt: Statement) -> Result:
    g = _created(env, stmt)
    if (done := _exists(env, g["name"], bool(g.get("ine")))) is not None:
        return done
    fmt = g["format"].lower()
    formats = {"json": "jsonl", "jsonl": "jsonl", "avro": "avro", "parquet": "parquet"}
    if fmt not in formats:
        raise PlanError(
            f"unknown FORMAT {g['format']}; use JSON, AVRO or PARQUET", sqlstate="42601"
        )
    if not g.get("columns"):
        raise PlanError(
            f'source "{g["name"]}" needs its columns: CREATE SOURCE {g["name"]} FROM CDC '
            f"'{g['path']}' FORMAT {g['format'].upper()} (name type, …)",
            sqlstate="42601",
        )
    defs = parse_sql(f"CREATE TABLE x ({g['columns']})")
    columns = table_columns(defs.this.expressions)
    timeline = source_timeline(g["name"], g["with"])
    item_id = _allocate(env)
    _create_shard(env, item_id, _arrow(columns), timeline)
    options = {
        "path": g["path"],
        "format": formats[fmt],
        "scales": [numeric_scale(c.arrow) for c in columns],
    }
    item = Item(
        item_id, g["name"], "source", stmt.text, _columns(columns), timeline, (), item_id, options
    )
    try:
        ingest_source(env, item, force=True)
    except ChangeflowError as e:
        _undo(env, item_id)
        raise with_context(e, f'source "{g["name"]}"') from None
    except BaseException:
        _undo(env, item_id)
        raise
    _finish(env, item)
    return Result("CREATE SOURCE")


def source_timeline(name: str, options: dict[str, str]) -> str:
    """A CDC source's timeline: its own (External), a named one (User), or wall-clock time."""
    known = {"timeline", "epoch_ms_timeline"}
    unknown = sorted(options.keys() - known)
    if unknown:
        raise PlanError(
            f"unknown source option {unknown[0].upper()}; the options are "
            "TIMELINE and EPOCH_MS_TIMELINE",
            sqlstate="42601",
        )
    if "timeline" in options and options.get("epoch_ms_timeline", "false").lower() == "true":
        raise PlanError("TIMELINE and EPOCH_MS_TIMELINE cannot both be given", sqlstate="42601")
    if "timeline" in options:
        return str(Timeline.user(options["timeline"]))
    if options.get("epoch_ms_timeline", "false").lower() == "true":
        return EPOCH
    return str(Timeline.external(name))


def create_sink(env: Environment, stmt: Statement) -> Result:
    from changeflow.adapter.sinks import check_sink, run_sink

    g = _created(env, stmt)
    if (done := _exists(env, g["name"], bool(g.get("ine")))) is not None:
        return done
    state = env.catalog.load()
    source = state.get(g["item"])
    require_reads(state, {source.name})  # (SELECT on what it writes out)
    if source.shard is None:
        raise PlanError(
            f'cannot sink {source.kind} "{source.name}": it holds no data; sink a table, '
            "source or materialized view",
            sqlstate="42809",
        )
    options = check_sink(env, g["name"], source, g["target"], g["key"], g["with"])
    item_id = _allocate(env)
    item = Item(
        item_id, g["name"], "sink", stmt.text, (), source.timeline, (source.id,), None, options
    )
    try:  # all or nothing: the hold and checkpoint go if the catalog does not take the sink
        run_sink(env, item, first=True)
        _finish(env, item)
    except BaseException:
        from changeflow.adapter.sinks import forget_sink

        forget_sink(env, item)
        raise
    return Result("CREATE SINK")


# -- DROP and ALTER --------------------------------------------------------------------------


def _not_found(kind: str, name: str, item: Item | None) -> PlanError:
    """PostgreSQL's error for a DROP of a name with no item of that kind."""
    if item is None:
        code = "42704" if kind == "index" else "42P01"
        return PlanError(f'{kind} "{name}" does not exist', sqlstate=code)
    return PlanError(
        f'"{name}" is not a{"n" if kind == "index" else ""} {kind}',
        sqlstate="42809",
        hint=f"Use DROP {item.kind.upper()} to remove a{'n' if item.kind == 'index' else ''} "
        f"{item.kind}.",
    )


def drop(env: Environment, stmt: Statement, keep: list[Item] | None = None) -> Result:
    """DROP: its items out of the catalog and released, or set aside in ``keep``."""
    g, kind, cascade = stmt.args, stmt.args["kind"], stmt.args["cascade"]

    def remove(state: CatalogState) -> tuple[CatalogState, list[Item]]:
        doomed: dict[str, Item] = {}
        for n in g["names"]:
            item = state.find(n)
            if item is None or item.kind != kind:
                if g.get("ie"):
                    continue
                raise _not_found(kind, split_name(n)[1], item)
            state = unreferenced(state, item, cascade, g["names"])
            closure = state.closure(item.id)
            others = [
                d
                for d in state.dependents(item.id)
                if d.id not in doomed and not _own_index(d, item)
            ]
            if others and not cascade:
                raise PlanError(
                    f'cannot drop {kind} "{n}": still depended upon by {others[0].kind} '
                    f'"{others[0].name}"; use DROP … CASCADE to drop them too',
                    sqlstate="2BP01",
                )
            doomed.update({d.id: d for d in closure})
        out = state.without if keep is None else state.hiding  # (a transaction's, until COMMIT)
        return out(list(doomed)), list(doomed.values())

    gone = env.catalog.change(remove)
    if keep is None:
        release(env, gone)
    else:
        keep.extend(gone)
    return Result(f"DROP {TAGS[kind]}")


def _own_index(dependent: Item, item: Item) -> bool:
    """Is ``dependent`` an index or sequence of ``item`` alone (dropped with it, as PostgreSQL)?"""
    return dependent.kind in ("index", "sequence") and tuple(dependent.depends_on) == (item.id,)


def release(env: Environment, items: list[Item]) -> None:
    """Stop and release what dropped items held: dataflows, sinks and shards."""
    from changeflow.adapter.sinks import forget_sink

    env.stop_hosting([i.id for i in items])
    for item in items:
        if item.kind in ("materialized view", "index"):
            drop_view(env.storage, item.id, decode_plan(item.options["plan"]))
        if item.kind == "sink":
            forget_sink(env, item)
        if item.kind == "source":
            forget_retired(env.storage, item.id)
    for item in items:
        if item.shard is not None and item.shard in env.storage.catalog().entries:
            env.storage.drop_shard(item.shard, force=True)


_HEAD = re.compile(
    r"^(CREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+|DEFAULT\s+)?"
    rf"(?:TABLE|VIEW|SOURCE|INDEX|SINK)\s+(?:IF\s+NOT\s+EXISTS\s+)?){QNAME}",
    re.IGNORECASE,
)


def quote_name(name: str) -> str:
    """A catalog name as SQL writes it: ``t``, or ``s.t`` for schema ``s``."""
    schema, rel = split_name(name)
    return quote_ident(rel) if schema == PUBLIC else f"{quote_ident(schema)}.{quote_ident(rel)}"


def _in_schema_of(name: str, other: str) -> str:
    """``name``, put in ``other``'s schema unless it names one."""
    schema = split_name(other)[0]
    return name if "." in name or schema == PUBLIC else f"{schema}.{name}"


def rename(env: Environment, stmt: Statement) -> Result:
    g = stmt.args

    def change(state: CatalogState) -> tuple[CatalogState, None]:
        item = state.find(g["name"])
        if item is None or item.kind != g["kind"]:
            raise PlanError(f'unknown {g["kind"]} "{g["name"]}"', sqlstate="42P01")
        new = _in_schema_of(g["new"], item.name)
        sql = _HEAD.sub(lambda m: m.group(1) + quote_name(new), item.sql, count=1)
        for before, after in relation_renamed(state, item, new):  # views show the new name
            state = state.without([before.id]).with_item(after)
        return state.without([item.id]).with_item(replace(item, name=new, sql=sql)), None

    env.catalog.change(change)
    return Result(f"ALTER {TAGS[g['kind']]}")


# -- SHOW ------------------------------------------------------------------------------------


def show_items(env: Environment, stmt: Statement) -> Result:
    kind = stmt.args["kind"]
    state = env.catalog.load()
    items = sorted((i for i in state.visible() if i.kind == kind), key=lambda i: i.name)
    if kind == "index":
        rows = [
            (i.name, state.items[i.options["on"]].name, ", ".join(i.options["key"])) for i in items
        ]
        return text_result(f"SELECT {len(rows)}", ["name", "on", "key"], rows)
    if kind == "sink":
        rows = [
            (i.name, state.items[i.depends_on[0]].name, redact(i.options["target"])) for i in items
        ]
        return text_result(f"SELECT {len(rows)}", ["name", "from", "target"], rows)
    if kind == "source":
        rows = [(i.name, i.options["path"], i.timeline) for i in items]
        return text_result(f"SELECT {len(rows)}", ["name", "path", "timeline"], rows)
    rows = [(i.name,) for i in items]
    return text_result(f"SELECT {len(rows)}", ["name"], rows)


TIERS = {
    "cluster": "cluster (arrangements on the Spark executors)",
    "process": "process (arrangements in this process)",
}


def explain_item(env: Environment, stmt: Statement) -> Result:
    """``EXPLAIN MATERIALIZED VIEW|INDEX name``: where its dataflow runs, then its plan."""
    item = env.catalog.load().get(stmt.args["name"], (stmt.args["kind"],))
    lines = [f"Tier: {TIERS[item.options.get('tier', 'process')]}"]
    lines += decode_plan(item.options["plan"]).explain().splitlines()
    return text_result("EXPLAIN", ["Optimized Plan"], [(line,) for line in lines])


def show_create(env: Environment, stmt: Statement) -> Result:
    item = env.catalog.load().get(stmt.args["name"], (stmt.args["kind"],))
    return text_result("SELECT 1", ["name", "create_sql"], [(item.name, redact(item.sql))])


def show_columns(env: Environment, stmt: Statement) -> Result:
    item = env.catalog.load().get(stmt.args["name"])
    rows = [(c.name, "true" if c.nullable else "false", c.type.name) for c in schema_of(item)]
    return text_result(f"SELECT {len(rows)}", ["name", "nullable", "type"], rows)


def refresh(env: Environment, stmt: Statement) -> Result:
    """REFRESH MATERIALIZED VIEW: the name checked as PostgreSQL checks it (a view is fresh)."""
    item = env.catalog.load().get(stmt.args["name"])
    if item.kind == "view":
        raise PlanError(f'"{item.name}" is not a table or materialized view', sqlstate="42809")
    if item.kind != "materialized view":
        raise PlanError(f'"{item.name}" is not a materialized view', sqlstate="0A000")
    if stmt.args.get("no_data"):
        raise PlanError("WITH NO DATA is not supported: views are kept fresh", sqlstate="0A000")
    return Result("REFRESH MATERIALIZED VIEW")
