"""SQL functions: ``CREATE [OR REPLACE] FUNCTION name ([name] type [DEFAULT e], …) RETURNS
type [LANGUAGE sql] [IMMUTABLE | STABLE | VOLATILE] [STRICT | CALLED ON NULL INPUT] AS $$
SELECT … $$`` (or ``AS '…'``, or ``RETURN expr``) and ``DROP FUNCTION``, as PostgreSQL's SQL
functions of one value.

A call is planned as the function's body with its arguments in place of its parameters (by
name or ``$n``), each argument cast to its parameter's type and the value to the result type,
as PostgreSQL inlines a simple SQL function: a body of one expression becomes that expression,
any other query a scalar subquery; a STRICT function is NULL where an argument is. A view
keeps the body it was planned with. Refused (0A000): other languages (PL/pgSQL), set-returning
functions, OUT parameters and a second function of a name (overloading); a function shares
its name with the relations of its schema here."""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlglot import exp

from changeflow.adapter.catalog import CatalogState, Item, pinned_state, split_name
from changeflow.adapter.catalog_drops import DropRule, drop_items
from changeflow.adapter.result import Result
from changeflow.adapter.sql.dialect import PostgresCalls, parse_sql
from changeflow.adapter.sql.statements import Statement, name
from changeflow.compute.types import NULLTYPE, SqlType
from changeflow.errors import PlanError

#: the session's functions by name, for the planner (set with the search path)
USER_FUNCTIONS: ContextVar[Any] = ContextVar("user_functions", default=None)

_BODY = re.compile(
    r"\bAS\s+(?:\$(?P<tag>\w*)\$(?P<dollar>.*?)\$(?P=tag)\$|'(?P<quoted>(?:[^']|'')*)')"
    r"|\bRETURN\s+(?P<returned>.+)$",
    re.I | re.S,
)
_CLAUSE = (
    r"LANGUAGE|IMMUTABLE|STABLE|VOLATILE|STRICT|CALLED|RETURNS\s+NULL|SECURITY|PARALLEL|COST|"
    r"ROWS|LEAKPROOF|NOT\s+LEAKPROOF|SET|WINDOW|EXTERNAL"
)
_RETURNS = re.compile(rf"\bRETURNS\s+(?!NULL\s+ON)(?P<type>.+?)(?=\s+(?:{_CLAUSE})\b|\s*$)", re.I)


@dataclass(frozen=True)
class Function:
    """A SQL function of the catalog: its parameters' names (None: unnamed) and types, their
    defaults, its result type, its body's SQL and whether it is STRICT."""

    name: str
    params: tuple[tuple[str | None, str, str | None], ...]
    returns: str
    body: str
    strict: bool
    volatility: str = "v"  # provolatile: i(mmutable), s(table), v(olatile)

    @staticmethod
    def of(item: Item | None) -> Function | None:
        if item is None or item.kind != "function":
            return None
        o = item.options
        params = tuple((p[0], p[1], p[2]) for p in o["params"])
        volatility = o.get("volatility", "v")
        return Function(item.name, params, o["returns"], o["body"], o["strict"], volatility)

    def call(
        self, args: list[exp.Expression], within: frozenset[str] = frozenset()
    ) -> exp.Expression:
        """The call with ``args`` as the expression it stands for; the calls its body makes
        are marked as made ``within`` these functions (to refuse a recursion)."""
        given = len(args)
        needed = sum(1 for _, _, default in self.params if default is None)
        if not needed <= given <= len(self.params):
            shown = split_name(self.name)[1]
            message = f"function {shown} takes {len(self.params)} arguments, not {given}"
            raise PlanError(message, sqlstate="42883")
        values = [
            _cast(args[i], p[1], f"{self.name}({', '.join(q[1] for q in self.params)})")
            if i < given
            else _cast(parse_sql(f"SELECT {p[2]}").expressions[0], p[1])
            for i, p in enumerate(self.params)
        ]
        body = parse_sql(self.body)
        for call in body.find_all(exp.Anonymous):  # (not the arguments' calls)
            call.meta["within"] = within
        if not isinstance(body, exp.Select) or len(body.expressions) != 1:
            raise PlanError(
                f"the body of function {self.name} is not one query of one value", sqlstate="0A000"
            )
        plain = not any(body.args.get(k) for k in body.args if k != "expressions")
        names = {p[0]: i for i, p in enumerate(self.params) if p[0]}

        def placed(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and not node.table and node.name.lower() in names:
                return values[names[node.name.lower()]].copy()
            if isinstance(node, exp.Parameter | exp.Placeholder):
                at = int(str(node.name or node.this).lstrip("$") or 0) - 1
                if 0 <= at < len(values):
                    return values[at].copy()
            return node

        body = body.transform(placed)
        value = body.expressions[0].unalias() if plain else exp.Subquery(this=body)
        value = _cast(value, self.returns)
        if self.strict and values:
            nulls = [exp.Is(this=v.copy(), expression=exp.Null()) for v in values]
            value = exp.Case(ifs=[exp.If(this=exp.or_(*nulls), true=exp.Null())], default=value)
        return exp.Paren(this=value)


def _cast(node: exp.Expression, kind: str, call: str | None = None) -> exp.Expression:
    """``node`` cast to ``kind``; an argument of ``call`` (a function's signature) only by
    an implicit cast, as PostgreSQL picks a function (:func:`implicitly`)."""
    cast = exp.Cast(this=node, to=exp.DataType.build(kind, dialect=PostgresCalls, udt=True))
    if call is not None:
        cast.meta["argument_of"] = call
    return cast


_DATES = ("date", "timestamp", "timestamp with time zone")
_TEXTS = ("text", "name", "character", "character varying")


def implicitly(node: exp.Cast, source: SqlType, target: SqlType) -> None:
    """42883 if ``node`` casts a function's argument of type ``source`` to its parameter's
    ``target`` and PostgreSQL has no implicit cast between them (numeric to integer, text to
    a number…): no function of that name takes such an argument."""
    call = node.meta.get("argument_of")
    if call is None or source in (target, NULLTYPE):
        return
    if source.numeric and target.numeric and source.rank <= target.rank:
        return
    if source.name in _TEXTS and target.name in _TEXTS:
        return
    dates = [_DATES.index(k.name) if k.name in _DATES else -1 for k in (source, target)]
    if 0 <= dates[0] <= dates[1]:
        return
    shown, params = split_name(call.split("(")[0])[1], call.split("(", 1)[1].rstrip(")")
    message = f"function {shown}({source}) does not exist"  # (PostgreSQL's, of one argument)
    if "," in params:
        message = f"function {split_name(call)[1]} does not take an argument of type {source}"
    raise PlanError(
        message,
        sqlstate="42883",
        hint="No function matches the given name and argument types. You might need to add "
        "explicit type casts.",
    )


def function_named(state: CatalogState, fname: str) -> Function | None:
    return Function.of(state.find(fname))


def inline_calls(tree: exp.Expression) -> exp.Expression:
    """``tree`` with each call of a catalog function replaced by what it stands for (before
    a query is planned, so a body's subqueries are planned as the query's own)."""
    if USER_FUNCTIONS.get() is None or tree.find(exp.Anonymous) is None:
        return tree  # (no call a catalog function could be)

    def inlined(node: exp.Expression) -> exp.Expression:
        body = user_call(node)
        if body is None:
            return node
        shown = isinstance(node.parent, exp.Select) and node.arg_key == "expressions"
        call = node.expression if isinstance(node, exp.Dot) else node  # (s.f(x): named f)
        return exp.alias_(body, str(call.this).lower()) if shown else body  # named as the call

    return tree.transform(inlined, copy=False)


def functions_called(tree: exp.Expression | None, state: CatalogState) -> frozenset[str]:
    """The catalog names of the functions of the catalog ``tree`` calls (a view depends on
    them, as PostgreSQL's does)."""
    calls = tree.find_all(exp.Anonymous) if tree is not None else ()
    found = (state.find(_called(c)) for c in calls)
    return frozenset(i.name for i in found if i is not None and i.kind == "function")


def _called(call: exp.Anonymous) -> str:
    """The name a call names its function by (``s.f`` for ``s.f(x)``)."""
    parent = call.parent
    schema = f"{parent.this.name.lower()}." if isinstance(parent, exp.Dot) else ""
    return schema + str(call.this).lower()


def user_call(node: exp.Expression) -> exp.Expression | None:
    """The expression a call of a catalog function stands for, None if ``node`` is not one."""
    lookup = USER_FUNCTIONS.get()
    schema = ""
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous):
        schema, node = f"{node.this.name.lower()}.", node.expression  # s.f(x): f of schema s
    if lookup is None or not isinstance(node, exp.Anonymous):
        return None
    found = lookup(schema + str(node.this).lower())
    if found is None and schema:  # (no built-in function is called by a schema's name here)
        message = f"function {schema}{str(node.this).lower()} does not exist"
        raise PlanError(message, sqlstate="42883")
    if found is None:
        return None
    within = node.meta.get("within", frozenset())  # the functions whose bodies it is in
    if found.name in within:
        raise PlanError(
            f"function {split_name(found.name)[1]} calls itself: recursive SQL functions are "
            "not supported here (WITH RECURSIVE is)",
            sqlstate="0A000",
        )
    state = pinned_state()  # the statement's catalog: EXECUTE on the function (42501)
    if state is not None and state.access and (item := state.by_name(found.name)) is not None:
        from changeflow.adapter.privilege_checks import require

        require(state, item, "X")
    return found.call(list(node.expressions), within | {found.name})


# -- the statements ----------------------------------------------------------------------------


def create_function(env: Any, stmt: Statement) -> Result:
    """``CREATE [OR REPLACE] FUNCTION``."""
    g = stmt.args
    rest = g["rest"]
    params_text, rest = _parameters(rest)
    body = _BODY.search(rest)
    if body is None:
        raise PlanError(f"function {g['name']} has no body (AS '…' or RETURN …)", sqlstate="42P13")
    clauses = rest[: body.start()] + " " + rest[body.end() :]
    language = re.search(r"\bLANGUAGE\s+'?(\w+)'?", clauses, re.I)
    if language is not None and language[1].lower() != "sql":
        raise PlanError(
            f"LANGUAGE {language[1]} is not supported: functions here are LANGUAGE sql, one "
            "query of one value",
            sqlstate="0A000",
        )
    returns = _RETURNS.search(clauses)
    if returns is None:
        raise PlanError(f"function {g['name']} needs RETURNS type", sqlstate="42P13")
    kind = returns["type"].strip()
    if re.match(r"(SETOF|TABLE|TRIGGER|VOID|RECORD)\b", kind, re.I):
        raise PlanError(
            f"RETURNS {kind.split()[0].upper()} is not supported: functions here return one value",
            sqlstate="0A000",
        )
    if body["returned"] is not None:
        text = f"SELECT {body['returned'].strip().rstrip(';')}"
    else:
        text = body["dollar"] if body["dollar"] is not None else body["quoted"].replace("''", "'")
    text = text.strip().rstrip(";").strip()
    strict = re.search(r"\bSTRICT\b|\bRETURNS\s+NULL\s+ON\s+NULL\s+INPUT\b", clauses, re.I)
    state = env.catalog.load()
    fname = state.creation_name(name(g["name"]))
    volatility = re.search(r"\b(IMMUTABLE|STABLE|VOLATILE)\b", clauses, re.I)
    volatility_code = volatility[1][0].lower() if volatility else "v"
    function = Function(fname, _params(params_text), kind, text, bool(strict), volatility_code)
    _check(function)
    old = state.by_name(fname)
    if old is not None and not (g.get("replace") and old.kind == "function"):
        if old.kind == "function":
            raise PlanError(
                f"function {split_name(fname)[1]} already exists (a second function of one name "
                "is not supported here)",
                sqlstate="42723",
            )
        raise PlanError(f'relation "{split_name(fname)[1]}" already exists', sqlstate="42P07")
    options = {
        "params": [list(p) for p in function.params],
        "returns": kind,
        "body": text,
        "strict": function.strict,
        "volatility": function.volatility,
    }

    def add(state: CatalogState) -> tuple[CatalogState, None]:
        item_id, state = (old.id, state) if old is not None else state.allocate()
        return state.with_item(Item(item_id, fname, "function", stmt.text, options=options)), None

    env.catalog.change(add)
    return Result("CREATE FUNCTION")


def _check(function: Function) -> None:
    """Plan a call of ``function`` with NULL arguments now, to refuse a bad body (42703, 42804,
    42883…) as CREATE FUNCTION does."""
    from changeflow.adapter.sql.scalar import Scalars
    from changeflow.adapter.sql.scope import Scope

    call = function.call([exp.Null() for p in function.params if p[2] is None])
    if isinstance(call.this, exp.Subquery) or call.find(exp.Subquery):
        return  # a query of tables: planned where it is called
    Scalars(Scope([]), (), "a function's body")(call)


def _parameters(text: str) -> tuple[str, str]:
    """The text inside the parameter list's parentheses, and what follows it."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == ")":
            return text[1:i], text[i + 1 :]
    raise PlanError("syntax error: the parameter list is not closed", sqlstate="42601")


def _params(text: str) -> tuple[tuple[str | None, str, str | None], ...]:
    """Each parameter's name (None if unnamed), type and DEFAULT's SQL (None if none)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    out = []
    for part in (p.strip() for p in parts if p.strip()):
        pieces = re.split(r"\s+DEFAULT\s+|\s*=\s*", part, maxsplit=1, flags=re.I)
        part, default = pieces[0], pieces[1] if len(pieces) > 1 else ""
        mode = re.match(r"(IN|OUT|INOUT|VARIADIC)\s+", part, re.I)
        if mode is not None:
            if mode[1].upper() != "IN":
                raise PlanError(f"{mode[1].upper()} parameters are not supported", sqlstate="0A000")
            part = part[mode.end() :]
        pname, kind = None, part
        first, _, rest = part.partition(" ")
        try:  # a name, then its type (else a type alone: double precision…)
            exp.DataType.build(rest.strip(), dialect=PostgresCalls)
            pname, kind = first.strip('"') if first.startswith('"') else first.lower(), rest
        except Exception:  # noqa: BLE001, S110 - sqlglot's own: not a type
            pass
        out.append((pname, kind.strip(), default.strip() or None))
    return tuple(out)


_FUNCTION_DROP = DropRule(
    kind="function",
    noun="function",
    missing="function {name} does not exist",
    skipped="function {name}() does not exist, skipping",
    missing_sqlstate="42883",
    hint="Drop the views that call it first.",
    dependents_of=lambda state, item: [
        f"{u.kind} {u.name} depends on function {item.name}" for u in state.dependents(item.id)
    ],
)


def drop_function(env: Any, stmt: Statement, keep: list[Item] | None = None) -> Result:
    """``DROP FUNCTION [IF EXISTS] name [(types)], … [CASCADE | RESTRICT]``: ``keep`` (a
    transaction's) takes the dropped functions aside instead, for its COMMIT to release or
    its ROLLBACK to put back."""
    parts = re.split(r",\s*(?![^()]*\))", stmt.args["names"].strip())
    names = [name(part.split("(")[0].strip()) for part in parts]
    notices = drop_items(env, names, stmt.args, _FUNCTION_DROP, keep)
    return Result("DROP FUNCTION", notices=notices)


# -- the catalogs ------------------------------------------------------------------------------


def function_rows(state: CatalogState) -> list[tuple[Any, ...]]:
    """pg_proc's rows of the catalog's functions (prolang 14: sql)."""
    from changeflow.adapter.system_indexes import relation_oid
    from changeflow.adapter.system_tables import namespace_oid

    rows = []
    for item in state.items.values():
        f = Function.of(item)
        if f is None:
            continue
        schema, fname = split_name(item.name)
        args = " ".join(str(_type_oid(k)) for _, k, _ in f.params)
        head = (relation_oid(item), fname, namespace_oid(state, schema), 10, 14, "f", f.strict)
        rows.append((*head, False, f.volatility, len(f.params), _type_oid(f.returns), args))
        rows[-1] += (f.body, "u", False, None)
    return rows


class Shown(NamedTuple):
    """pg_get_function_result's and pg_get_function_arguments' texts of a function."""

    result: str
    arguments: str


def function_texts(state: CatalogState) -> dict[int, Shown]:
    """pg_get_function_result's and pg_get_function_arguments' texts of the catalog's
    functions, by OID."""
    from changeflow.adapter.system_indexes import relation_oid

    out = {}
    for item in state.items.values():
        f = Function.of(item)
        if f is not None:
            shown = [
                " ".join(filter(None, (n, _type_name(k), d and f"DEFAULT {_default(d, k)}")))
                for n, k, d in f.params
            ]
            out[relation_oid(item)] = Shown(_type_name(f.returns), ", ".join(shown))
    return out


def _default(sql: str, kind: str) -> str:
    from changeflow.adapter.deparse import default_shown

    return default_shown(sql, _type_oid(kind)) or sql


def _type_name(kind: str) -> str:
    from changeflow.adapter.system_enums import format_type

    return format_type(_type_oid(kind)) or kind


def _type_oid(kind: str) -> int:
    from changeflow.adapter.sql.types import column_type, text_length
    from changeflow.adapter.system_tables import TYPES

    node = exp.DataType.build(kind, dialect=PostgresCalls, udt=True)
    if node.this in (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR):
        return TYPES["character varying" if (text_length(node) or 1) > 0 else "character"][0]
    return TYPES.get(column_type(node)[0].name, (0,))[0]
