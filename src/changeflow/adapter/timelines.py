"""Timelines: what a timestamp means, and refusing to mix meanings.

A timestamp is a number; its timeline says what the number counts. ``EpochMilliseconds`` is
wall-clock time (tables, most sources); ``External(name)`` is a CDC source's own clock, joinable
only with itself; ``User(name)`` is a timeline the user named (``WITH (TIMELINE='name')``) to
group sources that may be used together. A dataflow reads one timeline, a transaction stays in
one; anything else is a :class:`~changeflow.errors.TimelineConflict` (SQLSTATE 0A000).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from changeflow.errors import InvalidInput, PlanError, TimelineConflict

EPOCH = "EpochMilliseconds"
EXTERNAL = "External"
USER = "User"
FEATURE_NOT_SUPPORTED = "0A000"


@dataclass(frozen=True)
class Timeline:
    """One timeline: ``kind`` is EpochMilliseconds, External or User; the last two have a name.

    ``str()`` is the stable text form kept in the catalog (``EpochMilliseconds``,
    ``External(orders)``, ``User(shop)``); :meth:`parse` reads it back.
    """

    kind: str
    name: str | None = None

    KINDS: ClassVar[tuple[str, ...]] = (EPOCH, EXTERNAL, USER)

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise InvalidInput(
                f"unknown timeline kind {self.kind!r}; expected one of {', '.join(self.KINDS)}"
            )
        if self.kind == EPOCH:
            if self.name is not None:
                raise InvalidInput(f"timeline {EPOCH} has no name, not {self.name!r}")
        elif not isinstance(self.name, str) or not self.name:
            raise InvalidInput(f"timeline {self.kind} needs a non-empty name, not {self.name!r}")

    @classmethod
    def epoch_milliseconds(cls) -> Timeline:
        """Wall-clock milliseconds since the Unix epoch."""
        return cls(EPOCH)

    @classmethod
    def external(cls, name: str) -> Timeline:
        """The own clock of the CDC source ``name``."""
        return cls(EXTERNAL, name)

    @classmethod
    def user(cls, name: str) -> Timeline:
        """The timeline the user named ``name``."""
        return cls(USER, name)

    @property
    def is_epoch(self) -> bool:
        return self.kind == EPOCH

    def __str__(self) -> str:
        return self.kind if self.name is None else f"{self.kind}({self.name})"

    @classmethod
    def parse(cls, text: str | Timeline) -> Timeline:
        """The timeline whose ``str()`` is ``text`` (a Timeline is returned as is)."""
        if isinstance(text, Timeline):
            return text
        if not isinstance(text, str):
            raise InvalidInput(f"a timeline is text such as 'User(shop)', not {text!r}")
        if text == EPOCH:
            return cls(EPOCH)
        kind, paren, rest = text.partition("(")
        if paren and kind in (EXTERNAL, USER) and rest.endswith(")") and len(rest) > 1:
            return cls(kind, rest[:-1])
        raise InvalidInput(
            f"cannot read timeline {text!r}: expected {EPOCH}, {EXTERNAL}(name) or {USER}(name)"
        )


EPOCH_MILLISECONDS = Timeline(EPOCH)


def check_single(timelines: Iterable[Timeline | str], what: str) -> Timeline | None:
    """The one timeline that ``what`` (a view, a SELECT …) reads, None if it reads none.

    More than one is a :class:`TimelineConflict` naming them, sorted.
    """
    found = {Timeline.parse(t) for t in timelines}
    if len(found) > 1:
        names = sorted(str(t) for t in found)
        raise TimelineConflict(
            f"multiple timelines within one dataflow are not supported: {what} reads "
            f"{', '.join(names)}; put the sources it reads in one timeline with "
            "WITH (TIMELINE='name')",
            sqlstate=FEATURE_NOT_SUPPORTED,
            timelines=names,
            what=what,
        )
    return next(iter(found), None)


def check_transaction(
    first: Timeline | str | None, other: Timeline | str | None
) -> Timeline | None:
    """The transaction's timeline after a statement in ``other`` joins one in ``first``.

    None stands for no timeline yet (or a statement that reads none); two different timelines
    are a :class:`TimelineConflict` naming both.
    """
    a = None if first is None else Timeline.parse(first)
    b = None if other is None else Timeline.parse(other)
    if a is not None and b is not None and a != b:
        raise TimelineConflict(
            "Transactions can only reference objects in the same timedomain: the transaction "
            f"is in timeline {a}, this statement uses timeline {b}; end the transaction first",
            sqlstate=FEATURE_NOT_SUPPORTED,
            timelines=[str(a), str(b)],
        )
    return a if a is not None else b


def timestamp_number(text: str, what: str) -> int:
    """The integer timestamp of ``AS OF`` or ``UP TO`` (``what``), 22P02 if ``text`` is none."""
    try:
        return int(text)
    except ValueError:
        raise PlanError(
            f"{what} takes an integer timestamp, not {text!r}", sqlstate="22P02"
        ) from None
