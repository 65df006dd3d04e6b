"""jsonb edits: ``jsonb_set`` (a value put at a path), ``jsonb_insert``, ``#-``
(``jsonb_delete_path``) and ``jsonb_strip_nulls``, as PostgreSQL's."""

from __future__ import annotations

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


def jsonb_strip_nulls(j: J.Jsonb) -> J.Jsonb:
    """``j`` without the fields of its objects (at any depth) whose value is null."""

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if x is not None}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return J.from_value(strip(j.value()))


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
