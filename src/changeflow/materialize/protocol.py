"""The materialization protocol: the messages between a runtime and a driver, and their codec.

Messages from the runtime are imperative (Open, Acknowledge, Load, Flush, Store, StartCommit);
the driver answers in the past tense (Opened, Acknowledged, Loaded, Flushed, StartedCommit).
Field names follow Estuary Flow's ``materialize.proto`` where it has one. On the wire a
message is one JSON object per line: ``{"<message name>": {fields}}``.

The runtime speaks in batches: one :class:`LoadBatch` of a transaction's keys, answered by one
:class:`LoadedBatch` of the stored rows, and one :class:`StoreBatch` of its rows, each an Arrow
table (see :mod:`~changeflow.materialize.columns`), so values keep their types (timestamps,
decimals) and no per-row work is needed. On the wire a table field is ``{"arrow": N}`` in the
JSON line, and the line is followed by N bytes of Arrow IPC stream. The per-key messages
(Load, Loaded, Store) remain for drivers and tools that speak JSON alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import IO, Any

import pyarrow as pa

from changeflow.errors import ProtocolViolation, from_wire

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
class LoadBatch:
    """The keys to load, a table of the binding's key columns."""

    binding: int
    keys: pa.Table


@dataclass(frozen=True)
class StoreBatch:
    """Rows to store: the binding's columns, ``_exists`` and ``_deleted``."""

    binding: int
    rows: pa.Table


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
class LoadedBatch:
    """The stored rows of a LoadBatch's keys (keys that do not exist are left out)."""

    binding: int
    rows: pa.Table


@dataclass(frozen=True)
class Flushed:
    state: DriverState | None = None


@dataclass(frozen=True)
class StartedCommit:
    state: DriverState | None = None


Request = Open | Acknowledge | Load | LoadBatch | Flush | Store | StoreBatch | StartCommit
Response = Opened | Acknowledged | Loaded | LoadedBatch | Flushed | StartedCommit
Message = Request | Response

_NAMES: dict[str, type] = {
    "open": Open,
    "acknowledge": Acknowledge,
    "load": Load,
    "load_batch": LoadBatch,
    "flush": Flush,
    "store": Store,
    "store_batch": StoreBatch,
    "start_commit": StartCommit,
    "opened": Opened,
    "acknowledged": Acknowledged,
    "loaded": Loaded,
    "loaded_batch": LoadedBatch,
    "flushed": Flushed,
    "started_commit": StartedCommit,
}
_KINDS = {kind: name for name, kind in _NAMES.items()}


def name_of(message: Message) -> str:
    return _KINDS[type(message)]


_TABLES = {LoadBatch: "keys", StoreBatch: "rows", LoadedBatch: "rows"}  # the Arrow field


def encode(message: Message) -> str:
    """One JSON line (without the newline), for a message without a table."""
    if type(message) in _TABLES:
        raise ProtocolViolation(f"{name_of(message)} carries a table: use to_bytes")
    return json.dumps({name_of(message): asdict(message)}, separators=(",", ":"), default=str)


def to_bytes(message: Message) -> bytes:
    """The wire form of any message: its JSON line, then the Arrow IPC stream of its table."""
    column = _TABLES.get(type(message))
    if column is None:
        return (encode(message) + "\n").encode()
    table: pa.Table = getattr(message, column)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    payload = sink.getvalue()
    header = {name_of(message): {"binding": message.binding, column: {"arrow": payload.size}}}
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload.to_pybytes()


def read_message(stream: IO[bytes]) -> Message | None:
    """The next message of ``stream`` in its wire form (see :func:`to_bytes`); None at the end.
    A driver's error line (``{"error": …}``) is raised as the error it was."""
    line = stream.readline()
    if not line:
        return None
    try:
        ((name, body),) = json.loads(line).items()
        column = None if name == "error" else _TABLES.get(_NAMES[name])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ProtocolViolation(f"not a materialization message: {line[:200]!r} ({e})") from None
    if name == "error":  # the driver failed: its own error, rebuilt
        raise from_wire(body)
    if column is None:
        return decode(line.decode())
    try:
        size = int(body[column]["arrow"])
        payload = stream.read(size)
        if len(payload) != size:
            raise ValueError(f"{size} bytes announced, {len(payload)} arrived")
        table = pa.ipc.open_stream(payload).read_all()
        return _NAMES[name](binding=int(body["binding"]), **{column: table})
    except (ValueError, KeyError, TypeError, pa.ArrowException) as e:
        raise ProtocolViolation(f"a damaged {name} message: {e}") from None


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
