"""Reading a CDC v2 folder again from a frontier an earlier read reached.

Below ``start`` a collection's history is complete and already taken (its reader reported it).
A later read of the folder may skip every *retired* file, one that holds nothing at or beyond
``start``, and read the others with their history below ``start`` cut away: the statements
clipped to ``[start, upper)``, the updates before ``start`` dropped, and one statement that
``[0, start)`` holds no updates put first. A reader fed that tells the same story from
``start`` on as it would fed every file, so a folder's reread costs what arrived since, not its
whole history. (What it cannot do is audit the new files against the cut history: a copy of an
old update that contradicts it is not caught, as for any reader that runs on a stream.)

Integer times only: :func:`extent_of` gives ``None`` for a file of product times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from changeflow.cdc.messages import Message, Progress, Updates, UpdateTable
from changeflow.time import Antichain, Product
from changeflow.updates import TIME

CLOSED = 1 << 63  # the upper of a statement that closes the collection (an empty upper)


@dataclass(frozen=True)
class Extent:
    """How far in time one file reaches: its last update's time and its statements' last
    upper (``CLOSED`` for the empty upper)."""

    last_time: int = -1
    last_upper: int = 0

    def joined(self, other: Extent) -> Extent:
        return Extent(max(self.last_time, other.last_time), max(self.last_upper, other.last_upper))

    def below(self, upper: int | None) -> bool:
        """Does the file hold nothing at or beyond ``upper`` (``None``: the collection is
        closed, everything is below it)?"""
        return upper is None or (self.last_time < upper and self.last_upper <= upper)


def extent_of(message: Message | UpdateTable) -> Extent | None:
    """How far one message reaches; ``None`` if it holds product times."""
    if isinstance(message, UpdateTable):
        times = message.table.column(TIME)
        if not pa.types.is_integer(times.type):
            return None
        last = pc.max(times).as_py()
        return Extent(last_time=-1 if last is None else last)
    if isinstance(message, Updates):
        times = [t for _, t, _ in message.updates]
        if any(isinstance(t, Product) for t in times):
            return None
        return Extent(last_time=max(times, default=-1))
    elements = [*message.lower.elements, *message.upper.elements]
    if any(isinstance(t, Product) for t in elements):
        return None
    return Extent(last_upper=message.upper.elements[0] if message.upper else CLOSED)


def further(reach: Extent | None, message: Message | UpdateTable) -> Extent | None:
    """``reach`` extended by ``message``'s (``None``, product times, stays ``None``)."""
    step = extent_of(message) if reach is not None else None
    return None if step is None or reach is None else reach.joined(step)


def opening(start: int) -> Progress:
    """The statement a resumed read starts with: nothing happens in ``[0, start)``."""
    return Progress(Antichain([0]), Antichain([start]), ())


def cut(message: Message | UpdateTable, start: int) -> Message | UpdateTable | None:
    """``message`` without its history before ``start``; ``None`` if nothing is left."""
    if isinstance(message, UpdateTable):
        table = message.table.filter(pc.greater_equal(message.table.column(TIME), start))
        return UpdateTable(table) if table.num_rows else None
    if isinstance(message, Updates):
        updates = [u for u in message.updates if u[1] >= start]
        return Updates(tuple(updates)) if updates else None
    if message.upper and message.upper.elements[0] <= start:
        return None
    if not message.lower or message.lower.elements[0] >= start:
        return message
    counts = tuple((t, c) for t, c in message.counts if t >= start)
    return replace(message, lower=Antichain([start]), counts=counts)


def cut_statements(statements: Iterable[Progress], start: int | None) -> list[Progress]:
    """Statements read from ``start`` on: :func:`opening` first, each cut by :func:`cut`."""
    statements = list(statements)
    if not start:
        return statements
    kept = (cut(s, start) for s in statements)
    return [opening(start), *(s for s in kept if isinstance(s, Progress))]
