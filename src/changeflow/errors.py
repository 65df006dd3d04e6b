"""The one error hierarchy of changeflow, named by meaning.

Every error a user can cause derives from :class:`ChangeflowError`; the CLI prints its message
and exits non-zero, without a traceback.
"""


class ChangeflowError(Exception):
    """Base of every changeflow error; its message says what, where, and what to do."""


class InvalidInput(ChangeflowError, ValueError):
    """Input that is malformed: a bad file, column, option or value."""


class InvalidTime(InvalidInput):
    """A time or frontier that is not of the lattice (wrong type, out of range)."""


class FrontierViolation(ChangeflowError):
    """A read outside ``[since, upper)``, an append below ``upper``, a frontier moved backwards."""


class UpperMismatch(ChangeflowError):
    """A compare-and-append whose expected upper is not the current upper."""

    def __init__(self, name: str, expected: object, current: object) -> None:
        super().__init__(f"{name}: upper mismatch: expected {expected}, current {current}")
        self.expected = expected
        self.current = current


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
