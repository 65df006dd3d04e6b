"""The json type: its text kept as written (PostgreSQL's json keeps whitespace, key order and
duplicate keys), checked as JSON on input. Its operators read the text and answer with the part
of it they name, as written (``'{"a": [1,  2]}'::json -> 'a'`` is ``[1,  2]``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from changeflow.compute.jsonb import parse_jsonb
from changeflow.errors import EvalError

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


def parse_json(text: str) -> str:
    """json's input: the text itself, once it is found to be JSON (22P02 otherwise)."""
    parse_jsonb(text)  # the same grammar (no NaN, no Infinity); its value is not kept
    return text


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _value_end(text: str, i: int) -> int:
    """Where the JSON value starting at ``i`` ends."""
    return _DECODER.raw_decode(text, i)[1]


def _members(text: str) -> Iterator[tuple[Any, str]]:
    """An object's ``(key, value text)`` or an array's ``(index, value text)``, in order; nothing
    for a scalar."""
    i = _skip(text, 0)
    opening = text[i : i + 1]
    if opening not in ("{", "["):
        return
    i, n = _skip(text, i + 1), 0
    while i < len(text) and text[i] not in "]}":
        if opening == "{":
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, _skip(text, i) + 1)  # past the ':'
        else:
            key = n
        end = _value_end(text, i)
        yield key, text[i:end]
        n += 1
        i = _skip(text, end)
        if text[i : i + 1] == ",":
            i = _skip(text, i + 1)


def _kind(text: str) -> str:
    return text[_skip(text, 0) : _skip(text, 0) + 1]


def object_field(text: str, key: str) -> str | None:
    """``json -> 'key'``: the last value of that key (as PostgreSQL's json reads it), as written."""
    if _kind(text) != "{":
        return None
    found = None
    for k, v in _members(text):
        if k == key:
            found = v
    return found


def array_element(text: str, index: int) -> str | None:
    """``json -> n``: the element at ``n`` (from the end when negative), as written."""
    if _kind(text) != "[":
        return None
    elements = [v for _, v in _members(text)]
    if not -len(elements) <= index < len(elements):
        return None
    return elements[index]


def as_text(text: str | None) -> str | None:
    """The ``->>`` form: a string unquoted, JSON null as SQL NULL, others as written."""
    if text is None:
        return None
    value = json.loads(text)
    if value is None:
        return None
    return value if isinstance(value, str) else text.strip(_SPACE)


def object_field_text(text: str, key: str) -> str | None:
    return as_text(object_field(text, key))


def array_element_text(text: str, index: int) -> str | None:
    return as_text(array_element(text, index))


def extract_path(text: str, path: tuple) -> str | None:
    """``json #> '{a,0}'``: each step a key of an object or an index of an array."""
    at: str | None = text
    for step in path:
        if step is None or at is None:
            return None
        if _kind(at) == "[":
            try:
                at = array_element(at, int(step))
            except ValueError:
                return None
        else:
            at = object_field(at, step)
    return None if at is None else at.strip(_SPACE)


def extract_path_text(text: str, path: tuple) -> str | None:
    return as_text(extract_path(text, path))


def typeof(text: str) -> str:
    """``json_typeof``: object, array, string, number, boolean or null."""
    first = _kind(text)
    kinds = {"{": "object", "[": "array", '"': "string", "t": "boolean", "f": "boolean"}
    return kinds.get(first, "null" if first == "n" else "number")


def array_length(text: str) -> int:
    """``json_array_length`` (22023 for a scalar or an object, as PostgreSQL)."""
    if _kind(text) != "[":
        what = "a scalar" if _kind(text) != "{" else "an object"
        raise EvalError(f"cannot get array length of {what}", sqlstate="22023")
    return sum(1 for _ in _members(text))
