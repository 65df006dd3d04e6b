"""PostgreSQL's jsonb: a value held as its normalized text, as PostgreSQL prints it.

Input is parsed as JSON (numbers exact), duplicate keys keep the last value, object keys are
ordered by their length in bytes and then their bytes, and the text is spaced as PostgreSQL's
output (``{"a": 1, "bb": [1, 2]}``). Values compare as PostgreSQL orders jsonb: object >
array > boolean > number > string > null; objects and arrays by their size first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from changeflow.errors import EvalError


@dataclass(frozen=True, eq=False)
class Jsonb:
    """A jsonb value: its normalized ``text``."""

    text: str

    def value(self) -> Any:
        """The JSON value: dicts, lists, str, Decimal, bool, None for JSON null."""
        return json.loads(self.text, parse_float=Decimal, parse_int=Decimal)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Jsonb) and _key(self.value()) == _key(other.value())

    def __hash__(self) -> int:
        return hash(("jsonb", _frozen(self.value())))

    def __lt__(self, other: Jsonb) -> bool:
        return _key(self.value()) < _key(other.value())

    def __le__(self, other: Jsonb) -> bool:
        return _key(self.value()) <= _key(other.value())

    def __gt__(self, other: Jsonb) -> bool:
        return _key(self.value()) > _key(other.value())

    def __ge__(self, other: Jsonb) -> bool:
        return _key(self.value()) >= _key(other.value())

    def __str__(self) -> str:
        return self.text


def _frozen(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple((k, _frozen(x)) for k, x in v.items())
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    return v.normalize() if isinstance(v, Decimal) else v


def _key(v: Any) -> tuple:
    """PostgreSQL's jsonb order as a Python sort key."""
    if isinstance(v, dict):
        return (5, len(v), tuple((_bytes_key(k), _key(x)) for k, x in v.items()))
    if isinstance(v, list):
        return (4, len(v), tuple(_key(x) for x in v))
    if isinstance(v, bool):
        return (3, v)
    if isinstance(v, Decimal):
        return (2, v)
    if isinstance(v, str):
        return (1, v.encode("utf-8"))
    return (0,)


def _bytes_key(k: str) -> tuple[int, bytes]:
    b = k.encode("utf-8")
    return (len(b), b)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _last_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        out[k] = v
    return {k: out[k] for k in sorted(out, key=_bytes_key)}


def parse_jsonb(text: str) -> Jsonb:
    """jsonb's input (22P02 for text that is not JSON)."""
    try:
        value = json.loads(
            text,
            parse_float=Decimal,
            parse_int=Decimal,
            parse_constant=_no_constant,
            object_pairs_hook=_last_wins,
        )
    except (ValueError, RecursionError):
        raise EvalError(f'invalid input syntax for type json: "{text}"', sqlstate="22P02") from None
    out = dump(value)
    try:
        out.encode()
    except UnicodeEncodeError:  # a \ud800 escape alone: half a character, not text
        raise EvalError(
            f'invalid input syntax for type json: "{text}" (a Unicode surrogate escape must '
            "be a high one followed by a low one)",
            sqlstate="22P02",
        ) from None
    return Jsonb(out)


def from_value(value: Any) -> Jsonb:
    """A JSON value (dict, list, str, Decimal, bool, None) as jsonb, normalized."""
    if isinstance(value, dict):
        value = {k: value[k] for k in sorted(value, key=_bytes_key)}
    return Jsonb(dump(value))


def dump(v: Any) -> str:
    """PostgreSQL's jsonb text of a JSON value whose objects are already in key order."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_string(k)}: {dump(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump(x) for x in v) + "]"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, Decimal):
        return format(v.copy_abs() if v.is_zero() else v, "f")  # numeric has no -0
    if isinstance(v, int | float):
        return format(Decimal(repr(v) if isinstance(v, float) else v), "f")
    raise EvalError(f"cannot convert {type(v).__name__} to jsonb", sqlstate="22023")


def _string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


# -- functions -------------------------------------------------------------------------------


def object_field(j: Jsonb, key: str) -> Jsonb | None:
    """``j -> 'key'``: NULL unless ``j`` is an object with ``key``."""
    v = j.value()
    return from_value(v[key]) if isinstance(v, dict) and key in v else None


def array_element(j: Jsonb, i: int) -> Jsonb | None:
    """``j -> i``: from 0, negative from the end; NULL out of range or for an object (a
    scalar is its own element 0, as PostgreSQL holds scalars in a one-element array)."""
    v = j.value()
    if not isinstance(v, dict | list):
        return j if i in (0, -1) else None
    if not isinstance(v, list) or not -len(v) <= i < len(v):
        return None
    return from_value(v[i])


def extract_path(j: Jsonb, path: tuple) -> Jsonb | None:
    """``j #> '{a,0}'``: each step a key of an object or an index of an array."""
    v = j.value()
    for step in path:
        if step is None:
            return None
        if isinstance(v, dict):
            if step not in v:
                return None
            v = v[step]
        elif isinstance(v, list):
            try:
                i = int(step)
            except ValueError:
                return None
            if not -len(v) <= i < len(v):
                return None
            v = v[i]
        else:
            return None
    return from_value(v)


def as_text(j: Jsonb | None) -> str | None:
    """The ``->>`` form: a string unquoted, JSON null as SQL NULL, others as their text."""
    if j is None:
        return None
    v = j.value()
    if v is None:
        return None
    return v if isinstance(v, str) else j.text


def typeof(j: Jsonb) -> str:
    v = j.value()
    for kind, name in ((dict, "object"), (list, "array"), (bool, "boolean"), (str, "string")):
        if isinstance(v, kind):
            return name
    return "number" if isinstance(v, Decimal) else "null"


def array_length(j: Jsonb) -> int:
    v = j.value()
    if isinstance(v, list):
        return len(v)
    what = "a non-array" if isinstance(v, dict) else "a scalar"
    raise EvalError(f"cannot get array length of {what}", sqlstate="22023")


def exists(j: Jsonb, key: str) -> bool:
    """``j ? key``: a top-level key, an array's string element, or the string itself."""
    v = j.value()
    if isinstance(v, dict):
        return key in v
    if isinstance(v, list):
        return key in [x for x in v if isinstance(x, str)]
    return v == key


def contains(a: Jsonb, b: Jsonb) -> bool:
    """``a @> b`` as PostgreSQL's jsonb containment."""
    return _contains(a.value(), b.value(), top=True)


def _contains(a: Any, b: Any, top: bool = False) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in a and _contains(a[k], x) for k, x in b.items())
    if isinstance(a, list) and isinstance(b, list):
        return all(any(_contains(y, x) for y in a) for x in b)
    if isinstance(a, list) and top and not isinstance(b, dict | list):
        return any(_key(y) == _key(b) for y in a)
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return _key(a) == _key(b)


def concat(a: Jsonb, b: Jsonb) -> Jsonb:
    """``a || b``: two objects merged (the right's keys win), else both as arrays joined."""
    x, y = a.value(), b.value()
    if isinstance(x, dict) and isinstance(y, dict):
        return from_value({**x, **y})
    return from_value((x if isinstance(x, list) else [x]) + (y if isinstance(y, list) else [y]))


def delete(j: Jsonb, what: str | int | tuple) -> Jsonb:
    """``j - 'key'`` (a key, or an array's equal strings), ``j - i`` (an array's element) or
    ``j - text[]`` (each of the keys)."""
    if isinstance(what, tuple):
        for key in what:
            j = j if key is None else delete(j, key)
        if not isinstance(j.value(), dict | list):
            raise EvalError("cannot delete from scalar", sqlstate="22023")
        return j
    v = j.value()
    if not isinstance(v, dict | list):
        raise EvalError("cannot delete from scalar", sqlstate="22023")
    if isinstance(what, str):
        if isinstance(v, dict):
            return from_value({k: x for k, x in v.items() if k != what})
        return from_value([x for x in v if x != what or not isinstance(x, str)])
    if isinstance(v, dict):
        raise EvalError("cannot delete from object using integer index", sqlstate="22023")
    i = what + len(v) if what < 0 else what
    return from_value([x for n, x in enumerate(v) if n != i])


def scalar_of(j: Jsonb, target: str) -> Any:
    """A jsonb scalar cast to a number or boolean (22023 for another kind of value)."""
    v = j.value()
    want_bool = target == "boolean"
    if (want_bool and isinstance(v, bool)) or (
        not want_bool and isinstance(v, Decimal) and not isinstance(v, bool)
    ):
        return v
    raise EvalError(f"cannot cast jsonb {typeof(j)} to type {target}", sqlstate="22023")
