"""A subset of SQL/JSON path, PostgreSQL's ``jsonpath``, read and run on JSON values: ``$``,
``.key``, ``."key"``, ``.*``, ``[n]``, ``[n to m]``, ``[last]``, ``[*]``, filters ``? (…)``
of comparisons (``== != <> < <= > >=``) between ``@`` paths and literals, ``&&``, ``||``,
``!``, ``exists(…)``, ``like_regex "p" [flag "i"]`` and ``starts with``, the item methods
``.size() .type() .double() .abs() .floor() .ceiling() .keyvalue()``, arithmetic (``+ - * /
%``, unary ``-``; :mod:`~changeflow.compute.jsonpath_math`), in lax mode (the default: an array
is unwrapped where a member is asked of it, a missing key is no item) or strict mode (either
is an error, 22038 or 2203A).
Anything else is a syntax error (42601), as PostgreSQL reports an unsupported path."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from changeflow.compute import jsonpath_math
from changeflow.errors import EvalError

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<str>\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<op>==|!=|<>|<=|>=|&&|\|\||[$@.\[\]*?()<>!,+\-/%])|(?P<word>[A-Za-z_][A-Za-z_0-9]*))"
)


@dataclass(frozen=True)
class Path:
    """A parsed path: its mode and its steps from ``$``, or a predicate (``$.a == 1``) whose
    one item is its truth (true, false, or null for unknown)."""

    strict: bool
    steps: tuple[tuple[Any, ...], ...]
    predicate: tuple[Any, ...] | None = None
    expr: tuple[Any, ...] | None = None  # arithmetic (``$.a + 1``) or a literal


def _syntax(text: str) -> EvalError:
    return EvalError(
        f'syntax error in jsonpath "{text}" (or a form not supported)', sqlstate="42601"
    )


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        at = 0
        while at < len(text.rstrip()):
            m = _TOKEN.match(text, at)
            if m is None or m.end() == at:
                raise _syntax(text)
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind)))
            at = m.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens) or (expected and self.tokens[self.at][1] != expected):
            raise _syntax(self.text)
        self.at += 1
        return self.tokens[self.at - 1]


@lru_cache(maxsize=256)
def parse(text: str) -> Path:
    """``text`` as a :class:`Path` (42601 for a path or form not read here)."""
    r = _Reader(text)
    strict = False
    if r.peek() in ("strict", "lax"):
        strict = r.take()[1] == "strict"
    found = _or(r)
    if r.peek() is not None:
        raise _syntax(text)
    if found[0] == "item" and found[1][0] == "path" and found[1][1] == "$":
        return Path(strict, found[1][2])
    if found[0] == "item":
        return Path(strict, (), None, found[1])
    return Path(strict, (), found)


def _steps(r: _Reader) -> tuple[tuple[Any, ...], ...]:
    steps: list[tuple[Any, ...]] = []
    while r.peek() in (".", "[", "?"):
        token = r.take()[1]
        if token == ".":
            kind, value = r.take()
            if value == "*":
                steps.append(("members",))
            elif kind == "word" and r.peek() == "(":
                r.take("(")
                r.take(")")
                if value not in _METHODS:
                    raise _syntax(r.text)
                steps.append(("method", value))
            elif kind == "str":
                steps.append(("key", _unquote(value)))
            elif kind == "word":
                steps.append(("key", value))
            else:
                raise _syntax(r.text)
        elif token == "[":
            steps.append(_subscript(r))
        else:
            r.take("(")
            steps.append(("filter", _or(r)))
            r.take(")")
    return tuple(steps)


def _subscript(r: _Reader) -> tuple[Any, ...]:
    if r.peek() == "*":
        r.take()
        r.take("]")
        return ("elements",)
    picks = []
    while True:
        low = _index(r)
        high = low
        if r.peek() == "to":
            r.take()
            high = _index(r)
        picks.append((low, high))
        if r.take()[1] == "]":
            return ("index", tuple(picks))


def _index(r: _Reader) -> Any:
    kind, value = r.take()
    if value == "last":
        return "last"
    if kind != "num" or not re.fullmatch(r"-?\d+", value):
        raise _syntax(r.text)
    return int(value)


def _or(r: _Reader) -> tuple[Any, ...]:
    left = _and(r)
    while r.peek() == "||":
        r.take()
        left = ("or", left, _and(r))
    return left


def _and(r: _Reader) -> tuple[Any, ...]:
    left = _not(r)
    while r.peek() == "&&":
        r.take()
        left = ("and", left, _not(r))
    return left


def _not(r: _Reader) -> tuple[Any, ...]:
    if r.peek() == "!":
        r.take()
        r.take("(")
        inner = _or(r)
        r.take(")")
        return ("not", inner)
    if r.peek() == "exists":
        r.take()
        r.take("(")
        operand = _operand(r)
        r.take(")")
        return ("exists", operand)
    left = _operand(r)
    if left[0] in _CONDITIONS:  # a parenthesized condition
        return left
    if r.peek() == "like_regex":
        r.take()
        kind, pattern = r.take()
        flags = ""
        if r.peek() == "flag":
            r.take()
            flags = _unquote(r.take()[1])
        if kind != "str" or set(flags) - set("ismq"):
            raise _syntax(r.text)
        return ("like", left, _unquote(pattern), flags)
    if r.peek() == "starts":
        r.take()
        r.take("with")
        return ("starts", left, _operand(r))
    if r.peek() not in ("==", "!=", "<>", "<", "<=", ">", ">="):
        return ("item", left)  # a path alone: at the top, the whole path
    op = r.take()[1]
    return ("cmp", "!=" if op == "<>" else op, left, _operand(r))


_CONDITIONS = ("and", "or", "not", "exists", "like", "starts", "cmp", "item")


def _operand(r: _Reader) -> tuple[Any, ...]:
    """An additive expression: terms joined by ``+`` and ``-``."""
    left = _term(r)
    while r.peek() in ("+", "-"):
        op = r.take()[1]
        left = ("arith", op, left, _term(r))
    return left


def _term(r: _Reader) -> tuple[Any, ...]:
    left = _unary(r)
    while r.peek() in ("*", "/", "%"):
        op = r.take()[1]
        left = ("arith", op, left, _unary(r))
    return left


def _unary(r: _Reader) -> tuple[Any, ...]:
    if r.peek() in ("+", "-"):
        op = r.take()[1]
        return ("unary", op, _unary(r))
    if r.peek() == "(":
        r.take()
        inner = _or(r)
        r.take(")")
        return inner[1] if inner[0] == "item" else inner
    return _primary(r)


def _primary(r: _Reader) -> tuple[Any, ...]:
    kind, value = r.take()
    if value == "$" and r.at < len(r.tokens) and r.tokens[r.at][0] == "word":
        return ("var", r.take()[1])  # $name: a variable of the call's vars
    if value in ("@", "$"):
        return ("path", value, _steps(r))
    if kind == "num":
        return ("value", Decimal(value))
    if kind == "str":
        return ("value", _unquote(value))
    if value in ("true", "false", "null"):
        return ("value", {"true": True, "false": False, "null": None}[value])
    raise _syntax(r.text)


def _unquote(token: str) -> str:
    import json

    return json.loads(token)


def query(path: Path, root: Any, variables: Any = None) -> list[Any]:
    """The items ``path`` selects from the JSON value ``root`` (``$name`` in a filter is
    ``variables[name]``)."""
    if variables is not None and not isinstance(variables, dict):
        raise EvalError(
            '"vars" argument is not an object (jsonpath parameters must be key-value pairs)',
            sqlstate="22023",
        )
    context = (root, variables or {})
    if path.predicate is not None:
        return [_test(path.predicate, root, context, path.strict)]
    if path.expr is not None:
        return _items(path.expr, root, context, path.strict)
    return _run(path.steps, [root], context, path.strict)


def _run(steps: tuple[tuple[Any, ...], ...], items: list[Any], root: Any, strict: bool) -> list:
    for step in steps:
        out: list[Any] = []
        for item in items:
            out.extend(_step(step, item, root, strict))
        items = out
    return items


def _step(step: tuple[Any, ...], item: Any, root: Any, strict: bool) -> list[Any]:
    kind = step[0]
    if kind == "method" and step[1] == "keyvalue":
        return jsonpath_math.keyvalue(item, root[0], strict)
    if kind == "method":
        return _method(step[1], item, strict)
    if kind in ("key", "members") and isinstance(item, list) and not strict:
        return [x for element in item for x in _step(step, element, root, strict)]
    if kind == "key":
        if isinstance(item, dict) and step[1] in item:
            return [item[step[1]]]
        if strict:
            what = "JSON object does not contain key" if isinstance(item, dict) else None
            raise EvalError(
                f'{what} "{step[1]}"'
                if what
                else "jsonpath member accessor can only be applied to an object",
                sqlstate="2203A" if what else "2203C",
            )
        return []
    if kind == "members":
        if isinstance(item, dict):
            return list(item.values())
        if strict:
            raise EvalError(
                "jsonpath wildcard member accessor can only be applied to an object",
                sqlstate="2203C",
            )
        return []
    if kind in ("elements", "index"):
        if not isinstance(item, list):
            if strict:
                raise EvalError(
                    "jsonpath array accessor can only be applied to an array", sqlstate="22039"
                )
            item = [item]
        if kind == "elements":
            return list(item)
        out = []
        for low, high in step[1]:
            lo, hi = (len(item) - 1 if i == "last" else i for i in (low, high))
            if strict and not (0 <= lo <= hi < len(item)):
                raise EvalError("jsonpath array subscript is out of bounds", sqlstate="22033")
            out.extend(item[max(lo, 0) : hi + 1])
        return out
    items = item if isinstance(item, list) and not strict else [item]
    return [x for x in items if _test(step[1], x, root, strict) is True]


def _test(cond: tuple[Any, ...], at: Any, root: Any, strict: bool) -> bool | None:
    """A filter's value: True, False or None (unknown, as for an error)."""
    kind = cond[0]
    if kind in ("and", "or"):
        a, b = _test(cond[1], at, root, strict), _test(cond[2], at, root, strict)
        if kind == "and":
            return False if False in (a, b) else None if None in (a, b) else True
        return True if True in (a, b) else None if None in (a, b) else False
    if kind == "not":
        inner = _test(cond[1], at, root, strict)
        return None if inner is None else not inner
    if kind == "item":  # a path where a condition belongs
        return None
    if kind in ("like", "starts"):
        try:
            subjects = _items(cond[1], at, root, strict)
            prefixes = [] if kind == "like" else _items(cond[2], at, root, strict)
        except EvalError:
            return None
        return _text_test(cond, subjects, prefixes)
    try:
        if kind == "exists":
            return bool(_items(cond[1], at, root, strict))
        lefts, rights = _items(cond[2], at, root, strict), _items(cond[3], at, root, strict)
    except EvalError as e:
        if e.sqlstate == "42704":  # a variable not given is the call's error
            raise
        return None
    found, unknown = False, False
    for a in lefts:
        for b in rights:
            result = _compare(cond[1], a, b)
            found, unknown = found or result is True, unknown or result is None
    return True if found else None if unknown else False


def _text_test(cond: tuple[Any, ...], subjects: list[Any], prefixes: list[Any]) -> bool | None:
    """``like_regex`` or ``starts with``: True if an item matches, else unknown (None) if
    an item is no string, else False."""
    found, unknown = False, False
    if cond[0] == "like":
        flags = cond[3]
        pattern = re.escape(cond[2]) if "q" in flags else cond[2]
        options = (re.I if "i" in flags else 0) | (re.S if "s" in flags else 0)
        compiled = re.compile(pattern, options | (re.M if "m" in flags else 0))
        tests = [(s, None) for s in subjects]
    else:
        tests = [(s, p) for s in subjects for p in prefixes]
    for subject, prefix in tests:
        if not isinstance(subject, str) or (cond[0] == "starts" and not isinstance(prefix, str)):
            unknown = True
        elif cond[0] == "like":
            found = found or compiled.search(subject) is not None
        else:
            found = found or subject.startswith(prefix)
    return True if found else None if unknown else False


_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
_METHODS = ("size", "type", "double", "abs", "floor", "ceiling", "keyvalue")


def _method(name: str, item: Any, strict: bool) -> list[Any]:
    """``.size()``, ``.type()``, ``.double()``, ``.abs()``, ``.floor()``, ``.ceiling()``."""
    import math

    if name == "type":
        return [_TYPES.get(type(item), "number")]
    if name == "size":
        if isinstance(item, list):
            return [len(item)]
        if strict:
            raise EvalError(
                "jsonpath item method .size() can only be applied to an array", sqlstate="22039"
            )
        return [1]
    if isinstance(item, list) and not strict:
        return [x for element in item for x in _method(name, element, strict)]
    number = isinstance(item, int | float | Decimal) and not isinstance(item, bool)
    if name == "double" and isinstance(item, str):
        try:
            return [Decimal(str(float(item)))]
        except ValueError:
            pass
    if not number:
        raise EvalError(
            f"jsonpath item method .{name}() can only be applied to a numeric value",
            sqlstate="22036",
        )
    value = Decimal(str(item))
    if name == "abs":
        return [abs(value)]
    if name == "floor":
        return [Decimal(math.floor(value))]
    if name == "ceiling":
        return [Decimal(math.ceil(value))]
    return [Decimal(str(float(value)))]


def _items(operand: tuple[Any, ...], at: Any, root: Any, strict: bool) -> list[Any]:
    if operand[0] == "arith":
        lefts, rights = (_items(o, at, root, strict) for o in operand[2:])
        return jsonpath_math.binary(operand[1], lefts, rights)
    if operand[0] == "unary":
        return jsonpath_math.unary(operand[1], _items(operand[2], at, root, strict))
    if operand[0] in _CONDITIONS:
        return [_test(operand, at, root, strict)]
    if operand[0] == "value":
        return [operand[1]]
    if operand[0] == "var":
        variables = root[1]
        if operand[1] not in variables:
            raise EvalError(f'could not find jsonpath variable "{operand[1]}"', sqlstate="42704")
        return [variables[operand[1]]]
    start = at if operand[1] == "@" else root[0]
    found = _run(operand[2], [start], root, strict)
    return [y for x in found for y in (x if isinstance(x, list) and not strict else [x])]


def _compare(op: str, a: Any, b: Any) -> bool | None:
    numbers = (int, float, Decimal)
    kinds = [
        "num" if isinstance(v, numbers) and not isinstance(v, bool) else type(v).__name__
        for v in (a, b)
    ]
    if a is None or b is None:
        return (a is None and b is None) == (op == "==") if op in ("==", "!=") else False
    if kinds[0] != kinds[1] or isinstance(a, dict | list):
        return None
    if kinds[0] == "num":
        a, b = Decimal(str(a)), Decimal(str(b))
    if isinstance(a, bool) and op not in ("==", "!="):
        return None
    return {
        "==": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]
