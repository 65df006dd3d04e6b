"""SQL text into statements: split on semicolons, classified, and parsed.

Standard SQL (queries, DML, CREATE TABLE) is parsed by sqlglot's PostgreSQL dialect. The
statements that are Materialize's own (CREATE SOURCE … FROM CDC, CREATE SINK, CREATE
MATERIALIZED VIEW, CREATE INDEX, SUBSCRIBE, SHOW, ``AS OF``) are recognised by their leading
keywords here; the queries inside them go to sqlglot. A statement that is neither is a syntax
error (SQLSTATE 42601) that quotes it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import Tokenizer, TokenType

from changeflow.adapter.sql.alter_statements import ALTER_PATTERNS
from changeflow.adapter.sql.dialect import parse_sql, shared_tree
from changeflow.adapter.sql.dml_with import DML, with_inlined, writes_in_with
from changeflow.adapter.sql.index_keys import check_clauses, key_columns
from changeflow.adapter.sql.literals import escape_string, plain_strings
from changeflow.adapter.sql.names import NAME, QNAME
from changeflow.adapter.sql.role_statements import ROLE_PATTERNS
from changeflow.adapter.sql.scope import qualify
from changeflow.adapter.sql.set_statements import SET_KINDS, SET_PATTERNS, set_statement
from changeflow.adapter.sql.shapes import Shape, shape_of
from changeflow.adapter.sql.temporary import TEMP_HEAD, in_pg_temp, refuse_on_commit, temporary
from changeflow.adapter.sql.type_statements import TYPE_PATTERNS
from changeflow.errors import PlanError

KIND_WORDS = {
    "TABLE": "table",
    "TABLES": "table",
    "SOURCE": "source",
    "SOURCES": "source",
    "VIEW": "view",
    "VIEWS": "view",
    "MATERIALIZED VIEW": "materialized view",
    "MATERIALIZED VIEWS": "materialized view",
    "INDEX": "index",
    "INDEXES": "index",
    "SINK": "sink",
    "SINKS": "sink",
}
KIND = r"(?P<kind>TABLES?|SOURCES?|MATERIALIZED\s+VIEWS?|VIEWS?|INDEX(?:ES)?|SINKS?)"


@dataclass(frozen=True)
class Statement:
    """One statement: its ``kind`` (``select``, ``insert``, ``create_table``…), its text, the
    sqlglot tree of its query or DML (if any) and the arguments its kind needs. A statement
    of a shape parsed before (:mod:`~changeflow.adapter.sql.shapes`) is parsed only when its
    tree is asked for (``lazy``): one whose plan is kept needs none."""

    kind: str
    text: str
    parsed: exp.Expression | None = None  # read it as :attr:`tree`; :attr:`ast` to change
    args: dict[str, Any] = field(default_factory=dict)
    shared: bool = False  # ``tree`` is the parse cache's: copied when ``ast`` is first asked for
    lazy: bool = False  # ``tree`` is parsed from ``text`` when first asked for
    _own: list[exp.Expression] = field(default_factory=list, compare=False, repr=False)

    @property
    def tree(self) -> exp.Expression | None:
        return shared_tree(self.text) if self.lazy else self.parsed

    @property
    def returns(self) -> bool:
        """Has it a RETURNING clause?"""
        known = _SHAPES.get(self.shape.key) if self.lazy else None
        if known is not None:
            return known
        return self.tree is not None and self.tree.args.get("returning") is not None

    @functools.cached_property
    def shape(self) -> Shape:
        return shape_of(self.text)

    @property
    def ast(self) -> exp.Expression | None:
        """The statement's tree, its own to change (planning may): a statement run again
        whose plan is kept (:mod:`~changeflow.adapter.plan_cache`) copies no tree."""
        tree = self.tree
        if not self.shared or tree is None:
            return tree
        if not self._own:
            self._own.append(tree.copy())
        return self._own[0]


def _shared(kind: str, text: str, args: dict[str, Any] | None = None) -> Statement:
    """A query or DML statement: its tree from the parse cache, parsed now unless a statement
    of its shape was parsed before (then only when asked for)."""
    stmt = Statement(kind, text, None, args or {}, shared=True, lazy=True)
    key = stmt.shape.key
    if key not in _SHAPES:
        tree = shared_tree(text)  # a syntax error is raised here
        if len(_SHAPES) >= 4096:
            _SHAPES.clear()
        _SHAPES[key] = tree.args.get("returning") is not None
    return stmt


_SHAPES: dict[str, bool] = {}  # shapes parsed: has it a RETURNING clause?
DML_KINDS = frozenset({"insert", "update", "delete", "merge"})  # statements that write rows
WRITE_KINDS = DML_KINDS | {"with_writes"}  # and those with such statements in WITH


def split(script: str) -> list[str]:
    """The statements of ``script``, split at semicolons outside strings and comments (its
    escape strings made standard ones first: :func:`plain_strings`)."""
    script = plain_strings(script)
    try:
        tokens = Tokenizer(dialect="postgres").tokenize(script)
    except TokenError as e:
        raise PlanError(f"syntax error: {e}", sqlstate="42601") from None
    out, start = [], 0
    for t in tokens:
        if t.token_type == TokenType.SEMICOLON:
            out.append(script[start : t.start])
            start = t.end + 1
    out.append(script[start:])
    return [s.strip() for s in out if s.strip()]


def name(text: str) -> str:
    """A (qualified) name as the catalog keys it: unquoted parts fold to lower case; ``s.t``
    keeps its schema unless that is public; a database prefix is dropped."""
    parts = [p[1:-1].replace('""', '"') if p[0] == '"' else p.lower() for p in _parts(text)]
    return qualify(parts[-2] if len(parts) >= 2 else None, parts[-1])


def _parts(text: str) -> list[str]:
    return re.findall(NAME, text)


def names(text: str) -> list[str]:
    return [name(n) for n in re.findall(QNAME, text)]


def kind_of(word: str) -> str:
    return KIND_WORDS[" ".join(word.upper().split())]


# Functions the planner takes as plain calls of the function table (sqlglot's own nodes for
# them would rewrite a template as strftime's, or take another dialect's argument order).
def options(text: str | None) -> dict[str, str]:
    """``k = v, k2 = 'v'`` (a WITH list) as lower-case keys to values (quotes removed); a
    bare key is ``true``."""
    out: dict[str, str] = {}
    for part in commas(text or ""):
        key, _, value = part.partition("=")
        if not key.strip():
            continue
        out[key.strip().lower()] = unquote(value.strip()) if value.strip() else "true"
    return out


def commas(text: str) -> list[str]:
    """``text`` split at the commas outside quotes, parentheses and brackets."""
    parts, depth, quote, cur = [], 0, False, ""
    for ch in text:
        if ch == "'":
            quote = not quote
        elif not quote and ch in "([":
            depth += 1
        elif not quote and ch in ")]":
            depth -= 1
        elif not quote and depth == 0 and ch == ",":
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    return [*parts, cur]


def unquote(value: str) -> str:
    """A SQL string literal's value ('it''s', E'\\n'); any other text as it is."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if value[:2] in ("E'", "e'") and value.endswith("'"):
        return escape_string(value[2:-1])
    return value


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "create_source",
        rf"CREATE\s+SOURCE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME})\s+FROM\s+CDC\s+"
        r"(?P<path>'(?:[^']|'')*')\s+FORMAT\s+(?P<format>\w+)\s*(?:\((?P<columns>.*?)\))?\s*"
        r"(?:WITH\s*\((?P<with>.*)\))?",
    ),
    (
        "create_sink",
        rf"CREATE\s+SINK\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME})\s+FROM\s+"
        rf"(?P<item>{QNAME})\s+INTO\s+(?P<target>'(?:[^']|'')*')\s+KEY\s*\((?P<key>[^)]*)\)\s*"
        r"(?:WITH\s*\((?P<with>.*)\))?",
    ),
    (
        "create_view",
        rf"CREATE\s+(?P<replace>OR\s+REPLACE\s+)?(?P<materialized>MATERIALIZED\s+)?VIEW\s+"
        rf"(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME})\s*(?:\((?P<columns>[^)]*)\))?\s*"
        r"(?:WITH\s*\((?P<with>[^)]*)\)\s*)?AS\s+(?P<query>.*)",
    ),
    (
        "create_index",
        rf"CREATE\s+(?P<default>DEFAULT\s+)?(?P<unique>UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?"
        rf"(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME}\s+)?ON\s+(?:ONLY\s+)?(?P<item>{QNAME})"
        r"\s*(?:USING\s+(?P<method>\w+)\s*)?(?:\((?P<key>(?:[^()]|\([^()]*\))*)\))?"
        r"\s*(?P<tail>(?:INCLUDE|WITH|WHERE|NULLS)\b.*)?",
    ),
    (
        "owner_to",
        r"ALTER\s+(?P<kind>TABLE|VIEW|MATERIALIZED\s+VIEW|SEQUENCE|INDEX|SOURCE|SINK|SCHEMA|"
        r"FUNCTION|PROCEDURE|ROUTINE)\s+(?P<ie>IF\s+EXISTS\s+)?(?:ONLY\s+)?"
        rf"(?P<name>{QNAME})(?:\s*\([^)]*\))?\s+OWNER\s+TO\s+(?P<role>{NAME})",
    ),
    (
        "alter_sequence",
        rf"ALTER\s+SEQUENCE\s+(?P<ie>IF\s+EXISTS\s+)?(?P<name>{QNAME})(?P<rest>\s.*)",
    ),
    (
        "comment",
        r"COMMENT\s+ON\s+(?P<kind>TABLE|COLUMN|VIEW|MATERIALIZED\s+VIEW|INDEX|SEQUENCE|TYPE|"
        r"DOMAIN|FUNCTION|SCHEMA|ROLE)\s+"
        rf"(?P<name>{QNAME})(?:\s*\([^)]*\))?\s+IS\s+(?P<text>'(?:[^']|'')*'|NULL)",
    ),
    (
        "drop",
        rf"DROP\s+{KIND}\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    (
        "drop_sequence",
        rf"DROP\s+SEQUENCE\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    (
        "truncate",
        rf"TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)\s*"
        r"(?:(?:CONTINUE|RESTART)\s+IDENTITY\s*)?(?P<mode>CASCADE|RESTRICT)?",
    ),
    (
        "create_schema",
        rf"CREATE\s+SCHEMA\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{NAME})"
        rf"(?:\s+AUTHORIZATION\s+(?P<owner>{NAME}))?",
    ),
    (
        "drop_schema",
        rf"DROP\s+SCHEMA\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{NAME}(?:\s*,\s*{NAME})*)\s*"
        r"(?P<mode>CASCADE|RESTRICT)?",
    ),
    ("create_extension", rf"CREATE\s+EXTENSION\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{NAME}).*"),
    (
        "drop_extension",
        rf"DROP\s+EXTENSION\s+(?P<ie>IF\s+EXISTS\s+)?(?P<names>{NAME}(?:\s*,\s*{NAME})*)\s*"
        r"(?:CASCADE|RESTRICT)?",
    ),
    ("rename", rf"ALTER\s+{KIND}\s+(?P<name>{QNAME})\s+RENAME\s+TO\s+(?P<new>{QNAME})"),
    ("maintain", r"(?P<verb>ANALYZE|ANALYSE|VACUUM|CHECKPOINT)\b(?P<rest>.*)"),
    (
        "refresh",
        rf"REFRESH\s+MATERIALIZED\s+VIEW\s+(?:CONCURRENTLY\s+)?(?P<name>{QNAME})"
        r"(?:\s+WITH\s+(?P<no_data>NO\s+)?DATA)?",
    ),
    *ALTER_PATTERNS,
    ("show_create", rf"SHOW\s+CREATE\s+{KIND}\s+(?P<name>{QNAME})"),
    ("show_columns", rf"SHOW\s+COLUMNS\s+(?:FROM|IN)\s+(?P<name>{QNAME})"),
    ("show_items", rf"SHOW\s+{KIND}"),
    (
        "subscribe",
        rf"SUBSCRIBE\s+(?:TO\s+)?(?:(?P<item>{QNAME})|(?P<query>\(.*\)))\s*"
        r"(?:WITH\s*\((?P<with>[^)]*)\))?\s*"
        r"(?:AS\s+OF\s+(?:AT\s+LEAST\s+)?(?P<as_of>.+?))?\s*(?:UP\s+TO\s+(?P<up_to>.+?))?",
    ),
    (
        "explain_view",
        r"EXPLAIN\s+(?:(?:OPTIMIZED\s+|RAW\s+)?PLAN\s+FOR\s+)?(?P<kind>MATERIALIZED\s+VIEW|INDEX)\s+"
        rf"(?P<name>{QNAME})",
    ),
    ("explain", r"EXPLAIN\s+(?:(?:OPTIMIZED\s+|RAW\s+)?PLAN\s+FOR\s+)?(?P<query>.*)"),
    ("begin", r"(?:BEGIN|START\s+TRANSACTION)(?:\s+.*)?"),
    ("commit", r"(?:COMMIT|END)(?:\s+(?:WORK|TRANSACTION))?"),
    ("rollback", r"(?:ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?"),
    ("savepoint", rf"SAVEPOINT\s+(?P<name>{NAME})"),
    ("release", rf"RELEASE\s+(?:SAVEPOINT\s+)?(?P<name>{NAME})"),
    (
        "rollback_to",
        rf"ROLLBACK(?:\s+(?:WORK|TRANSACTION))?\s+TO\s+(?:SAVEPOINT\s+)?(?P<name>{NAME})",
    ),
    (
        "set_constraints",
        rf"SET\s+CONSTRAINTS\s+(?:ALL|(?P<names>{QNAME}(?:\s*,\s*{QNAME})*))\s+"
        r"(?P<mode>DEFERRED|IMMEDIATE)",
    ),
    *ROLE_PATTERNS,
    *SET_PATTERNS,
    *TYPE_PATTERNS,
    ("cursor", r"(?:DECLARE|FETCH|MOVE|CLOSE)\s.*"),  # (read by adapter/cursors.py)
    (
        "lock",
        rf"LOCK\s+(?:TABLE\s+)?(?:ONLY\s+)?(?P<names>{QNAME}(?:\s*,\s*{QNAME})*)"
        r"(?:\s+IN\s+(?P<mode>[A-Z\s]+?)\s+MODE)?(?P<nowait>\s+NOWAIT)?",
    ),
    ("show_isolation", r"SHOW\s+TRANSACTION\s+ISOLATION\s+LEVEL"),
    ("show_all", r"SHOW\s+ALL"),
    ("show_var", r"SHOW\s+(?P<var>[\w.]+)"),
]
_COMPILED = [(k, re.compile(p, re.IGNORECASE | re.DOTALL)) for k, p in _PATTERNS]
_AS_OF = re.compile(
    r"^(?P<query>.*?)\s+AS\s+OF\s+(?:AT\s+LEAST\s+)?(?P<as_of>[^'\s)]+)"
    r"(?P<tail>\s+(?:ORDER\s+BY|LIMIT|OFFSET|FETCH)\s(?:[^()']|'[^']*')*)?\s*$",
    re.I | re.S,
)


_OVERRIDING = re.compile(
    r"\s+OVERRIDING\s+(SYSTEM|USER)\s+VALUE(?=\s+(?:VALUES|SELECT|WITH|TABLE)\b|\s*\()", re.I
)
_UNSUPPORTED = [  # valid PostgreSQL that changeflow refuses with 0A000, and why
    (
        re.compile(r"ALTER\s+TABLE\b", re.I),
        "this form of ALTER TABLE is not supported (ADD/DROP/RENAME COLUMN, ADD/DROP "
        "CONSTRAINT, ALTER COLUMN … TYPE, SET/DROP NOT NULL, SET/DROP DEFAULT, RENAME TO are)",
    ),
    (
        re.compile(
            r"(?:CREATE\s+UNLOGGED\s+TABLE|COMMENT\s+ON"
            r"|VACUUM|ANALYZE|DO|LISTEN|NOTIFY|UNLISTEN|CLUSTER|REINDEX"
            r"|CREATE\s+TABLE)\b",
            re.I,
        ),
        "this statement is not supported",
    ),
    (
        re.compile(r"(?:CREATE|ALTER)\s+SCHEMA\b", re.I),
        "ALTER SCHEMA, and CREATE SCHEMA with elements, are not supported (CREATE SCHEMA name "
        "and DROP SCHEMA are)",
    ),
]


_TEMP_SEQUENCE = re.compile(
    rf"CREATE\s+(?:TEMP|TEMPORARY)\s+SEQUENCE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME})",
    re.I,
)
_RECURSIVE_VIEW = re.compile(
    rf"CREATE\s+(?P<replace>OR\s+REPLACE\s+)?RECURSIVE\s+VIEW\s+(?P<name>{QNAME})\s*"
    r"\((?P<columns>[^)]*)\)\s*AS\s+(?P<query>.*)",
    re.I | re.S,
)


def parse(text: str) -> Statement:
    """One statement of text (no trailing semicolon) as a :class:`Statement`."""
    text = plain_strings(text.strip().rstrip(";").strip())
    if m := _RECURSIVE_VIEW.fullmatch(text):  # as PostgreSQL reads it: a view of a WITH RECURSIVE
        bare = re.split(r"\s*\.\s*", m["name"])[-1]  # (as written: quoted or not)
        head = f"CREATE {m['replace'] or ''}VIEW {m['name']} AS WITH RECURSIVE {bare}"
        text = f"{head}({m['columns']}) AS ({m['query']}) SELECT {m['columns']} FROM {bare}"
    if (many := _alter_actions(text)) is not None:
        return many
    for kind, pattern in _COMPILED:
        m = pattern.fullmatch(text)
        if m:
            return _statement(kind, text, m.groupdict())
    head = text.split(None, 1)[0].upper() if text else ""
    if head == "WITH" and writes_in_with(tree := shared_tree(text)):  # WITH d AS (DELETE …)
        return Statement("with_writes", text, tree.copy())
    if head == "WITH" and isinstance(tree, DML):  # WITH … UPDATE
        return Statement(type(tree).__name__.lower(), text, with_inlined(tree.copy()))
    if head in ("SELECT", "WITH", "VALUES", "TABLE") or text.startswith("("):
        if (into := _select_into(text)) is not None:
            return into
        return _query("select", text)
    if head == "INSERT" and (m := _OVERRIDING.search(text.split("'", 1)[0])):
        tree = shared_tree(text[: m.start()] + text[m.end() :]).copy()
        tree.set("overriding", m[1].lower())  # dml.plan_insert takes or ignores identity values
        return Statement("insert", text, tree)
    if head in ("INSERT", "UPDATE", "DELETE", "MERGE"):
        return _shared(head.lower(), text)
    if head == "CREATE" and (m := _TEMP_SEQUENCE.match(text)):  # one in pg_temp
        text = f"CREATE SEQUENCE {m['ine'] or ''}{in_pg_temp(m['name'])}{text[m.end() :]}"
    if head == "CREATE" and re.match(r"CREATE\s+SEQUENCE\s", text, re.I):
        return Statement("create_sequence", text, parse_sql(text))
    if head == "CREATE" and (temp := TEMP_HEAD.match(text)):
        return temporary(text, temp.end(), parse)
    if head == "CREATE" and re.match(r"CREATE\s+TABLE", text, re.I):
        refuse_on_commit(text)
        if (made := _create_as(text)) is not None:
            return made
        tree = parse_sql(text)
        if not isinstance(tree.expression, exp.Query):  # CREATE TABLE … AS: refused below
            return Statement("create_table", text, tree)
    for pattern, why in _UNSUPPORTED:
        if pattern.match(text):
            raise PlanError(f"{_short(text)}: {why}", sqlstate="0A000")
    raise PlanError(
        f"syntax error: {_short(text)} is not a statement changeflow knows", sqlstate="42601"
    )


_CREATE_AS = re.compile(
    rf"CREATE\s+TABLE\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?(?P<name>{QNAME})\s*"
    r"(?:\((?P<columns>[^()]*)\)\s*)?AS\s+(?P<query>.+?)(?:\s+WITH\s+(?P<nodata>NO\s+)?DATA)?",
    re.I | re.S,
)
_INTO = re.compile(
    rf"\s+INTO\s+(?:(?P<temp>TEMP|TEMPORARY|UNLOGGED)\s+)?(?:TABLE\s+)?(?P<name>{QNAME})", re.I
)


def _create_as(text: str) -> Statement | None:
    """CREATE TABLE name [(columns)] AS query [WITH [NO] DATA] (``create_table`` with the
    query's text in ``query``)."""
    m = _CREATE_AS.fullmatch(text)
    if m is None:
        return None
    query = m["query"].strip()
    if query.startswith("(") and _parenthesised(query)[1].strip() == "":
        query = _parenthesised(query)[0].strip()
    _query("select", query).tree  # its syntax errors now  # noqa: B018
    columns = [name(c) for c in m["columns"].split(",")] if m["columns"] else None
    args = {"name": name(m["name"]), "columns": columns, "ine": bool(m["ine"])}
    return Statement(
        "create_table", text, None, args | {"query": query, "nodata": bool(m["nodata"])}
    )


def _select_into(text: str) -> Statement | None:
    """SELECT … INTO [TABLE] name FROM …: CREATE TABLE name AS the query without INTO."""
    if not re.search(r"\bINTO\b", text, re.I):
        return None
    tree = _query("select", text).tree
    into = tree.args.get("into") if tree is not None else None
    if into is None:
        return None
    for m in _INTO.finditer(text):
        query = text[: m.start()] + text[m.end() :]
        rest = _query("select", query).tree
        if rest is not None and rest.args.get("into") is None:
            if (m["temp"] or "").upper() == "UNLOGGED":
                raise PlanError("SELECT … INTO UNLOGGED is not supported", sqlstate="0A000")
            named = in_pg_temp(name(m["name"])) if m["temp"] else name(m["name"])
            args = {"name": named, "columns": None, "ine": False, "nodata": False}
            return Statement("create_table", text, None, args | {"query": query})
    return None


_ALTER_HEAD = re.compile(
    rf"ALTER\s+TABLE\s+(?P<ie>IF\s+EXISTS\s+)?(?:ONLY\s+)?(?P<name>{QNAME})\s+(?P<rest>.+)",
    re.I | re.S,
)
_ACTION = re.compile(r"(?:ADD|DROP|ALTER|RENAME)\b", re.I)


def _alter_actions(text: str) -> Statement | None:
    """``ALTER TABLE t action, action…`` (ADD, DROP and ALTER actions; a RENAME among them is
    refused when run) as one statement whose ``actions`` are the single-action statements;
    None for other text."""
    m = _ALTER_HEAD.fullmatch(text)
    if m is None:
        return None
    parts = [p.strip() for p in commas(m["rest"])]
    if len(parts) < 2 or not all(_ACTION.match(p) for p in parts):
        return None
    actions = [parse(f"ALTER TABLE {m['name']} {p}") for p in parts]
    g = {"action": "many", "name": name(m["name"]), "ie": bool(m["ie"]), "actions": actions}
    return Statement("alter_table", text, None, g)


def _short(text: str) -> str:
    return repr(text if len(text) < 80 else text[:77] + "...")


def _query(kind: str, text: str, args: dict[str, Any] | None = None) -> Statement:
    """A query, with a trailing ``AS OF t`` taken off (sqlglot does not know it)."""
    args = dict(args or {})
    m = _AS_OF.fullmatch(text)
    if m and not args.get("as_of"):
        text, args["as_of"] = m["query"] + (m["tail"] or ""), m["as_of"]
    return _shared(kind, text, args)


def _parenthesised(text: str) -> tuple[str, str]:
    """The inside of the parentheses ``text`` starts with, and what follows them."""
    depth, quote = 0, False
    for i, ch in enumerate(text):
        if ch == "'":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth == 0:
                return text[1:i], text[i + 1 :].strip()
    raise PlanError(f"unbalanced parentheses in {_short(text)}", sqlstate="42601")


_TAIL = re.compile(
    r"(?:WITH\s*\((?P<with>[^)]*)\))?\s*(?:AS\s+OF\s+(?:AT\s+LEAST\s+)?(?P<as_of>.+?))?\s*"
    r"(?:UP\s+TO\s+(?P<up_to>.+?))?",
    re.IGNORECASE | re.DOTALL,
)


def _subscribe_tail(text: str, query: str) -> dict[str, Any]:
    """The parts of ``SUBSCRIBE (query) <tail>`` with the query cut at its parenthesis."""
    tail = text[text.index(query) + len(query) + 1 :].strip()
    m = _TAIL.fullmatch(tail)
    if m is None:
        raise PlanError(f"syntax error at {_short(tail)} in SUBSCRIBE", sqlstate="42601")
    return {"item": None, "query": f"({query})", **m.groupdict()}


def _statement(kind: str, text: str, g: dict[str, Any]) -> Statement:
    if kind.startswith("alter_") and kind != "alter_sequence":  # ALTER TABLE forms
        action = kind.removeprefix("alter_")
        g = {**g, "action": action, "name": name(g["name"]), "ie": bool(g["ie"])}
        g["cie"] = bool(g.get("cie"))
        if action != "add":
            g["column"] = name(g["column"])
        if g.get("new"):
            g["new"] = name(g["new"])
        g["cascade"] = (g.get("mode") or "").upper() == "CASCADE"
        return Statement("alter_table", text, None, g)
    if kind == "owner_to":
        kind_word = " ".join(g["kind"].lower().split())
        found = {"name": name(g["name"]), "role": name(g["role"]), "ie": bool(g["ie"])}
        return Statement(kind, text, None, {**found, "kind": kind_word})
    if kind == "set_constraints":  # a qualified name's constraint by its own name
        named = g["names"] and [n.split(".")[-1] for n in names(g["names"])]
        return Statement(kind, text, None, {"names": named or None, "mode": g["mode"]})
    if kind in SET_KINDS:
        kind, args = set_statement(kind, g)
        return Statement(kind, text, None, args)
    if kind in ("create_source", "create_sink", "create_view", "create_index", "rename"):
        for key in ("name", "item", "new"):
            if g.get(key):
                g[key] = name(g[key].strip())
    if kind == "create_view":
        query = _query("select", g["query"])
        g["materialized"] = bool(g["materialized"])
        g["with"] = options(g.get("with"))
        g["columns"] = [name(c) for c in g["columns"].split(",")] if g.get("columns") else None
        return Statement(kind, text, query.ast, {**g, **query.args})
    if kind in ("explain",):
        query = _query("select", g["query"])
        return Statement(kind, text, query.ast, query.args)
    if kind == "subscribe":
        if g.get("query"):  # the regex may have taken more than the parenthesised query
            query, rest = _parenthesised(g["query"])
            if rest:
                return _statement(kind, text, _subscribe_tail(text, query))
            g["query"] = query
        ast = parse_sql(g["query"]) if g.get("query") else None
        if g.get("item"):
            g["item"] = name(g["item"])
        return Statement(kind, text, ast, {**g, "with": options(g.get("with"))})
    if kind in ("drop", "rename", "show_create", "show_items"):
        g["kind"] = kind_of(g["kind"])
    if kind in ("create_schema", "alter_sequence"):
        g["name"] = name(g["name"])
    if kind in ("drop", "truncate", "drop_schema", "drop_sequence"):
        g["names"] = names(g["names"])
        g["cascade"] = (g.get("mode") or "").upper() == "CASCADE"
    if kind == "explain_view":
        g["kind"] = kind_of(g["kind"])
    if kind in ("show_create", "show_columns", "explain_view", "refresh"):
        g["name"] = name(g["name"])
    if kind in ("create_source", "create_sink"):
        g["with"] = options(g.get("with"))
    for key in ("path", "target"):
        if g.get(key):
            g[key] = unquote(g[key])
    if kind == "create_sink":
        g["key"] = [name(k) for k in g["key"].split(",") if k.strip()]
    if kind == "comment":  # an empty comment is none, as in PostgreSQL
        g["text"] = None if g["text"].upper() == "NULL" else (unquote(g["text"]) or None)
    if kind == "create_index":
        check_clauses(g.get("method"), g.get("tail"))
        if g.get("key"):
            g["items"] = [item.strip() for item in commas(g["key"])]
            g["key"] = key_columns(commas(g["key"]))
    return Statement(kind, text, None, g)
