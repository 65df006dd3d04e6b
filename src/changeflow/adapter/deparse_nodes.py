"""Expressions as PostgreSQL's parser leaves them, for printing as its ruleutils does
(:mod:`~changeflow.adapter.deparse`): each node typed by a type OID, a quoted literal turned
into a constant of the type its context gives it, and the implicit casts PostgreSQL's
operator and function resolution adds (``n > 0`` of a numeric ``n`` compares with
``0::numeric``; a varchar is read as text)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from changeflow.adapter.deparse_types import (
    ANY_ARGS,
    ARRAYS,
    BOOL,
    BPCHAR,
    COMPARE,
    DATE,
    ELEMENTS,
    FLOAT8,
    FUNCS,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    NAME,
    NUMBERS,
    NUMERIC,
    STRINGS,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UNKNOWN,
    VARCHAR,
    common,
    numbers,
    partner,
    temporal,
)


@dataclass(frozen=True)
class Node:
    """A typed expression node (``type`` a type OID)."""

    type: int


@dataclass(frozen=True)
class Const(Node):
    """A constant: its type's output text (None: NULL)."""

    text: str | None = None
    typmod: int = -1


@dataclass(frozen=True)
class Var(Node):
    name: str = ""


@dataclass(frozen=True)
class Op(Node):
    """An operator of one (prefix) or two operands."""

    op: str = ""
    args: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Func(Node):
    """A call: ``name(args)``, or a form of the SQL grammar (``CURRENT_DATE``, ``COALESCE(…)``,
    ``SUBSTRING(… FROM … FOR …)``) given by ``form``."""

    name: str = ""
    args: tuple[Node, ...] = ()
    form: str = ""


@dataclass(frozen=True)
class Cast(Node):
    """A coercion to ``type`` (``typmod``): one written, or one resolution added
    (``implicit``, shown only inside an operator or a call)."""

    arg: Node = field(default_factory=lambda: Const(UNKNOWN))
    implicit: bool = False
    typmod: int = -1


@dataclass(frozen=True)
class Bool(Node):
    """AND, OR (of two or more) or NOT (of one)."""

    op: str = ""
    args: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Test(Node):
    """``arg IS [NOT] NULL``, ``arg IS [NOT] TRUE`` and the like (``what`` the words after
    the operand)."""

    arg: Node = field(default_factory=lambda: Const(UNKNOWN))
    what: str = ""


@dataclass(frozen=True)
class ArrayOf(Node):
    elements: tuple[Node, ...] = ()


@dataclass(frozen=True)
class AnyAll(Node):
    """``left op ANY (right)`` or ``… ALL (…)``."""

    op: str = ""
    left: Node = field(default_factory=lambda: Const(UNKNOWN))
    right: Node = field(default_factory=lambda: Const(UNKNOWN))
    all: bool = False


@dataclass(frozen=True)
class Case(Node):
    whens: tuple[tuple[Node, Node], ...] = ()
    default: Node | None = None


@dataclass(frozen=True)
class Subscript(Node):
    arg: Node = field(default_factory=lambda: Const(UNKNOWN))
    index: Node = field(default_factory=lambda: Const(UNKNOWN))


@dataclass(frozen=True)
class Raw(Node):
    """A form this module does not model, as sqlglot writes it."""

    text: str = ""


_KEYWORDS = {
    exp.CurrentDate: ("CURRENT_DATE", DATE),
    exp.CurrentTimestamp: ("CURRENT_TIMESTAMP", TIMESTAMPTZ),
    exp.Localtimestamp: ("LOCALTIMESTAMP", TIMESTAMP),
    exp.Localtime: ("LOCALTIME", TIME),
    exp.CurrentUser: ("CURRENT_USER", NAME),
}
_BINARY = {
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.DPipe: "||",
    exp.RegexpLike: "~",
    exp.JSONBContainsTopKey: "?",
    exp.ArrayContainsAll: "@>",
    exp.ArrayContainedBy: "<@",
}
_LIKES = {exp.Like: ("~~", "!~~"), exp.ILike: ("~~*", "!~~*")}


class Typer:
    """sqlglot expressions into typed :class:`Node` trees, reading ``columns`` (name to type
    OID) and ``normalize`` (a quoted literal's text as a type's output function writes it)."""

    def __init__(self, columns: Mapping[str, int], normalize: object) -> None:
        self.columns = columns
        self.normalize = normalize

    def node(self, e: exp.Expression) -> Node:
        """``e`` as a node; a unary ``+`` written before it (``meta["plus"]``) kept."""
        found = self._node(e)
        for _ in range(e.meta.get("plus", 0) if e.meta else 0):
            found = Op(found.type, "+", (found,))
        return found

    def _node(self, e: exp.Expression) -> Node:  # noqa: C901, PLR0911, PLR0912 (a dispatch)
        while isinstance(e, exp.Paren):
            e = e.this
        if isinstance(e, exp.Column):
            name = e.this.this if e.this.quoted else e.this.this.lower()
            return Var(self.columns.get(name, TEXT), name)
        if isinstance(e, exp.Literal):
            return _number(e.this) if not e.is_string else Const(UNKNOWN, e.this)
        if isinstance(e, exp.Null):
            return Const(UNKNOWN, None)
        if isinstance(e, exp.Boolean):
            return Const(BOOL, "true" if e.this else "false")
        if isinstance(e, exp.Neg):
            inner = e.this
            while isinstance(inner, exp.Paren) and not inner.meta.get("plus"):
                inner = inner.this
            if (
                isinstance(inner, exp.Literal)
                and not inner.is_string
                and not inner.meta.get("plus")
            ):
                return _number("-" + inner.this)
            arg = self.node(inner)
            return Op(arg.type, "-", (arg,))
        if _BINARY.get(type(e)) in COMPARE and _quantified(e.expression) is not None:
            return self._any(e)
        op = _BINARY.get(type(e))
        if op is not None:
            return self.binary(op, self.node(e.this), self.node(e.expression))
        if type(e) in _LIKES:
            words = _LIKES[type(e)][bool(e.args.get("negate"))]
            return self.binary(words, self.node(e.this), self.node(e.expression))
        if isinstance(e, exp.SimilarTo):
            return self._similar(e, "~")
        if isinstance(e, exp.JSONExtract | exp.JSONExtractScalar):
            return self._json(e)
        if isinstance(e, exp.And | exp.Or):
            kind = type(e)
            parts: list[exp.Expression] = []
            _flatten(e, kind, parts)
            word = "AND" if kind is exp.And else "OR"
            return Bool(BOOL, word, tuple(self.node(p) for p in parts))
        if isinstance(e, exp.Not):
            return self._not(e.this)
        if isinstance(e, exp.Is):
            return self._is(e, bool(e.args.get("negate")))
        if isinstance(e, exp.Between):
            x = self.node(e.this)
            low = self.binary(">=", x, self.node(e.args["low"]))
            high = self.binary("<=", x, self.node(e.args["high"]))
            return Bool(BOOL, "AND", (low, high))
        if isinstance(e, exp.In) and e.expressions:
            return self._in(e, negated=False)
        if isinstance(e, exp.NullSafeEQ):
            distinct = self._distinct(e)
            return Bool(BOOL, "NOT", (distinct,))
        if isinstance(e, exp.NullSafeNEQ):
            return self._distinct(e)
        if isinstance(e, exp.Cast):
            return self._cast(e)
        if isinstance(e, exp.Case):
            return self._case(e)
        if isinstance(e, exp.Array):
            items = [self.node(x) for x in e.expressions]
            kind = common([i.type for i in items])
            items = [coerce(i, kind, self.normalize) for i in items]
            return ArrayOf(ARRAYS.get(kind, TEXT), tuple(items))
        if isinstance(e, exp.Bracket) and len(e.expressions) == 1:
            arg = self.node(e.this)
            index = self.node(e.expressions[0])
            return Subscript(ELEMENTS.get(arg.type, TEXT), arg, index)
        return self._call(e)

    def binary(self, op: str, left: Node, right: Node) -> Node:
        """``left op right`` with its operands cast as PostgreSQL's operator resolution
        casts them."""
        lt, rt = left.type, right.type
        if op in ("?", "->>", "->", "~", "!~") or op.endswith("~~") or op.endswith("~~*"):
            target = TEXT if op != "->" or rt == UNKNOWN else rt
            if lt not in (JSON, JSONB, BPCHAR):
                left = coerce(left, TEXT, self.normalize)
            right = coerce(right, target, self.normalize)
            result = {"->>": TEXT, "->": JSONB}.get(op, BOOL)
            return Op(result, op, (left, right))
        if op == "@>" or op == "<@":
            left = coerce(left, rt if lt == UNKNOWN else lt, self.normalize)
            right = coerce(right, left.type, self.normalize)
            return Op(BOOL, op, (left, right))
        if lt == UNKNOWN and rt == UNKNOWN:
            lt = rt = TEXT
        elif lt == UNKNOWN:
            lt = partner(rt, op)
        elif rt == UNKNOWN:
            rt = partner(lt, op)
        if op == "||":
            lt = TEXT if lt in STRINGS else lt
            rt = TEXT if rt in STRINGS else rt
            result = TEXT
        elif lt in NUMBERS and rt in NUMBERS:
            lt, rt, result = numbers(lt, rt, op)
        elif lt in STRINGS and rt in STRINGS:
            if not (lt == rt == BPCHAR):
                lt = rt = TEXT
            result = lt
        else:
            result = temporal(lt, rt, op)
        left = coerce(left, lt, self.normalize)
        right = coerce(right, rt, self.normalize)
        return Op(BOOL if op in COMPARE else result, op, (left, right))

    def _json(self, e: exp.Expression) -> Node:
        op = "->>" if isinstance(e, exp.JSONExtractScalar) else "->"
        path = e.expression
        keys = path.expressions[1:] if isinstance(path, exp.JSONPath) else []
        if len(keys) == 1 and isinstance(keys[0], exp.JSONPathKey):
            key: Node = Const(UNKNOWN, str(keys[0].this))
        elif len(keys) == 1 and isinstance(keys[0], exp.JSONPathSubscript):
            key = Const(INT4, str(keys[0].this))
        else:
            key = self.node(path) if not isinstance(path, exp.JSONPath) else Raw(TEXT, path.sql())
        left = self.node(e.this)
        node = self.binary(op, left, key)
        assert isinstance(node, Op)
        result = TEXT if op == "->>" else (left.type if left.type in (JSON, JSONB) else JSONB)
        return Op(result, op, node.args)

    def _not(self, inner: exp.Expression) -> Node:
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Is):
            return self._is(inner, not inner.args.get("negate"))
        if isinstance(inner, exp.In) and inner.expressions:
            return self._in(inner, negated=True)
        if isinstance(inner, exp.Between):
            x = self.node(inner.this)
            low = self.binary("<", x, self.node(inner.args["low"]))
            high = self.binary(">", x, self.node(inner.args["high"]))
            return Bool(BOOL, "OR", (low, high))
        if isinstance(inner, exp.SimilarTo):
            return self._similar(inner, "!~")
        if isinstance(inner, exp.RegexpLike):  # !~, as sqlglot reads it
            return self.binary("!~", self.node(inner.this), self.node(inner.expression))
        if type(inner) in _LIKES:
            words = _LIKES[type(inner)][not inner.args.get("negate")]
            return self.binary(words, self.node(inner.this), self.node(inner.expression))
        return Bool(BOOL, "NOT", (self.node(inner),))

    def _similar(self, e: exp.Expression, op: str) -> Node:
        """SIMILAR TO as PostgreSQL rewrites it: a regular expression match of the pattern
        made one by ``similar_to_escape``."""
        pattern = coerce(self.node(e.expression), TEXT, self.normalize)
        return self.binary(op, self.node(e.this), Func(TEXT, "similar_to_escape", (pattern,)))

    def _is(self, e: exp.Is, negated: bool) -> Node:
        arg = self.node(e.this)
        what = e.expression
        if isinstance(what, exp.Boolean):
            arg = coerce(arg, BOOL, self.normalize)
            words = ("TRUE" if what.this else "FALSE") if isinstance(what, exp.Boolean) else ""
        elif isinstance(what, exp.Null):
            words = "UNKNOWN" if what.meta.get("unknown") else "NULL"
        else:
            words = what.sql("postgres").upper()
        return Test(BOOL, arg, f"IS {'NOT ' if negated else ''}{words}")

    def _in(self, e: exp.In, negated: bool) -> Node:
        op = "<>" if negated else "="
        left = self.node(e.this)
        items = [self.node(x) for x in e.expressions]
        if len(items) == 1:
            return self.binary(op, left, items[0])
        kind = common([left.type, *(i.type for i in items)])
        left = coerce(left, kind, self.normalize)
        items = [coerce(i, kind, self.normalize) for i in items]
        array: Node = ArrayOf(ARRAYS.get(kind, TEXT), tuple(items))
        if kind in (VARCHAR, NAME):  # compared as text
            left = coerce(left, TEXT, self.normalize)
            array = Cast(ARRAYS[TEXT], array, True)
        return AnyAll(BOOL, op, left, array, negated)

    def _any(self, e: exp.Expression) -> Node:
        found = _quantified(e.expression)
        assert found is not None
        every, inner = found
        left = self.node(e.this)
        right = self.node(inner)
        element = ELEMENTS.get(right.type)
        if element is not None:
            left = coerce(left, element, self.normalize)
        return AnyAll(BOOL, _BINARY[type(e)], left, right, every)

    def _distinct(self, e: exp.Expression) -> Node:
        node = self.binary("=", self.node(e.this), self.node(e.expression))
        assert isinstance(node, Op)
        return Op(BOOL, "IS DISTINCT FROM", node.args)

    def _cast(self, e: exp.Cast) -> Node:
        from changeflow.adapter.deparse import type_of

        target, typmod = type_of(e.args["to"])
        arg = self.node(e.this)
        if isinstance(arg, Const) and arg.type == UNKNOWN:
            if arg.text is None:
                return Const(target, None, typmod)
            return Const(target, _normal(self.normalize, arg.text, target), typmod)
        if arg.type == target and typmod < 0:
            return arg
        if isinstance(arg, ArrayOf) and not arg.elements:  # ARRAY[] takes the cast's type
            return ArrayOf(target)
        return Cast(target, arg, False, typmod)

    def _case(self, e: exp.Case) -> Node:
        whens = [(self.node(i.this), self.node(i.args["true"])) for i in e.args.get("ifs") or []]
        default = self.node(e.args["default"]) if e.args.get("default") is not None else None
        kind = common([r.type for _, r in whens] + ([default.type] if default else []))
        norm = self.normalize
        whens = [(coerce(c, BOOL, norm), coerce(r, kind, norm)) for c, r in whens]
        default = coerce(default, kind, self.normalize) if default is not None else None
        return Case(kind, tuple(whens), default)

    def _call(self, e: exp.Expression) -> Node:  # noqa: PLR0911 (one case a form)
        keyword = _KEYWORDS.get(type(e))
        if keyword is not None:
            name = e.meta.get("name")
            if isinstance(e, exp.CurrentTimestamp) and name not in (None, "current_timestamp"):
                return Func(TIMESTAMPTZ, name)
            precision = e.this.name if isinstance(e.this, exp.Literal) else ""
            word = f"{keyword[0]}({precision})" if precision else keyword[0]
            return Func(keyword[1], word, (), "keyword")
        if isinstance(e, exp.AtTimeZone):
            arg = self.node(e.this)
            zone = coerce(self.node(e.args["zone"]), TEXT, self.normalize)
            kind = {TIMESTAMPTZ: TIMESTAMP, TIMESTAMP: TIMESTAMPTZ}.get(arg.type, TIMESTAMPTZ)
            return Func(kind, "AT TIME ZONE", (arg, zone), "at_time_zone")
        if isinstance(e, exp.Coalesce | exp.Greatest | exp.Least):
            args = [self.node(a) for a in [e.this, *e.expressions]]
            kind = common([a.type for a in args])
            shown = {exp.Coalesce: "COALESCE", exp.Greatest: "GREATEST", exp.Least: "LEAST"}
            args = [coerce(a, kind, self.normalize) for a in args]
            return Func(kind, shown[type(e)], tuple(args), "upper")
        if isinstance(e, exp.Nullif):
            node = self.binary("=", self.node(e.this), self.node(e.expression))
            assert isinstance(node, Op)
            return Func(node.args[0].type, "NULLIF", node.args, "upper")
        called = called_as(e)
        if called is not None:  # written as a call, not the grammar's form
            name, parts = called
            args = [self.node(p) for p in parts]
            params, result = FUNCS.get(name, ((TEXT, INT4, INT4), TEXT))
            typed = [coerce(a, t, self.normalize) for a, t in zip(args, params, strict=False)]
            return Func(result if isinstance(result, int) else TEXT, name, tuple(typed))
        if isinstance(e, exp.Substring):
            parts = [e.this, e.args.get("start"), e.args.get("length")]
            args = [self.node(p) for p in parts if p is not None]
            kinds = (TEXT, INT4, INT4)
            args = [coerce(a, t, self.normalize) for a, t in zip(args, kinds, strict=False)]
            return Func(TEXT, "SUBSTRING", tuple(args), "substring")
        if isinstance(e, exp.StrPosition) and e.args.get("substr") is not None:
            args = (self.node(e.args["substr"]), self.node(e.this))
            args = tuple(coerce(a, TEXT, self.normalize) for a in args)
            return Func(INT4, "POSITION", args, "position")
        if isinstance(e, exp.Trim):
            where = str(e.args.get("position") or "BOTH").upper()
            parts = [e.args.get("expression"), e.this]
            args = tuple(coerce(self.node(p), TEXT, self.normalize) for p in parts if p is not None)
            return Func(TEXT, f"TRIM({where}", args, "trim")
        if isinstance(e, exp.Interval):
            unit = f" {e.args['unit'].name}".lower() if e.args.get("unit") is not None else ""
            return Const(INTERVAL, _normal(self.normalize, f"{e.this.name}{unit}", INTERVAL))
        if isinstance(e, exp.TimestampTrunc | exp.DateTrunc):
            arg = self.node(e.this)
            unit = Const(TEXT, str(e.args["unit"].name).lower())
            kind = arg.type if arg.type in (TIMESTAMP, TIMESTAMPTZ, INTERVAL) else TIMESTAMPTZ
            return Func(kind, "date_trunc", (unit, coerce(arg, kind, self.normalize)))
        if isinstance(e, exp.Extract):
            field_name = str(e.this.name).lower()
            arg = self.node(e.expression)
            if e.meta.get("name") == "date_part":
                return Func(FLOAT8, "date_part", (Const(TEXT, field_name), arg))
            return Func(NUMERIC, f"EXTRACT({field_name}", (arg,), "extract")
        if isinstance(e, exp.Func):
            return self._function(e)
        return Raw(TEXT, e.sql("postgres"))

    def _function(self, e: exp.Func) -> Node:
        if isinstance(e, exp.Anonymous):
            name, raw = str(e.this).lower(), list(e.expressions)
        else:
            name = str(e.meta.get("name") or e.sql_name()).lower()
            raw = []
            for key in e.arg_types:
                value = e.args.get(key)
                if isinstance(value, list):
                    raw += value
                elif isinstance(value, exp.Expression):
                    raw.append(value)
        args = [self.node(a) for a in raw]
        params, result = FUNCS.get(name, (None, TEXT))
        if params is not None:
            typed = [coerce(a, t, self.normalize) for a, t in zip(args, params, strict=False)]
            args = typed + args[len(typed) :]
        elif name not in ANY_ARGS:
            args = [coerce(a, TEXT, self.normalize) if a.type == UNKNOWN else a for a in args]
        kind = (args[0].type if args else TEXT) if result == "arg" else result
        assert isinstance(kind, int)
        return Func(kind, name, tuple(args))


def called_as(e: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """A call sqlglot reads as the grammar's form (``substring(t, 1, 2)``, ``strpos``,
    ``btrim``…): its name and arguments in the order written; None for the form itself."""
    name = e.meta.get("name")
    if isinstance(e, exp.Substring) and e.meta.get("arity", 1) > 1:
        parts = [e.this, e.args.get("start"), e.args.get("length")]
        return "substring", [p for p in parts if p is not None]
    if isinstance(e, exp.StrPosition) and name == "strpos":
        return "strpos", [e.this, e.args["substr"]]
    if isinstance(e, exp.Trim) and name in ("btrim", "ltrim", "rtrim"):
        chars = e.args.get("expression")
        return name, [e.this] + ([chars] if chars is not None else [])
    return None


def _quantified(e: exp.Expression) -> tuple[bool, exp.Expression] | None:
    """``ANY (x)`` or ``ALL (x)`` as sqlglot reads them (ALL as a call): (ALL?, x)."""
    if isinstance(e, exp.Any | exp.All):
        return isinstance(e, exp.All), e.this
    if isinstance(e, exp.Anonymous) and str(e.this).lower() == "all" and len(e.expressions) == 1:
        return True, e.expressions[0]
    return None


def coerce(node: Node, target: int, normalize: object) -> Node:
    """``node`` as a value of ``target``: a quoted literal read as one, another type cast
    (implicitly)."""
    if node.type == target or target == UNKNOWN:
        return node
    if isinstance(node, Const) and node.type == UNKNOWN:
        text = None if node.text is None else _normal(normalize, node.text, target)
        return Const(target, text)
    return Cast(target, node, True)


def _normal(normalize: object, text: str, target: int) -> str:
    assert callable(normalize)
    return normalize(text, target)


def _number(text: str) -> Const:
    """A number as PostgreSQL's grammar reads it: integer, bigint, else numeric."""
    if text.lstrip("-").isdigit():
        value = int(text)
        if -(2**31) <= value < 2**31:
            return Const(INT4, str(value))
        if -(2**63) <= value < 2**63:
            return Const(INT8, str(value))
    try:
        value_d = Decimal(text)
    except InvalidOperation:
        return Const(NUMERIC, text)
    shown = format(value_d, "f")
    return Const(NUMERIC, shown)


def _flatten(e: exp.Expression, kind: type, out: list[exp.Expression]) -> None:
    """An AND (OR) chain's operands, as PostgreSQL's parser flattens them."""
    if type(e) is kind:
        _flatten(e.this, kind, out)
        _flatten(e.expression, kind, out)
    else:
        out.append(e)
