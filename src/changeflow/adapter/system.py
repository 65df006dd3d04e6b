"""PostgreSQL's system catalogs (``pg_catalog``, ``information_schema``) generated from
changeflow's catalog, so clients' catalog queries (psql's ``\\d``, SQLAlchemy's inspector) work.

These queries use much of PostgreSQL that the view planner does not (regular expressions,
``OPERATOR(pg_catalog.~)``, ``= ANY(ARRAY[…])``, ``::regclass``, correlated subqueries,
catalog functions), and they read a few hundred rows at most, none of them incrementally. So a
catalog query runs on an in-memory SQLite database built for it from the current catalog: the
query is rewritten by sqlglot (PostgreSQL's dialect in, SQLite's out; catalog functions become
Python functions registered in SQLite). A relation changeflow has no rows for (policies,
publications, inheritance…) is an empty table; a query SQLite cannot run that reads only such
relations answers no rows; anything else is refused with 0A000.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from changeflow.adapter.attnums import attnums, dropped
from changeflow.adapter.catalog import SEARCH_PATH, CatalogState, Item, search_path, split_name
from changeflow.adapter.comments import description_functions, descriptions, other_descriptions
from changeflow.adapter.deparse import defaults_shown, pretty_texts
from changeflow.adapter.extensions import extension_rows
from changeflow.adapter.fk_catalog import fk_constraints, fk_defs, fk_info, fk_tables
from changeflow.adapter.proc_oids import PROCS, proc_rows
from changeflow.adapter.resolver import generated_names
from changeflow.adapter.sequence_options import TYPE_OIDS, SequenceOptions, sequence_info
from changeflow.adapter.sequences import identities, sequence_depends, serial_sequence
from changeflow.adapter.settings import current_setting, setting_rows
from changeflow.adapter.sizes import size_functions
from changeflow.adapter.sql.colnames import output_name
from changeflow.adapter.sql.session_values import SESSION_NAMES, SessionNames
from changeflow.adapter.sql.statements import name as catalog_name
from changeflow.adapter.sql_functions import function_rows, function_texts
from changeflow.adapter.system_domains import domain_defs, domain_info, domain_rows
from changeflow.adapter.system_enums import column_types, enum_rows, type_functions
from changeflow.adapter.system_indexes import class_row, indexes, relation_oid, sql_type, storage
from changeflow.adapter.system_mz import MZ_SCHEMAS, MZ_TABLES, mz_rows, qualified_mz
from changeflow.adapter.system_regs import RegColumns, cast_kind
from changeflow.adapter.system_roles import access_rows, privilege_functions
from changeflow.adapter.system_rows import constraint_defs, key_constraints, precision, type_rows
from changeflow.adapter.system_tables import (
    BOOL_CALLS,
    BOOLS,
    CATALOG_CALLS,
    EMPTY,
    FORMAT,
    INFO_SCHEMA,
    INFO_TABLES,
    KINDS,
    OWNER,
    PG_CATALOG,
    PUBLIC,
    RELATION_BASE,
    SYSTEM_OIDS,
    TABLES,
    namespace_oid,
)
from changeflow.adapter.system_temp import schema_names, temporary
from changeflow.adapter.system_types import (
    ArrayAgg,
    CatalogSql,
    annotated,
    array_contains,
    array_json,
    array_of_rows,
    fits,
    from_sqlite,
    rewrite_array,
    rewrite_unnest,
    sqlite_columns,
)
from changeflow.adapter.typmods import text_types, typmods
from changeflow.compute.functions.chars import quote_ident
from changeflow.compute.functions.patterns import like_escape
from changeflow.compute.scalars import like_regex
from changeflow.compute.types import BOOL, FLOAT8, INT8, TEXT, Column, Schema, SqlType
from changeflow.errors import PlanError

_MENTION = re.compile(
    r"\b(?:pg_catalog\s*\.|information_schema\s*\.|mz_|(?:"
    + "|".join([*TABLES, *CATALOG_CALLS])
    + r")\b)",
    re.I,
)

_OBJECT_TYPES = re.compile(
    r"\b(?:oid|reg(?:class|type|proc|procedure|namespace|oper|role))\b", re.I
)


def mentions_catalog(text: str) -> bool:
    """Does ``text`` read a system relation (``pg_class``, ``information_schema.tables``…)?"""
    if _MENTION.search(text) is None and _OBJECT_TYPES.search(text) is None:
        return False
    try:
        tree = sqlglot.parse_one(text, read=CatalogSql)
    except sqlglot.errors.SqlglotError:
        return False  # the planner words the syntax error
    for table in tree.find_all(exp.Table):
        schema = table.text("db").lower()
        if schema in ("pg_catalog", "information_schema", *MZ_SCHEMAS) or (
            not schema and (table.name.lower() in TABLES or qualified_mz(table.name.lower()))
        ):
            return True
    if any(_catalog_call(d) for d in tree.find_all(exp.Dot)):
        return True
    # a catalog function (pg_get_viewdef('v'::regclass)) or a cast to a reg* type
    # ('t'::regclass) in a query that reads no table (the planner casts to oid)
    calls = {str(f.this).lower() for f in tree.find_all(exp.Anonymous)}
    casts = [c for c in tree.find_all(exp.Cast) if cast_kind(c)]
    return bool(calls & CATALOG_CALLS or casts) and next(tree.find_all(exp.Table), None) is None


def _catalog_call(dot: exp.Dot) -> bool:
    """Is ``dot`` a call qualified by ``pg_catalog`` of a function the planner has not
    (``pg_catalog.pg_get_viewdef(…)``, not ``pg_catalog.upper(…)``)?"""
    from changeflow.adapter.sql.session_values import SESSION_FUNCTIONS
    from changeflow.compute.functions import FUNCTIONS

    if dot.this.name.lower() != "pg_catalog":
        return False
    call = dot.expression
    name = str(call.this if isinstance(call, exp.Anonymous) else call.meta.get("name", ""))
    lowered = name.lower()  # (overlaps: the planner's overlaps_of)
    known = lowered in FUNCTIONS or lowered in SESSION_FUNCTIONS or lowered == "overlaps"
    return not isinstance(call, exp.Func) or not known


@dataclass
class Answer:
    """A catalog query's result: column names, their types and rows."""

    names: list[str]
    kinds: list[SqlType]
    rows: list[tuple[Any, ...]]

    @property
    def columns(self) -> Schema:
        return tuple(Column(n, k) for n, k in zip(self.names, self.kinds, strict=True))


HEAP = 2  # the table access method's OID
PG_CLASS = SYSTEM_OIDS["pg_class"]  # pg_description.classoid of a relation's comments


def _rows(
    state: CatalogState, user: str, database: str, settings: dict[str, str]
) -> dict[str, list[tuple[Any, ...]]]:

    out: dict[str, list[tuple[Any, ...]]] = {name: [] for name in TABLES}
    out["pg_settings"] += setting_rows(settings)
    pid = (SESSION_NAMES.get() or SessionNames()).pid  # this session, the one a query sees
    out["pg_stat_activity"].append(
        (1, database, pid, None, OWNER, user, settings.get("application_name", ""), "127.0.0.1")
        + (None, -1, None, None, None, None, None, None, "active", None, None, None, None)
        + ("client backend",)
    )
    out["pg_proc"] += proc_rows(PG_CATALOG, OWNER) + function_rows(state)
    out["pg_language"] += [(12, "internal", OWNER), (13, "c", OWNER), (14, "sql", OWNER)]
    info: dict[str, list[tuple[Any, ...]]] = {name: [] for name in INFO_TABLES}
    for oid, name in (
        (PG_CATALOG, "pg_catalog"),
        (PUBLIC, "public"),
        (INFO_SCHEMA, "information_schema"),
        *((namespace_oid(state, n), n) for n in schema_names(state)),
    ):
        out["pg_namespace"].append((oid, name, OWNER, None))
        info["schemata"].append((database, name, user))
    out["pg_am"] += [(403, "btree", "bthandler", "i"), (405, "hash", "hashhandler", "i")]
    out["pg_extension"] += extension_rows()
    out["pg_am"].append((HEAP, "heap", "heap_tableam_handler", "t"))
    out["pg_tablespace"].append((1663, "pg_default"))  # the database's (dattablespace)
    out["pg_database"].append(
        (16384, database, OWNER, 6, "c", False, True, -1, 1663, "C", "C", None, None, None)
    )
    out["pg_type"] += type_rows()
    for rows in (enum_rows(state), domain_rows(state)):  # pg_type's, pg_enum's, pg_constraint's
        out |= {k: out[k] + v for k, v in rows.items()}
    items, enums = state.items.values(), column_types(state)
    every_index = indexes(state)
    indexed, triggered = {i.table.id for i in every_index}, fk_tables(state)
    for index in every_index:
        for name, rows in index.rows(
            namespace_oid(state, split_name(index.table.name)[0]), enums
        ).items():
            out[name] += rows
        if index.comment is not None:
            out["pg_description"].append((index.oid, PG_CLASS, 0, index.comment))
    for item in items:
        kind = KINDS.get(item.kind)
        if kind is None:
            continue
        oid = relation_oid(item)
        out["pg_description"] += [(oid, PG_CLASS, n, text) for n, text in descriptions(item)]
        if kind == "i":
            continue
        columns, checks = item.columns, len(item.options.get("checks") or [])
        schema, relname = split_name(item.name)
        namespace = namespace_oid(state, schema)
        has = (item.id in indexed, checks, item.id in triggered)
        out["pg_class"].append(class_row(oid, relname, namespace, kind, len(columns), *has))
        if kind == "S":
            o = SequenceOptions.of(item.options)
            out["pg_sequence"].append(
                (oid, TYPE_OIDS[o.type], o.start, o.increment, o.max, o.min, o.cache, o.cycle)
            )
            out["pg_depend"] += sequence_depends(state, item, oid)
            info["sequences"].append((database, schema, relname, *sequence_info(o)))
        defaults = defaults_shown(item)
        mods = typmods(item)
        texts = text_types(item)
        identity, generated = identities(state, item), generated_names(item)
        for gone in dropped(item):  # as PostgreSQL keeps a dropped column's row
            name = f"........pg.dropped.{gone}........"
            out["pg_attribute"].append(
                (oid, name, 0, 0, -1, gone, 0, -1, -1, False, "i", "x", "", False, False)
                + (False, "", "", True, True, 0, 0, None, None, None, None)
            )
        for (col, type_name, nullable), n in zip(columns, attnums(item), strict=True):
            if type_name == "text":  # varchar(n) and char(n) keep text
                type_name = texts.get(col, type_name)
            type_oid, length, udt = sql_type(type_name, enums)
            domain = domain_info(state, type_name, database)
            if domain is not None:  # its typmod is the domain's
                mods.pop(col, None)
            default = defaults[col][0] if col in defaults and col not in identity else None
            out["pg_attribute"].append(
                (oid, col, type_oid, -1, length, n, 0, -1, mods.get(col, -1), length > 0)
                + ("i", storage(type_oid, length), "")
                + (
                    not nullable and kind == "r",
                    default is not None,
                    False,
                    identity.get(col, ""),
                    "s" if col in generated else "",
                    False,
                    True,
                    0,
                    0,
                )
                + (None, None, None, None)
            )
            if default is not None:
                out["pg_attrdef"].append((oid * 1000 + n, oid, n, default))
            if kind not in ("r", "v"):  # as PostgreSQL's: no materialized view, no sequence
                continue
            info["columns"].append(
                (
                    database,
                    schema,
                    relname,
                    col,
                    n,
                    None if col in generated else default,
                    "NO" if not nullable and kind == "r" else "YES",
                )
                + _column_type(type_name, type_oid, udt, mods.get(col, -1), domain, database)
                + ("YES" if col in identity else "NO",)
                + (("ALWAYS", default, "NO") if col in generated else ("NEVER", None, "NO"))
            )
        if kind == "r":
            for name, rows in key_constraints(item, oid, namespace_oid(state, schema)).items():
                out[name] += rows
            out["pg_constraint"] += fk_constraints(state, item, oid, namespace, relation_oid)
            out["pg_tables"].append((schema, relname, user, item.id in indexed))
            info["tables"].append((database, schema, relname, "BASE TABLE", "YES", "NO"))
        elif kind in ("v", "m"):
            definition = _definition(item)
            view = "pg_views" if kind == "v" else "pg_matviews"
            out[view].append((schema, relname, user, definition))
            if kind == "v":  # information_schema leaves materialized views out, as PostgreSQL's
                info["tables"].append((database, schema, relname, "VIEW", "NO", "NO"))
                info["views"].append((database, schema, relname, definition, "NONE", "NO", "NO"))
    info |= fk_info(state, database)  # constraints' views
    out["pg_description"] += other_descriptions(state)
    access_rows(state, out, info, database)
    return temporary(out | {f"information_schema.{k}": v for k, v in info.items()})


def _column_type(
    type_name: str, oid: int, udt: str, typmod: int, domain: Any, database: str
) -> tuple[Any, ...]:
    """information_schema.columns' columns from data_type to udt_name: of the base type for a
    column of a domain (``domain``: :func:`domain_info`'s), then the domain's names."""
    enum = split_name(type_name)[0] if oid >= RELATION_BASE and domain is None else None
    oid, udt, typmod, names = domain or (oid, udt, typmod, (None, None, None))
    return (
        ("ARRAY" if type_name.endswith("[]") else FORMAT.get(oid, "USER-DEFINED")),
        typmod - 4 if oid in (1042, 1043) and typmod >= 4 else None,
        *precision(oid, typmod),
        *names,
        database,
        enum or "pg_catalog",
        udt,
    )


def _definition(item: Item) -> str:
    m = re.search(r"\bAS\s+(.*)$", item.sql, re.I | re.S)
    return (m[1] if m else item.sql).strip().rstrip(";") + ";"


def _functions(state: CatalogState, user: str, database: str) -> dict[str, Callable[..., Any]]:
    items = [i for i in state.items.values() if i.kind in KINDS]
    by_oid = {relation_oid(i): i for i in items}
    by_name = {i.name: i for i in items}

    keys = constraint_defs(items, relation_oid) | fk_defs(items, relation_oid)  # its texts
    keys |= domain_defs(state)
    mine = function_texts(state)  # the catalog's functions' result and arguments
    pretty = pretty_texts(items, keys)  # pg_get_expr's, of each default's and check's text

    every_index = {i.oid: i for i in indexes(state)}
    names = {oid: name for name, oid in SYSTEM_OIDS.items()}
    names |= {i.oid: i.qualified for i in every_index.values() if i.oid not in by_oid}
    oids = {name: oid for oid, name in names.items()}

    def regclass(value: Any) -> Any:
        if isinstance(value, int):
            item = by_oid.get(value)
            return item.name if item else names.get(value, str(value))
        text = str(value)
        if text.isdigit():
            return int(text)
        key = catalog_name(text)
        item = by_name.get(key)
        if item is None:
            return oids.get(key, SYSTEM_OIDS.get(key.split(".")[-1]))
        return relation_oid(item)

    def indexdef(oid: int, column: int = 0, pretty: Any = None) -> str | None:
        index = every_index.get(oid)
        if index is None:
            return None
        if column:
            return index.column_text(column)
        return index.definition(bool(pretty))

    def viewdef(oid: Any, pretty: Any = None) -> str | None:
        item = by_oid.get(oid) if isinstance(oid, int) else by_name.get(str(oid))
        return (
            _definition(item)
            if item is not None and item.kind in ("view", "materialized view")
            else None
        )

    def regexp(pattern: str | None, value: str | None) -> int | None:
        if pattern is None or value is None:
            return None
        return 1 if re.search(pattern, value) else 0

    commented = {i.oid: i.comment for i in every_index.values() if i.comment is not None}
    named = description_functions(state, by_oid, PG_CLASS, commented) | type_functions(state)
    return (
        named
        | privilege_functions(state)
        | {
            "regexp": regexp,
            "regclass": regclass,
            "pg_partition_ancestors": regclass,
            "to_regclass": lambda name: (
                by_name[name].id and relation_oid(by_name[name]) if name in by_name else None
            ),
            "pg_table_is_visible": lambda oid: int(
                oid not in by_oid or state.find(split_name(by_oid[oid].name)[1]) is by_oid[oid]
            ),
            "pg_collation_is_visible": lambda oid: 1,
            "pg_get_serial_sequence": lambda table, column: serial_sequence(state, table, column),
            "json_build_object": lambda *args: json.dumps(
                dict(zip(args[::2], args[1::2], strict=False))
            ),
            "pg_function_is_visible": lambda oid: 1,
            "pg_get_function_result": lambda o: getattr(
                PROCS.get(o) or mine.get(o), "result", None
            ),
            "pg_get_function_arguments": lambda o: getattr(
                PROCS.get(o) or mine.get(o), "arguments", ""
            ),
            "pg_get_function_sqlbody": lambda oid: None,
            "pg_get_expr": lambda expr, rel=None, shown=None: (
                pretty.get(expr, expr) if shown else expr
            ),
            "pg_get_indexdef": indexdef,
            "pg_get_viewdef": viewdef,
            "pg_get_constraintdef": lambda oid, pretty=0: (keys.get(oid) or (None, None))[
                bool(pretty)
            ],
            "pg_encoding_to_char": lambda n: "UTF8",
            "pg_relation_is_publishable": lambda oid: 0,
            "current_schema": lambda: next(
                (s for s in SEARCH_PATH.get() if s == "public" or s in state.schemas), None
            ),
            "current_database": lambda: database,
            "pg_backend_pid": lambda: (SESSION_NAMES.get() or SessionNames()).pid,
            "version": lambda: "PostgreSQL 15.0 on changeflow",
            "pg_is_other_temp_schema": lambda oid: 0,
            "quote_ident": lambda s: None if s is None else quote_ident(str(s)),
        }
    )


_SQLITE_CASTS = {
    "text": "TEXT",
    "name": "TEXT",
    "varchar": "TEXT",
    "char": "TEXT",
    "bpchar": "TEXT",
}


def _rewrite(node: exp.Expression) -> exp.Expression:
    """A PostgreSQL catalog query's nodes as SQLite can run them."""
    schema = node.this.name.lower() if isinstance(node, exp.Dot) else ""
    if schema in ("pg_catalog", "information_schema") and isinstance(node.expression, exp.Func):
        return node.expression
    array = rewrite_array(node)
    if array is not None:
        return array
    if isinstance(node, exp.Collate):
        return node.this
    like = _like(node)
    if like is not None:
        return like
    if isinstance(node, exp.Array) and any(isinstance(e, exp.Query) for e in node.expressions):
        return array_of_rows(node)
    if isinstance(node, exp.ByteString):
        return exp.Literal.string(str(node.this))
    if isinstance(node, exp.Operator) and str(node.args.get("operator", "")).endswith("~"):
        pattern = node.expression
        pattern = pattern.this if isinstance(pattern, exp.Collate) else pattern
        return exp.RegexpLike(this=node.this, expression=pattern)
    if isinstance(node, exp.Table | exp.Column) and node.text("db").lower() == "pg_catalog":
        node.set("db", None)
    if isinstance(node, exp.Cast):
        to = node.to
        name = (to.sql(CatalogSql) if isinstance(to, exp.DataType) else str(to.this)).lower()
        name = name.split(".")[-1].strip('"')
        if name in ("regclass", "regtype", "regnamespace", "regproc", "regprocedure"):
            return exp.Anonymous(this=name, expressions=[node.this])
        kind = cast_kind(node.this)
        if name in _SQLITE_CASTS and kind is not None:  # 't'::regclass::text: the name
            return exp.Anonymous(
                this="reg_name", expressions=[exp.Literal.string(kind), node.this.this]
            )
        if name in _SQLITE_CASTS:
            node.set("to", exp.DataType.build("TEXT"))  # in place: its operand is rewritten
            return node
        if name in ("oid", "int", "int2", "int4", "int8", "integer", "bigint", "smallint"):
            node.set("to", exp.DataType.build("INTEGER"))
            return node
        return node.this
    return node


def _like(node: exp.Expression) -> exp.Expression | None:
    """``a [NOT] [I]LIKE p [ESCAPE e]`` as a call of :func:`_pg_like` (SQLite's LIKE ignores
    case and knows no escape character), else None."""
    escape: exp.Expression = exp.Literal.string("\\")
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like | exp.ILike):
        node, escape = node.this, node.expression
    if not isinstance(node, exp.Like | exp.ILike):
        return None
    ci = exp.Literal.number(int(isinstance(node, exp.ILike)))
    call = exp.Anonymous(this="pg_like", expressions=[node.this, node.expression, escape, ci])
    return exp.Not(this=call) if node.args.get("negate") else call


def _pg_like(value: Any, pattern: Any, escape: Any, case_insensitive: int) -> int | None:
    if value is None or pattern is None or escape is None:
        return None
    if escape != "\\":
        pattern = like_escape(str(pattern), str(escape))
    return int(like_regex(str(pattern), bool(case_insensitive)).fullmatch(str(value)) is not None)


def _name_outputs(tree: exp.Expression) -> None:
    """Name the select list's unnamed expressions as PostgreSQL does (SQLite would name them
    by their text)."""
    for select in [tree] if isinstance(tree, exp.Select) else list(tree.find_all(exp.Select))[:1]:
        for i, e in enumerate(select.expressions):
            if not isinstance(e, exp.Alias | exp.Column | exp.Star):
                select.expressions[i] = exp.alias_(e, output_name(e), quoted=True)


def _reads_nothing(tree: exp.Expression) -> bool:
    """Does every branch of the query inner-join a relation that changeflow has no rows for?"""
    if isinstance(tree, exp.SetOperation):
        return _reads_nothing(tree.this) and _reads_nothing(tree.expression)
    if not isinstance(tree, exp.Select):
        return False
    sources = [tree.args["from_"].this] if tree.args.get("from_") else []
    sources += [j.this for j in tree.args.get("joins") or [] if (j.side or "").upper() != "LEFT"]
    return any(
        (isinstance(t, exp.Table) and t.name.lower() in EMPTY)
        or (isinstance(t, exp.Subquery) and _reads_nothing(t.this))
        for t in sources
    )


def answer(
    text: str,
    state: CatalogState,
    user: str,
    database: str,
    settings: dict[str, str] | None = None,
    sizes: Callable[[str], int] | None = None,
) -> Answer:
    """Run the catalog query ``text`` over the system relations of ``state`` (``sizes``: a
    shard's bytes, for ``pg_table_size`` and its kin)."""
    try:
        tree = sqlglot.parse_one(text, read=CatalogSql)
    except sqlglot.errors.ParseError as e:
        raise PlanError(f"syntax error in a catalog query: {e}", sqlstate="42601") from None
    _name_outputs(tree)
    for table in tree.find_all(exp.Table):  # mz_catalog's relations are found unqualified
        if not table.text("db") and (mz := qualified_mz(table.name.lower())):
            table.set("db", exp.to_identifier(mz.split(".")[0]))
    top = tree if isinstance(tree, exp.Select) else next(tree.find_all(exp.Select), None)
    truths = {
        i
        for i, e in enumerate(top.expressions if top is not None else [])
        if isinstance(e.unalias(), exp.Predicate | exp.Connector | exp.Not | exp.Boolean)
        or str(e.unalias().this).lower() in BOOL_CALLS
    }
    declared = annotated(text)
    if settings and "search_path" in settings:  # the session's as it is now (after a SET)
        SEARCH_PATH.set(search_path(settings["search_path"]))
    from changeflow.adapter.object_ids import resolve  # (it reads this module's oids)

    regs = RegColumns(tree, lambda kind, value: resolve(state, user, kind, value))
    for select in list(tree.find_all(exp.Select)):
        rewrite_unnest(select)
    for _ in range(4):  # a rewritten node's children are rewritten in the next pass
        tree = tree.transform(_rewrite, copy=False)
    db = sqlite3.connect(":memory:")
    try:
        for attached in ("information_schema", *MZ_SCHEMAS):
            db.execute(f"ATTACH DATABASE ':memory:' AS {attached}")
        mz = mz_rows(state, _definition, getattr(sizes, "frontiers", None))
        for name, rows in (_rows(state, user, database, settings or {}) | mz).items():
            schema = TABLES.get(name) or MZ_TABLES.get(name) or INFO_TABLES[name.split(".", 1)[1]]
            db.execute(f"CREATE TABLE {name} ({sqlite_columns(schema)})")
            width = schema.count(",") + 1
            if rows:
                marks = ", ".join("?" * width)
                db.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
        functions = _functions(state, user, database) | size_functions(state, sizes)
        functions["current_setting"] = lambda name, *_: current_setting(settings or {}, name, True)
        for fn, impl in functions.items():
            db.create_function(fn, -1, impl, deterministic=True)
        db.create_function("array_contains", 2, array_contains, deterministic=True)
        db.create_function("pg_like", 4, _pg_like, deterministic=True)
        db.create_function("reg_oid", 2, regs.oid, deterministic=True)
        db.create_function("reg_name", 2, regs.name, deterministic=True)
        for kind in ("regnamespace", "regproc", "regprocedure"):
            db.create_function(kind, 1, regs.toggle(kind), deterministic=True)
        db.create_function("array_json", 1, array_json, deterministic=True)
        db.create_aggregate("array_agg", -1, ArrayAgg)
        sql = tree.sql(dialect="sqlite")
        try:
            cur = db.execute(sql)
        except sqlite3.Error as e:
            if _reads_nothing(tree):
                names = (
                    [s.alias_or_name for s in tree.selects] if isinstance(tree, exp.Query) else []
                )
                return Answer(names, [TEXT] * len(names), [])
            raise PlanError(
                f"this catalog query is not supported ({e}); SHOW TABLES, SHOW VIEWS and "
                "SHOW COLUMNS FROM name answer the common questions",
                sqlstate="0A000",
            ) from None
        names = [d[0] for d in cur.description or ()]
        rows = cur.fetchall()
    finally:
        db.close()
    kinds = []
    for i, n in enumerate(names):
        values = [r[i] for r in rows if r[i] is not None]
        kind = declared[i] if len(declared) == len(names) else None
        if kind is not None and fits(kind, values):
            kinds.append(kind)
        elif (n in BOOLS or i in truths) and all(v in (0, 1) for v in values):
            kinds.append(BOOL)
        elif values and all(isinstance(v, int) for v in values):
            kinds.append(INT8)
        elif values and all(isinstance(v, float) for v in values):
            kinds.append(FLOAT8)
        else:
            kinds.append(TEXT)
    rows = regs.finish(kinds, [tuple(map(from_sqlite, r, kinds)) for r in rows])
    return Answer(names, kinds, rows)
