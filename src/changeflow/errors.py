"""The one error hierarchy of changeflow, named by meaning.

Every error a user can cause derives from :class:`ChangeflowError`; the CLI prints its message
and exits non-zero, without a traceback. An error carries its values as fields, so code can act
on them and so it survives a process or Spark boundary whole: :meth:`ChangeflowError.to_wire`
and :func:`from_wire` are the one way across, and :func:`with_context` the one way to add where
an error happened without losing its class or fields.
"""

from __future__ import annotations

from typing import Any


class ChangeflowError(Exception):
    """Base of every changeflow error; its message says what, where, and what to do."""

    def __init__(self, message: str, **fields: Any) -> None:
        from changeflow.redact import redact

        message = redact(message)  # a target's URL may hold a password
        super().__init__(message)
        self.message = message
        self.fields = fields
        for name, value in fields.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:  # pickling (Spark executors) keeps the fields
        return (_rebuild, (type(self).__name__, self.message, self.fields))

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able form: the class name, the message and the fields (a frontier as
        ``{"frontier": [...]}``, any other value that is not plain JSON as its ``repr``)."""
        fields = {name: _field_to_wire(value) for name, value in self.fields.items()}
        return {"kind": type(self).__name__, "message": self.message, "fields": fields}


class InvalidInput(ChangeflowError, ValueError):
    """Input that is malformed: a bad file, column, option or value."""


class InvalidTime(InvalidInput):
    """A time or frontier that is not of the lattice (wrong type, out of range)."""


class FrontierViolation(ChangeflowError):
    """A read outside ``[since, upper)``, an append below ``upper``, a frontier moved backwards."""


class UpperMismatch(ChangeflowError):
    """A compare-and-append whose expected upper is not the current upper."""

    def __init__(self, name: str, expected: object, current: object) -> None:
        super().__init__(
            f"{name}: upper mismatch: expected {expected}, current {current}",
            name=name,
            expected=expected,
            current=current,
        )


class CapabilityError(ChangeflowError):
    """A capability that is expired, dropped, or used on the wrong object."""


class FencedOff(ChangeflowError):
    """A writer or driver that a newer instance has fenced off."""


class ProtocolViolation(ChangeflowError):
    """Messages that break a protocol: they contradict each other or arrive out of order."""


class CdcConflict(ProtocolViolation):
    """CDC v2 statements that contradict each other; the message names the time and the data."""


class TimelineConflict(ChangeflowError):
    """Times from different timelines used together."""


class ConsensusUnavailable(ChangeflowError):
    """The consensus store could not be reached; the outcome of a write may be unknown."""


class StoreGone(ChangeflowError):
    """The store a running process opened is no longer there: its consensus file or local
    blob root deleted (or replaced) underneath it."""


class StoreMismatch(ChangeflowError):
    """A store that is not the one expected: a blob root that belongs to another consensus, an
    empty or foreign consensus file where one was made."""


class Timeout(ChangeflowError):
    """Waited the allowed time for something that did not happen (a reply, an upper, a shard)."""


class PlanError(InvalidInput):
    """A plan or query that does not type-check, refused before anything runs; ``sqlstate`` is
    PostgreSQL's code for it (42804 a type mismatch, 42703 an unknown column …)."""


class EvalError(ChangeflowError):
    """A value SQL refuses to compute (integer out of range, division by zero, a bad cast);
    ``sqlstate`` is PostgreSQL's code for it (22003, 22012, 22P02 …)."""


def _classes() -> dict[str, type[ChangeflowError]]:
    found: dict[str, type[ChangeflowError]] = {}
    todo: list[type[ChangeflowError]] = [ChangeflowError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def _rebuild(kind: str, message: str, fields: dict[str, Any]) -> ChangeflowError:
    cls = _classes().get(kind, ChangeflowError)
    error = cls.__new__(cls)
    ChangeflowError.__init__(error, message, **fields)
    return error


def _field_to_wire(value: Any) -> Any:
    from changeflow.time import Antichain

    if isinstance(value, Antichain):
        return {"frontier": value.to_json()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple) and all(isinstance(v, str | int | float) for v in value):
        return list(value)
    return repr(value)


def _field_from_wire(value: Any) -> Any:
    from changeflow.time import Antichain

    if isinstance(value, dict) and value.keys() == {"frontier"}:
        return Antichain.from_json(value["frontier"])
    return value


def from_wire(value: Any) -> ChangeflowError:
    """The error that :meth:`ChangeflowError.to_wire` described (an unknown kind or a malformed
    value becomes a plain :class:`ChangeflowError` with what could be read)."""
    if not isinstance(value, dict):
        return ChangeflowError(f"an error came back that could not be read: {value!r}")
    fields = value.get("fields")
    return _rebuild(
        str(value.get("kind", "")),
        str(value.get("message", "failed without a message")),
        {k: _field_from_wire(v) for k, v in fields.items()} if isinstance(fields, dict) else {},
    )


def with_context(error: ChangeflowError, where: str) -> ChangeflowError:
    """The same error, its message prefixed with ``where: `` (class and fields kept)."""
    return _rebuild(type(error).__name__, f"{where}: {error.message}", error.fields)
