"""jsonb edits: ``jsonb_set`` (a value put at a path), ``jsonb_insert``, ``#-``
(``jsonb_delete_path``) and ``jsonb_strip_nulls``, as PostgreSQL's."""

from __future__ import annotations

import re
from typing import Any

from changeflow.compute import jsonb as J
from changeflow.compute.functions.base import Function, in_process
from changeflow.compute.functions.overloads import Overloads
from changeflow.compute.types import BOOL, JSONB, TEXT, array_of
from changeflow.errors import EvalError

_IN_PROCESS = in_process("jsonb is edited in the process")


def jsonb_set(j: J.Jsonb, path: tuple, new: J.Jsonb, create: bool = True) -> J.Jsonb:
    """``j`` with ``new`` at ``path`` (a missing last step added if ``create``; a path
    through a missing or scalar value leaves ``j`` as it is)."""
    return _edit(j, path, new.value(), "set" if create else "replace", "set")


def jsonb_insert(j: J.Jsonb, path: tuple, new: J.Jsonb, after: bool = False) -> J.Jsonb:
    """``j`` with ``new`` inserted before (or ``after``) the array element at ``path``, or
    as the object's new key there (an existing key is 22023)."""
    return _edit(j, path, new.value(), "after" if after else "before", "set")


def jsonb_delete_path(j: J.Jsonb, path: tuple) -> J.Jsonb:
    """``j #- path``: ``j`` without the element or key at ``path``."""
    return _edit(j, path, None, "delete", "delete")


def _edit(j: J.Jsonb, path: tuple, new: Any, mode: str, verb: str) -> J.Jsonb:
    v = j.value()
    if not isinstance(v, dict | list):
        raise EvalError(f"cannot {verb} path in scalar", sqlstate="22023")
    if path:
        _set_in(v, list(path), new, mode, 1)
    return J.from_value(v)


def _set_in(at: Any, path: list, new: Any, mode: str, position: int) -> None:
    """Edit ``at`` at ``path``: ``mode`` is set (adding a missing last step), replace (an
    existing one only), before or after (inserting) or delete."""
    key, last = path[0], len(path) == 1
    if key is None:
        raise EvalError(f"path element at position {position} is null", sqlstate="22004")
    if isinstance(at, dict):
        if last:
            if mode == "delete":
                at.pop(key, None)
            elif mode in ("before", "after") and key in at:
                raise EvalError("cannot replace existing key", sqlstate="22023")
            elif key in at or mode != "replace":
                at[key] = new
        elif isinstance(at.get(key), dict | list):
            _set_in(at[key], path[1:], new, mode, position + 1)
        return
    try:
        i = int(key)
    except ValueError:
        raise EvalError(
            f'path element at position {position} is not an integer: "{key}"', sqlstate="22P02"
        ) from None
    i = i + len(at) if i < 0 else i
    if not last:
        if 0 <= i < len(at) and isinstance(at[i], dict | list):
            _set_in(at[i], path[1:], new, mode, position + 1)
    elif mode == "delete":
        if 0 <= i < len(at):
            del at[i]
    elif mode in ("before", "after"):
        at.insert(max(0, min(i + (mode == "after"), len(at))), new)
    elif 0 <= i < len(at):
        at[i] = new
    elif mode == "set":
        at.insert(0 if i < 0 else len(at), new)


def jsonb_assign(
    j: tuple[Any, Any], path: tuple[Any, Any], new: tuple[Any, Any], array: tuple[Any, Any]
) -> J.Jsonb:
    """``j['a'][0] = v`` (UPDATE's SET), as PostgreSQL's jsonb subscript assignment: a NULL
    ``j`` is an empty array if the first subscript is an integer (``array``), else an empty
    object; missing steps are made (an array for a step that reads as an integer, padded with
    nulls, else an object); a SQL NULL ``v`` is JSON null; a scalar in the way is 22023."""
    steps = path[0]
    if any(step is None for step in steps):
        raise EvalError("jsonb subscript in assignment must not be null", sqlstate="22004")
    value = None if new[0] is None else new[0].value()
    root = ([] if array[0] else {}) if j[0] is None else j[0].value()
    if not steps:
        return J.from_value(value)
    if not isinstance(root, dict | list):
        raise _scalar_in_the_way()
    _put(root, list(steps), value, 1)
    return J.from_value(root)


def _put(at: dict | list, path: list, new: Any, position: int) -> None:
    key, rest = path[0], path[1:]
    if isinstance(at, dict):
        if not rest or key not in at:
            at[key] = _made(rest, new)
            return
        child = at[key]
    else:
        i = _step_index(key, position)
        if i < 0:
            if -i > len(at):
                raise EvalError(
                    f"path element at position {position} is out of range: {i}",
                    sqlstate="22023",
                )
            i += len(at)
        if i >= len(at):
            at.extend([None] * (i - len(at)))
            at.append(_made(rest, new))
            return
        if not rest:
            at[i] = new
            return
        child = at[i]
    if not isinstance(child, dict | list):
        raise _scalar_in_the_way()
    _put(child, rest, new, position + 1)


def _made(path: list, new: Any) -> Any:
    """``new`` at ``path`` in containers made for it."""
    if not path:
        return new
    inner = _made(path[1:], new)
    if re.fullmatch(r"\s*[-+]?\d+", path[0]) and int(path[0]) >= 0:
        return [None] * int(path[0]) + [inner]
    return {path[0]: inner}


def _step_index(key: str, position: int) -> int:
    if re.fullmatch(r"\s*[-+]?\d+", key) is None:
        raise EvalError(
            f'path element at position {position} is not an integer: "{key}"', sqlstate="22P02"
        )
    return int(key)


def _scalar_in_the_way() -> EvalError:
    return EvalError(
        "cannot replace existing key",
        sqlstate="22023",
        detail="The path assumes key is a composite object, but it is a scalar value.",
    )


def strip_nulls(v: Any) -> Any:
    """A json value (Python's) without the fields of its objects, at any depth, whose value
    is null."""
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_nulls(x) for x in v]
    return v


def jsonb_strip_nulls(j: J.Jsonb) -> J.Jsonb:
    """``j`` without the fields of its objects (at any depth) whose value is null."""
    return J.from_value(strip_nulls(j.value()))


_PATH = array_of(TEXT)
FUNCTIONS = [
    Function(
        "jsonb_set",
        Overloads(
            "jsonb_set", (((JSONB, _PATH, JSONB), JSONB), ((JSONB, _PATH, JSONB, BOOL), JSONB))
        ),
        jsonb_set,
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_insert",
        Overloads(
            "jsonb_insert",
            (((JSONB, _PATH, JSONB), JSONB), ((JSONB, _PATH, JSONB, BOOL), JSONB)),
        ),
        jsonb_insert,
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_assign",
        Overloads("jsonb_assign", (((JSONB, _PATH, JSONB, BOOL), JSONB),)),
        jsonb_assign,
        strict=False,
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_delete_path",
        Overloads("jsonb_delete_path", (((JSONB, _PATH), JSONB),)),
        jsonb_delete_path,
        spark=_IN_PROCESS,
    ),
    Function(
        "jsonb_strip_nulls",
        Overloads("jsonb_strip_nulls", (((JSONB,), JSONB),)),
        jsonb_strip_nulls,
        spark=_IN_PROCESS,
    ),
]
