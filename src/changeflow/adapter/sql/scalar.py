"""SQL scalar expressions (sqlglot trees) into compute expressions over a plan's columns.

A :class:`Scalars` translates one clause's expressions over one input: columns by name through
a :class:`~changeflow.adapter.sql.scope.Scope`, literals with PostgreSQL's types (a quoted
literal next to a typed value takes that value's type), operators and functions through
:mod:`changeflow.compute.expr` and :mod:`changeflow.compute.functions`. Subqueries and
aggregates are planned elsewhere and arrive as ``replacements`` (or through ``hook``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from sqlglot import exp

from changeflow.adapter.sql import whole_row
from changeflow.adapter.sql.arity import all_read
from changeflow.adapter.sql.array_scalars import ArrayScalars, is_any_all
from changeflow.adapter.sql.char_scalars import CharScalars
from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.enum_order import compared, enum_function, extreme
from changeflow.adapter.sql.jsonb_scalars import (
    JSON_FIRST,
    JSONB_FIRST,
    JsonbScalars,
    variadic_path,
)
from changeflow.adapter.sql.number_scalars import NumberScalars
from changeflow.adapter.sql.pattern_scalars import PatternScalars
from changeflow.adapter.sql.scope import Scope, unsupported
from changeflow.adapter.sql.session_values import session_value
from changeflow.adapter.sql.statistics import STATISTICS
from changeflow.adapter.sql.time_scalars import TimeScalars
from changeflow.adapter.sql.types import cast_target, domain_of, sized
from changeflow.adapter.sql.unknown_args import read_unknown
from changeflow.adapter.sql_functions import implicitly
from changeflow.compute import expr as X
from changeflow.compute import scalars as S
from changeflow.compute.functions import Func, variadic
from changeflow.compute.scalars import STATEMENT_TIME
from changeflow.compute.types import (
    BOOL,
    DATE,
    INTERVAL,
    JSON,
    JSONB,
    NULLTYPE,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Schema,
    SqlType,
)
from changeflow.errors import EvalError, PlanError

AGGREGATE_NODES: dict[type, str] = {
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Min: "min",
    exp.Max: "max",
    exp.Avg: "avg",
    exp.LogicalAnd: "bool_and",
    exp.LogicalOr: "bool_or",
    exp.GroupConcat: "string_agg",
    exp.ArrayAgg: "array_agg",
    **STATISTICS,
}
SUBQUERY_NODES = (exp.Subquery, exp.Exists)

_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_CMP = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_SIMPLE_FUNCS = {
    exp.Lower: "lower",
    exp.MD5: "md5",
    exp.Upper: "upper",
    exp.Reverse: "reverse",
    exp.Abs: "abs",
    exp.Floor: "floor",
    exp.Ceil: "ceil",
    exp.Sign: "sign",
    exp.Sqrt: "sqrt",
    exp.Ln: "ln",
    exp.Exp: "exp",
    exp.Ascii: "ascii",
    exp.Hex: "to_hex",
}
STAMPS = (DATE, TIMESTAMP, TIMESTAMPTZ)


def is_aggregate(node: exp.Expression) -> bool:
    if type(node) in AGGREGATE_NODES:
        return True
    return isinstance(node, exp.Anonymous) and str(node.this).lower() in ("every",)


def is_string_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def bare(node: exp.Expression) -> exp.Expression:
    """``node`` without its parentheses (``(('3'))`` is still an unknown-typed literal)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def is_mz_now(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "mz_now"


def contains(node: exp.Expression, test: Callable[[exp.Expression], bool]) -> bool:
    """Does ``node`` or a descendant pass ``test``, not looking into subqueries?"""
    return any(test(n) for n in walk(node))


def walk(node: exp.Expression) -> list[exp.Expression]:
    """``node`` and its descendants, without entering a nested query."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        if n is not node and isinstance(n, exp.Query):
            continue
        if isinstance(n, exp.In) and n.args.get("query") is not None:
            todo.append(n.this)
            continue
        if isinstance(n, SUBQUERY_NODES) and n is not node:
            continue
        todo.extend(n.iter_expressions())
    return out


def literal_value(node: exp.Literal) -> X.Lit:
    """A literal with PostgreSQL's type: integer, bigint, numeric or text."""
    text = str(node.this)
    if node.is_string:
        return X.Lit(text, TEXT)
    try:
        if text.isdigit():
            value = int(text)
            return X.lit(value) if value < 2**63 else X.Lit(Decimal(text), NUMERIC)
        number = Decimal(text)
    except ArithmeticError:
        raise PlanError(f"invalid number {text!r}", sqlstate="22P02") from None
    if "e" in text.lower():
        number = Decimal(format(number, "f"))
    return X.Lit(number, NUMERIC)


def coerce_text(value: str, kind: SqlType) -> X.Lit:
    """A quoted literal read as a value of ``kind`` (PostgreSQL's unknown-type literal)."""
    try:
        return X.Lit(S.from_text(value, kind), kind)
    except EvalError as e:
        raise PlanError(e.message, sqlstate=e.fields.get("sqlstate", "22P02")) from None


@dataclass
class Scalars(ArrayScalars, CharScalars, JsonbScalars, NumberScalars, PatternScalars, TimeScalars):
    """Expressions of one clause (``clause``, for errors) over ``schema``, named by ``scope``."""

    scope: Scope
    schema: Schema
    clause: str
    replacements: dict[int, X.Expr] = field(default_factory=dict)
    hook: Callable[[exp.Expression], X.Expr | None] | None = None
    allow_now: bool = False

    def __call__(self, node: exp.Expression) -> X.Expr:
        """``node`` as a compute expression; type errors say in which clause."""
        try:
            return self.expr(node)
        except PlanError as e:
            if "clause" in e.fields:
                raise
            fields = {**e.fields, "clause": self.clause}
            raise PlanError(
                f"{e.message} (in {self.clause}: {node.sql(dialect=PostgresCalls)})", **fields
            ) from None

    def expr(self, node: exp.Expression) -> X.Expr:
        if id(node) in self.replacements:
            return self.replacements[id(node)]
        if self.hook is not None:
            found = self.hook(node)
            if found is not None:
                return found
        constant = session_value(node, self.expr)
        if constant is not None:
            return constant
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is not None:
            return all_read(node, method(node), (), self.expr)
        if type(node) in _ARITH:
            return self._arith(node)
        if type(node) in _CMP:
            return self._cmp(_CMP[type(node)], node.this, node.expression)
        if type(node) in _SIMPLE_FUNCS:
            name = _SIMPLE_FUNCS[type(node)]
            return all_read(node, self.func(name, [node.this]), (name,), self.expr)
        if is_aggregate(node):
            raise PlanError(
                f"aggregate functions are not allowed in {self.clause}", sqlstate="42803"
            )
        raise unsupported(f"{type(node).__name__} in {self.clause}", node)

    # -- leaves ------------------------------------------------------------------------------

    def column(self, index: int, name: str = "") -> X.Col:
        c = self.schema[index]
        return X.Col(index, c.type, c.nullable, name or c.name)

    def _column(self, node: exp.Column) -> X.Expr:
        if isinstance(node.this, exp.Star):
            raise unsupported(f"* in {self.clause}", node)
        if (row := whole_row.columns(self, node)) is not None:
            return whole_row.record(row)
        f = self.scope.resolve(node)
        return self.column(f.index, f.name)

    def _literal(self, node: exp.Literal) -> X.Expr:
        return literal_value(node)

    def _null(self, node: exp.Null) -> X.Expr:
        return X.Lit(None)

    def _boolean(self, node: exp.Boolean) -> X.Expr:
        return X.Lit(bool(node.this), BOOL)

    def _paren(self, node: exp.Paren) -> X.Expr:
        return self.expr(node.this)

    def _star(self, node: exp.Star) -> X.Expr:
        raise unsupported(f"* in {self.clause}", node)

    def _anonymous(self, node: exp.Anonymous) -> X.Expr:
        name = str(node.this).lower()
        if name == "row_to_json" and (found := whole_row.to_json(self, node)) is not None:
            return found
        if name in whole_row.TAKING_ROWS:  # to_json(t), json_build_object('k', t)…
            self.replacements |= whole_row.rows_as_json(self, node.expressions)
        if name == "mz_now":
            if node.expressions:
                raise PlanError("mz_now() takes no arguments", sqlstate="42883")
            if not self.allow_now:
                raise PlanError(
                    f"mz_now() is not allowed in {self.clause}: it may appear only in WHERE "
                    "or HAVING, compared with an expression",
                    sqlstate="0A000",
                )
            return X.MzNow()
        if name == "pg_sleep":
            return self.sleep(list(node.expressions))
        if name == "every":
            raise PlanError(
                f"aggregate functions are not allowed in {self.clause}", sqlstate="42803"
            )
        return self.func(name, list(node.expressions))

    # -- operators ---------------------------------------------------------------------------

    def pair(self, a: exp.Expression, b: exp.Expression) -> tuple[X.Expr, X.Expr]:
        """Both operands; a quoted literal takes the other side's type."""
        ea, eb = self.expr(a), self.expr(b)
        a, b = bare(a), bare(b)
        if is_string_literal(a) and eb.type not in (TEXT, NULLTYPE):
            ea = self.retype(str(a.this), eb)
        if is_string_literal(b) and ea.type not in (TEXT, NULLTYPE):
            eb = self.retype(str(b.this), ea)
        return self.blank_literals(a, b, ea, eb)

    def retype(self, text: str, other: X.Expr) -> X.Lit:
        kind = TIMESTAMPTZ if isinstance(other, X.MzNow) else other.type
        value = coerce_text(text, kind)
        if isinstance(other, X.MzNow):
            return X.Lit(int(value.value.timestamp() * 1000), other.type)
        return value

    def _arith(self, node: exp.Expression) -> X.Expr:
        if isinstance(node, exp.Sub) and (j := self.jsonb_operator(node)) is not None:
            return j
        a, b = self.pair(node.this, node.expression)
        e = X.Arith(_ARITH[type(node)], a, b)
        if INTERVAL in (a.type, b.type) and isinstance(a, X.Lit) and isinstance(b, X.Lit):
            try:  # a constant (DATE '1998-12-01' - INTERVAL '90' DAY) keeps Spark's plans
                return X.Lit(e.eval(()), e.type)
            except EvalError:
                pass  # raised when evaluated, as PostgreSQL raises it
        return e

    def _neg(self, node: exp.Neg) -> X.Expr:
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            value = literal_value(inner).value
            return X.lit(-value) if isinstance(value, int) else X.Lit(-value, NUMERIC)
        return X.Neg(self.expr(inner))

    def _cmp(self, op: str, a: exp.Expression, b: exp.Expression) -> X.Expr:
        if is_any_all(b):
            return self.any_all(op, a, b)
        ea, eb = self.pair(a, b)
        if isinstance(ea, X.MzNow) and eb.type in STAMPS:
            eb = Func("epoch_ms", (eb,))
        if isinstance(eb, X.MzNow) and ea.type in STAMPS:
            ea = Func("epoch_ms", (ea,))
        return X.Cmp(op, *compared(op, ea, eb))

    def _nullsafeeq(self, node: exp.NullSafeEQ) -> X.Expr:
        a, b = self.pair(node.this, node.expression)
        both_null = X.And((X.IsNull(a), X.IsNull(b)))
        return X.Coalesce((X.Cmp("=", a, b), both_null))

    def _nullsafeneq(self, node: exp.NullSafeNEQ) -> X.Expr:
        a, b = self.pair(node.this, node.expression)
        both_null = X.And((X.IsNull(a), X.IsNull(b)))
        return X.Not(X.Coalesce((X.Cmp("=", a, b), both_null)))

    def _and(self, node: exp.And) -> X.Expr:
        return X.And((self.boolean_operand(node.this), self.boolean_operand(node.expression)))

    def _or(self, node: exp.Or) -> X.Expr:
        return X.Or((self.boolean_operand(node.this), self.boolean_operand(node.expression)))

    def _not(self, node: exp.Not) -> X.Expr:
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return X.IsNull(self.expr(inner.this), negated=True)
        return X.Not(self.boolean_operand(inner))

    def _is(self, node: exp.Is) -> X.Expr:
        a = self.expr(node.this)
        target = node.expression
        negated = bool(node.args.get("negate"))
        if isinstance(target, exp.Null) and not target.meta.get("unknown"):
            return X.IsNull(a, negated=negated)
        if isinstance(target, exp.Boolean | exp.Null):  # IS [NOT] TRUE, FALSE or UNKNOWN
            word = "UNKNOWN" if isinstance(target, exp.Null) else str(target).upper()
            if a.type not in (BOOL, NULLTYPE):
                message = f"argument of IS {word} must be type boolean, not type {a.type}"
                raise PlanError(message, sqlstate="42804")
            if isinstance(target, exp.Null):
                return X.IsNull(a, negated=negated)
            cond = a if target.this else X.Not(a)
            out = X.Case(((cond, X.Lit(True, BOOL)),), X.Lit(False, BOOL))
            return X.Not(out) if negated else out
        raise unsupported("IS with this operand", node)

    def _between(self, node: exp.Between) -> X.Expr:
        x, low, high = node.this, node.args["low"], node.args["high"]
        out = X.And((self._cmp(">=", x, low), self._cmp("<=", x, high)))
        if node.args.get("symmetric"):  # either way round, as PostgreSQL reads it
            out = X.Or((out, X.And((self._cmp(">=", x, high), self._cmp("<=", x, low)))))
        return out

    def _in(self, node: exp.In) -> X.Expr:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise unsupported(f"a subquery in {self.clause}", node)
        a = self.expr(node.this)
        items = tuple(self.compared_literal(a, item) for item in node.expressions)
        return X.InList(self.as_text(a), items)

    def _dpipe(self, node: exp.DPipe) -> X.Expr:
        if joined := self.jsonb_operator(node) or self.array_operator(node) or self.bytea_cat(node):
            return joined
        texts = (self.as_text(self.expr(node.this)), self.as_text(self.expr(node.expression)))
        return Func("textcat", tuple(e if e.type == TEXT else X.Cast(e, TEXT) for e in texts))

    # -- conditionals ------------------------------------------------------------------------

    def unify(self, nodes: list[exp.Expression]) -> list[X.Expr]:
        """Branches of CASE or COALESCE; quoted literals take the other branches' type."""
        exprs = [self.expr(n) for n in nodes]
        typed = [e for n, e in zip(nodes, exprs, strict=True) if not is_string_literal(n)]
        try:
            kind = X.common_type(tuple(typed), "CASE")
        except PlanError:
            return exprs
        if kind in (TEXT, NULLTYPE):
            return self.char_branches(nodes, exprs)
        return [
            coerce_text(str(n.this), kind) if is_string_literal(n) else e
            for n, e in zip(nodes, exprs, strict=True)
        ]

    def _case(self, node: exp.Case) -> X.Expr:
        subject = node.this
        ifs = node.args.get("ifs") or []
        default = node.args.get("default")
        results = self.unify([i.args["true"] for i in ifs] + ([default] if default else []))
        whens = []
        for i, result in zip(ifs, results, strict=False):
            cond = self._cmp("=", subject, i.this) if subject is not None else self.expr(i.this)
            whens.append((cond, result))
        otherwise = results[-1] if default is not None else X.Lit(None)
        return X.Case(tuple(whens), otherwise)

    def _if(self, node: exp.If) -> X.Expr:
        results = self.unify([node.args["true"]] + [node.args.get("false") or exp.Null()])
        return X.Case(((self.expr(node.this), results[0]),), results[1])

    def _coalesce(self, node: exp.Coalesce) -> X.Expr:
        return X.Coalesce(tuple(self.unify([node.this, *node.expressions])))

    def _nullif(self, node: exp.Nullif) -> X.Expr:
        return X.NullIf(*self.pair(node.this, node.expression))

    def _cast(self, node: exp.Cast) -> X.Expr:
        if (domain := domain_of(node.to)) is not None:  # its base type's value, checked
            return domain.checked(self._cast(exp.Cast(this=node.this, to=domain.base_type)))
        kind, scale = cast_target(node.to)
        inner = node.this
        if is_string_literal(inner):
            value: X.Expr = coerce_text(str(inner.this), kind)
        else:
            value = self.expr(inner)
            implicitly(node, value.type, kind)  # (a SQL function's argument)
            if node.to.this == exp.DataType.Type.UINT:
                return self.to_oid(value)
            if value.type != kind:
                value = X.Cast(value, kind)
        return sized(self.cast_text(value, node.to), node.to, scale)

    def _collate(self, node: exp.Collate) -> X.Expr:
        """``x COLLATE "C"``: text here compares by code point, as PostgreSQL's C does."""
        name = node.expression.name
        if name.lower() not in ("c", "posix", "default", "ucs_basic"):
            message = f'collation "{name}" is not supported: text compares by code point ("C")'
            raise PlanError(message, sqlstate="0A000")
        return self.expr(node.this)

    _trycast = _cast

    def _interval(self, node: exp.Interval) -> X.Expr:
        """``INTERVAL 'text' [unit]`` (sqlglot splits ``'1 month'`` into a number and a unit)."""
        if not is_string_literal(node.this) and not isinstance(node.this, exp.Literal):
            raise unsupported("INTERVAL of an expression (cast text to interval)", node)
        unit = node.args.get("unit")
        text = str(node.this.this) + (f" {unit.name}" if unit is not None else "")
        return coerce_text(text, INTERVAL)

    def _justifydays(self, node: exp.Expression) -> X.Expr:
        return self.func("justify_days", [node.this])

    def _justifyhours(self, node: exp.Expression) -> X.Expr:
        return self.func("justify_hours", [node.this])

    # -- functions ---------------------------------------------------------------------------

    def func(self, name: str, args: list[exp.Expression]) -> X.Expr:
        if args and isinstance(args[-1], exp.Variadic) and name.lower() in variadic.BASES:
            spread = [*map(self.expr, args[:-1]), self.expr(args[-1].this)]
            return Func(variadic.variadic_name(name.lower()), tuple(spread))
        args = variadic_path(name, args)
        first = JSONB if name.lower() in JSONB_FIRST else JSON
        jsonb_first = (
            name.lower() in JSONB_FIRST | JSON_FIRST and args and is_string_literal(args[0])
        )
        if jsonb_first:  # an unknown literal read as jsonb (or json)
            values = [coerce_text(str(args[0].this), first), *(self.expr(a) for a in args[1:])]
        elif (found := self.array_call(name, args)) is not None:
            return found
        else:
            values = self.shown_args(name, [self.expr(a) for a in args])
            if (named := self.text_typeof(name, values, args)) is not None:
                return named
            if (made := enum_function(name, values)) is not None:
                return made
        try:
            return Func(name, tuple(values))
        except PlanError as e:
            unknown = [
                i
                for i, a in enumerate(args)
                if is_string_literal(bare(a)) and (i or not jsonb_first)
            ]
            read = read_unknown(name, values, unknown) if e.sqlstate == "42883" else None
            if read is None:
                raise
            return Func(name, tuple(read))

    def _substring(self, node: exp.Substring) -> X.Expr:
        args = [node.this, node.args.get("start") or exp.Literal.number(1)]
        if node.args.get("length") is not None:
            args.append(node.args["length"])
        elif is_string_literal(args[1]) or self.expr(args[1]).type == TEXT:  # FROM a pattern:
            match = exp.Anonymous(this="regexp_match", expressions=args)  # 1st group or match
            return self.expr(exp.Bracket(this=match, expressions=[exp.Literal.number(1)]))
        return self.func("substring", args)

    def _trim(self, node: exp.Trim) -> X.Expr:
        position = str(node.args.get("position") or "BOTH").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "btrim")
        chars = node.args.get("expression")
        return self.func(name, [node.this] + ([chars] if chars is not None else []))

    def _currenttimestamp(self, node: exp.CurrentTimestamp) -> X.Expr:
        """now(): the start of the session's transaction, as PostgreSQL's (views refuse it);
        ``now`` takes no argument (``current_timestamp(p)`` takes a precision)."""
        if node.this is not None and node.meta.get("name") == "now":
            kind = self.expr(node.this).type
            raise PlanError(f"function now({kind}) does not exist", sqlstate="42883")
        return X.Lit(STATEMENT_TIME.get() or datetime.now(UTC), TIMESTAMPTZ)

    def _currentdate(self, node: exp.CurrentDate) -> X.Expr:
        return X.Lit((STATEMENT_TIME.get() or datetime.now(UTC)).date(), DATE)

    def _splitpart(self, node: exp.SplitPart) -> X.Expr:
        return self.func("split_part", [node.this, node.args["delimiter"], node.args["part_index"]])

    def _pad(self, node: exp.Pad) -> X.Expr:
        fill = node.args.get("fill_pattern")
        args = [node.this, node.expression] + ([fill] if fill is not None else [])
        return self.func("lpad" if node.args.get("is_left") else "rpad", args)

    def _length(self, node: exp.Length) -> X.Expr:
        encoding = node.args.get("encoding")  # length(bytea, name)
        name = "length" if node.meta.get("name", "length") == "length" else "char_length"
        return self.func(name, [node.this, *([encoding] if encoding is not None else [])])

    def _initcap(self, node: exp.Initcap) -> X.Expr:
        return self.func("initcap", [node.this] if node.this is not None else [])

    def _arraytostring(self, node: exp.ArrayToString) -> X.Expr:
        return self.func("array_to_string", _with_null(node))

    def _stringtoarray(self, node: exp.StringToArray) -> X.Expr:
        return self.func("string_to_array", _with_null(node))

    def _pi(self, node: exp.Pi) -> X.Expr:
        return self.func("pi", [])

    def _translate(self, node: exp.Translate) -> X.Expr:
        return self.func("translate", [node.this, node.args["from_"], node.args["to"]])

    def _replace(self, node: exp.Replace) -> X.Expr:
        return self.func("replace", [node.this, node.expression, node.args["replacement"]])

    def _strposition(self, node: exp.StrPosition) -> X.Expr:
        return self.func("position", [node.args["substr"], node.this])

    def _left(self, node: exp.Left) -> X.Expr:
        return self.func("left", [node.this, node.expression])

    def _right(self, node: exp.Right) -> X.Expr:
        return self.func("right", [node.this, node.expression])

    def _startswith(self, node: exp.StartsWith) -> X.Expr:
        return self.func("starts_with", [node.this, node.expression])

    def _repeat(self, node: exp.Repeat) -> X.Expr:
        return self.func("repeat", [node.this, node.args["times"]])

    def _concatws(self, node: exp.ConcatWs) -> X.Expr:
        return self.func("concat_ws", list(node.expressions))

    def _concat(self, node: exp.Concat) -> X.Expr:
        return self.func("concat", list(node.expressions))

    def _round(self, node: exp.Round) -> X.Expr:
        places = node.args.get("decimals")
        return self.func("round", [node.this] + ([places] if places is not None else []))

    def _trunc(self, node: exp.Expression) -> X.Expr:
        places = node.args.get("decimals") or node.args.get("expression")
        return self.func("trunc", [node.this] + ([places] if places is not None else []))

    def _pow(self, node: exp.Pow) -> X.Expr:
        return self.func("power", [node.this, node.expression])

    def _greatest(self, node: exp.Greatest) -> X.Expr:
        return extreme("greatest", self.unify([node.this, *node.expressions]))

    def _least(self, node: exp.Least) -> X.Expr:
        return extreme("least", self.unify([node.this, *node.expressions]))

    def _unixtotime(self, node: exp.UnixToTime) -> X.Expr:
        return self.func("to_timestamp", [node.this])

    def _window(self, node: exp.Window) -> X.Expr:
        if self.clause.endswith("()") or self.clause == "an aggregate":
            raise PlanError(
                "aggregate function calls cannot contain window function calls", sqlstate="42803"
            )
        raise PlanError(f"window functions are not allowed in {self.clause}", sqlstate="42P20")

    def _subquery(self, node: exp.Subquery) -> X.Expr:
        raise unsupported(f"a subquery in {self.clause}", node)

    def _exists(self, node: exp.Exists) -> X.Expr:
        raise unsupported(f"a subquery in {self.clause}", node)


def _with_null(node: exp.Expression) -> list[exp.Expression]:
    """The arguments of a call whose optional third is sqlglot's ``null``."""
    null = node.args.get("null")
    return [node.this, node.expression] + ([null] if null is not None else [])
