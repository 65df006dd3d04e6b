"""The CDC v2 writer: turns batches of updates and frontier advances into messages.

Updates are held until the frontier passes their time, then written consolidated (one entry
per ``(data, time)``, no zeros) in ``Updates`` messages of at most ``batch_size`` entries,
followed by one ``Progress`` statement for the interval just closed. The intervals tile time
from the minimum to ``[]`` (when closed) without gaps. The output is a function of the input
history alone, so redundant writers agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator

from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.errors import FrontierViolation, InvalidInput
from changeflow.time import Antichain, Time, check_time, minimum_like, sort_key, time_to_json


class CdcWriter:
    """Push batches with :meth:`write`, end with :meth:`close`; each returns messages."""

    def __init__(self, batch_size: int = 1024, minimum: Time | None = None) -> None:
        if batch_size < 1:
            raise InvalidInput(f"batch size must be at least 1, not {batch_size}")
        self.batch_size = batch_size
        self._frontier: Antichain | None = None if minimum is None else Antichain([minimum])
        self._pending: dict[Time, dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))

    @property
    def frontier(self) -> Antichain | None:
        """The frontier written so far (``None`` until the time type is known)."""
        return self._frontier

    def write(
        self, updates: Iterable[tuple[Hashable, Time, int]], frontier: Antichain
    ) -> list[Message]:
        """Take updates and a new frontier; return the messages that closing up to it makes.

        Everything is checked before anything is taken: on an error the writer is unchanged.
        """
        updates = list(updates)
        start = self._frontier
        for data, time, _ in updates:
            check_time(time)
            if start is None:
                start = Antichain([minimum_like(time)])
            if not start.less_equal(time):
                raise FrontierViolation(
                    f"cdc writer: update {data!r} at time {time_to_json(time)} is not at or "
                    f"beyond the frontier already written, {start}"
                )
        if start is None:
            start = Antichain([minimum_like(frontier.elements[0])]) if frontier else Antichain()
        if not start <= frontier:
            raise FrontierViolation(
                f"cdc writer: frontier may not go back from {start} to {frontier}"
            )
        self._frontier = start
        for data, time, diff in updates:
            self._pending[time][data] += diff
        if frontier == start:
            return []
        return list(self._close_interval(frontier))

    def close(self) -> list[Message]:
        """Close the stream: everything pending is written and progress reaches ``[]``."""
        if self._frontier is None:
            self._frontier = Antichain([0])
        return self.write((), Antichain())

    def _close_interval(self, upper: Antichain) -> Iterator[Message]:
        lower = self._frontier
        assert lower is not None
        ready = [t for t in self._pending if not upper.less_equal(t)]
        ready.sort(key=sort_key)
        counts: list[tuple[Time, int]] = []
        batch: list[tuple[Hashable, Time, int]] = []
        for t in ready:
            entries = [(d, t, r) for d, r in self._pending.pop(t).items() if r]
            entries.sort(key=lambda u: repr(u[0]))
            if entries:
                counts.append((t, len(entries)))
            for update in entries:
                batch.append(update)
                if len(batch) == self.batch_size:
                    yield Updates(tuple(batch))
                    batch = []
        if batch:
            yield Updates(tuple(batch))
        self._frontier = upper
        yield Progress(lower, upper, tuple(counts))


def write_history(
    history: Iterable[tuple[Iterable[tuple[Hashable, Time, int]], Antichain]],
    batch_size: int = 1024,
) -> list[Message]:
    """All messages for a history of ``(updates, frontier)`` steps, closed at the end."""
    writer = CdcWriter(batch_size)
    messages: list[Message] = []
    for updates, frontier in history:
        messages.extend(writer.write(updates, frontier))
    messages.extend(writer.close())
    return messages
