"""The materialization protocol: the messages between a runtime and a driver, and their codec.

Messages from the runtime are imperative (Open, Acknowledge, Load, Flush, Store, StartCommit);
the driver answers in the past tense (Opened, Acknowledged, Loaded, Flushed, StartedCommit).
Field names follow Estuary Flow's ``materialize.proto`` where it has one. On the wire a
message is one JSON object per line: ``{"<message name>": {fields}}``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from changeflow.errors import ProtocolViolation

Key = tuple  # the values of a binding's key columns
Doc = dict[str, Any]  # a document: column name to JSON value


@dataclass(frozen=True)
class Binding:
    """One collection materialized into one target (a table, a folder)."""

    resource: str  # the target's name: a table, a file stem
    columns: tuple[str, ...]  # the document's fields, key first
    types: tuple[str, ...]  # their Arrow types, as strings (int64, string, double, …)
    key: tuple[str, ...]
    delta_updates: bool = False


@dataclass(frozen=True)
class DriverState:
    """A driver checkpoint update; with ``merge_patch`` it patches the previous one (RFC 7396)."""

    updated: dict[str, Any] = field(default_factory=dict)
    merge_patch: bool = False


# -- runtime to driver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Open:
    materialization: str
    bindings: tuple[Binding, ...]
    config: dict[str, Any]  # the endpoint: a URL, a path
    key_begin: int = 0  # the key range of this task split
    key_end: int = 2**32 - 1
    state: dict[str, Any] = field(default_factory=dict)  # the driver checkpoint from the log


@dataclass(frozen=True)
class Acknowledge:
    pass


@dataclass(frozen=True)
class Load:
    binding: int
    key: Key


@dataclass(frozen=True)
class Flush:
    pass


@dataclass(frozen=True)
class Store:
    binding: int
    key: Key
    doc: Doc | None  # None with delete
    exists: bool  # the key was loaded: update rather than insert
    delete: bool = False


@dataclass(frozen=True)
class StartCommit:
    runtime_checkpoint: dict[str, Any]


# -- driver to runtime ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Opened:
    runtime_checkpoint: dict[str, Any] | None = None  # from an authoritative store


@dataclass(frozen=True)
class Acknowledged:
    state: DriverState | None = None


@dataclass(frozen=True)
class Loaded:
    binding: int
    key: Key
    doc: Doc


@dataclass(frozen=True)
class Flushed:
    state: DriverState | None = None


@dataclass(frozen=True)
class StartedCommit:
    state: DriverState | None = None


Request = Open | Acknowledge | Load | Flush | Store | StartCommit
Response = Opened | Acknowledged | Loaded | Flushed | StartedCommit
Message = Request | Response

_NAMES: dict[str, type] = {
    "open": Open,
    "acknowledge": Acknowledge,
    "load": Load,
    "flush": Flush,
    "store": Store,
    "start_commit": StartCommit,
    "opened": Opened,
    "acknowledged": Acknowledged,
    "loaded": Loaded,
    "flushed": Flushed,
    "started_commit": StartedCommit,
}
_KINDS = {kind: name for name, kind in _NAMES.items()}


def name_of(message: Message) -> str:
    return _KINDS[type(message)]


def encode(message: Message) -> str:
    """One JSON line (without the newline)."""
    return json.dumps({name_of(message): asdict(message)}, separators=(",", ":"), default=str)


def decode(line: str) -> Message:
    """A message from its JSON line; a clear error for anything else."""
    try:
        ((name, body),) = json.loads(line).items()
        kind = _NAMES[name]
        return _build(kind, body)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ProtocolViolation(f"not a materialization message: {line[:200]!r} ({e})") from None


def _build(kind: type, body: dict[str, Any]) -> Any:
    values = {}
    for f in fields(kind):
        if f.name not in body:
            continue
        value = body[f.name]
        if f.name == "key" and value is not None:
            value = tuple(value)
        elif f.name == "state" and kind is not Open and value is not None:
            value = DriverState(**value)
        elif f.name == "bindings":
            value = tuple(
                Binding(**{k: tuple(v) if isinstance(v, list) else v for k, v in b.items()})
                for b in value
            )
        values[f.name] = value
    return kind(**values)


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON merge patch (RFC 7396): ``patch`` applied to ``target``."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


def apply_state(current: dict[str, Any], update: DriverState | None) -> dict[str, Any]:
    """The driver checkpoint after ``update``."""
    if update is None:
        return current
    return merge_patch(current, update.updated) if update.merge_patch else update.updated
