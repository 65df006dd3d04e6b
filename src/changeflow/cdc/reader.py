"""The single-threaded CDC v2 reader: the reference for every other reader.

Messages may arrive duplicated, reordered and re-batched in any way; the reader reports the
same history of ``(updates, frontier)`` advances. It holds only updates at unreported times and
progress statements that are not yet actionable. Contradictions are errors, never guesses.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_left
from collections.abc import Hashable, Iterable, Iterator
from typing import Any

from changeflow.cdc.messages import Message, Progress, Updates, without_gc
from changeflow.errors import CdcConflict, InvalidTime, ProtocolViolation
from changeflow.time import (
    Antichain,
    MutableAntichain,
    Product,
    Time,
    join,
    minimum_like,
    sort_key,
    time_to_json,
)

Batch = tuple[list[tuple[Hashable, Time, int]], Antichain]


class CdcReader:
    """Push messages with :meth:`feed`; each call returns the frontier advances it allows.

    State, after the reference design: ``reported`` (everything not beyond it is out),
    ``progress`` (the frontier of incorporated progress statements), ``outstanding`` (announced
    counts minus distinct updates received, per time) and the queue of progress statements that
    cannot be grafted on yet. ``announced`` and ``received`` remember counts at unreported times
    so contradicting statements are caught.
    """

    def __init__(self, audit: bool = False) -> None:
        """``audit`` also remembers reported updates and counts, so that statements arriving
        after their times were reported are still checked: for finite inputs, where every
        contradiction must be found whatever the order. It costs memory for the whole history.
        """
        self._audit: dict[tuple[Hashable, Time], int] | None = {} if audit else None
        self._audit_counts: dict[Time, int] = {}
        self._audit_order: list[Time] = []  # reported int times with updates, increasing
        self._minimum: Time | None = None
        self.reported = Antichain()
        self.progress = Antichain()
        self._updates: dict[Time, dict[Hashable, int]] = {}
        self._seen: set[tuple[Hashable, Time, int]] = set()  # the same updates, as triples
        self._times: list[Any] = []  # heap of (sort_key, time) over self._updates (int times)
        self._announced: dict[Time, int] = {}
        self._announced_order: list[Time] = []  # int times, increasing; starts at _order_start
        self._order_start = 0
        self._received: dict[Time, int] = {}
        self._early: list[Any] = []  # times updated before progress covered them (int: a heap)
        self._outstanding = MutableAntichain()
        self._queue: list[Progress] = []  # product statements not yet actionable
        self._int_queue: list[tuple[int, int, Progress]] = []  # heap by lower: int statements
        self._arrivals = itertools.count()  # ties in the heap go by arrival

    # -- public ------------------------------------------------------------------------------

    def feed(self, message: Message) -> list[Batch]:
        """Take one message; return the ``(updates, frontier)`` advances it makes possible."""
        with without_gc():  # the reader's state holds no cycles; see without_gc
            return self._feed(message)

    def _feed(self, message: Message) -> list[Batch]:
        if isinstance(message, Updates):
            self._receive_updates(message.updates)
        elif isinstance(message, Progress):
            self._start(message.lower.elements or message.upper.elements)
            lower = message.validate().lower.elements
            if lower:  # a statement with an empty lower has an empty interval: it says nothing
                self._check_kind(lower[0])  # the statement is of one lattice: one time tells
                if isinstance(lower[0], Product):
                    self._queue.append(message)
                else:
                    entry = (lower[0], next(self._arrivals), message)
                    heapq.heappush(self._int_queue, entry)
        else:
            raise ProtocolViolation(f"not a CDC v2 message: {message!r}")
        self._drain_progress()
        return self._advance()

    def read(self, messages: Iterable[Message]) -> Iterator[Batch]:
        """Pull form: the frontier advances of a stream of messages, in order."""
        for message in messages:
            yield from self.feed(message)

    @property
    def frontier(self) -> Antichain:
        """Everything at times not at or beyond this has been reported."""
        return self.reported if self._minimum is not None else Antichain([0])

    def pending_updates(self) -> int:
        """Updates held at unreported times."""
        return sum(len(v) for v in self._updates.values())

    def announced(self) -> dict[Time, int]:
        """Counts that progress announced at unreported times (times not listed count 0)."""
        return dict(self._announced)

    def pending_times(self) -> set[Time]:
        """Times of the updates held."""
        return set(self._updates)

    def queued_progress(self) -> list[Progress]:
        """Progress statements not yet actionable (they leave a gap after the progress frontier)."""
        return self._queue + [p for _, _, p in sorted(self._int_queue, key=lambda e: e[:2])]

    def missing(self) -> dict[Time, tuple[int, int]]:
        """Times that hold the frontier back: ``{time: (announced, received)}``."""
        frontier = self._outstanding.frontier()
        return {t: (self._announced.get(t, 0), self._received.get(t, 0)) for t in frontier}

    # -- internals ---------------------------------------------------------------------------

    def _start(self, times: Iterable[Time]) -> None:
        """Fix the lattice from the first time seen: frontiers start at its minimum."""
        if self._minimum is not None:
            return
        for t in times:
            self._minimum = minimum_like(t)
            self.reported = Antichain([self._minimum])
            self.progress = Antichain([self._minimum])
            return

    def _check_kind(self, t: Time) -> None:
        m = self._minimum
        if isinstance(t, Product) != isinstance(m, Product) or (
            isinstance(t, Product) and len(t) != len(m)  # type: ignore[arg-type]
        ):
            raise InvalidTime(
                f"time {time_to_json(t)} is not of the same lattice as {time_to_json(m)}"  # type: ignore[arg-type]
            )

    def _receive_updates(self, updates: Iterable[tuple[Hashable, Time, int]]) -> None:
        """Keep the novel updates at unreported times; count them per time.

        Duplicates (within the message or of held updates) are removed by one set difference
        in C; only novel triples reach the Python loop.
        """
        if self._minimum is None:
            for _, t, _ in updates:
                self._start([t])
                break
            else:
                return
        fresh = set(updates).difference(self._seen)
        if not fresh:
            return
        reported = self.reported
        low = reported.elements[0] if len(reported) == 1 else None
        int_times = low is not None and not isinstance(low, Product)
        store, per_time, accepted = self._updates, {}, []
        for triple in fresh:
            data, time, diff = triple
            if int_times and type(time) is int:
                if time < low:
                    self._check_late(data, time, diff)
                    continue
            else:
                self._check_kind(time)
                if not reported.less_equal(time):
                    self._check_late(data, time, diff)
                    continue
            if diff == 0 or type(diff) is not int:
                raise ProtocolViolation(
                    f"update {data!r} at time {time_to_json(time)} has diff {diff!r}: "
                    "CDC v2 updates carry non-zero integer diffs"
                )
            at_time = store.get(time)
            if at_time is None:
                at_time = store[time] = {}
                heapq.heappush(self._times, (sort_key(time), time))
            elif data in at_time:
                raise CdcConflict(
                    f"conflicting updates for data {data!r} at time {time_to_json(time)}: "
                    f"diff {at_time[data]} and diff {diff}"
                )
            at_time[data] = diff
            per_time[time] = per_time.get(time, 0) + 1
            accepted.append(triple)
        self._seen.update(accepted)
        received, announced, progress = self._received, self._announced, self.progress
        early, int_lattice = self._early, not isinstance(self._minimum, Product)
        covered = progress.elements[0] if int_lattice and len(progress) == 1 else None
        for time, k in per_time.items():
            n = received[time] = received.get(time, 0) + k
            count = announced.get(time)
            if count is None:
                if (time < covered) if covered is not None else not progress.less_equal(time):
                    count = 0  # covered by progress, which counted nothing here
                elif n == k:  # checked once progress covers it: see _check_early
                    if int_lattice:
                        heapq.heappush(early, time)
                    else:
                        early.append(time)
            if count is not None and n > count:
                raise CdcConflict(
                    f"time {time_to_json(time)} has more distinct updates ({n}) than its "
                    f"progress count ({count}) allows"
                )
            self._outstanding.update(time, -k)

    def _check_late(self, data: Hashable, time: Time, diff: int) -> None:
        """In audit mode, an update at a reported time must be one that was reported."""
        if self._audit is None:
            return
        known = self._audit.get((data, time))
        if known is None:
            raise CdcConflict(
                f"update for data {data!r} at time {time_to_json(time)}, which was already "
                f"complete with {self._audit_counts.get(time, 0)} updates"
            )
        if known != diff:
            raise CdcConflict(
                f"conflicting updates for data {data!r} at time {time_to_json(time)}: "
                f"diff {known} and diff {diff}"
            )

    def _check_late_progress(self, p: Progress, counts: dict[Time, int]) -> None:
        """In audit mode, progress over reported times must agree with what was reported."""
        reported = self.reported
        for t, c in counts.items():
            if not reported.less_equal(t) and self._audit_counts.get(t, 0) != c:
                raise CdcConflict(
                    f"progress statements disagree about time {time_to_json(t)}: "
                    f"count {self._audit_counts.get(t, 0)} and count {c}"
                )
        if isinstance(self._minimum, Product):
            known = [t for t in self._audit_counts if p.lower.contains_interval(t, p.upper)]
        else:
            order = self._audit_order
            lo = bisect_left(order, p.lower.elements[0]) if p.lower else len(order)
            hi = bisect_left(order, p.upper.elements[0]) if p.upper else len(order)
            known = order[lo:hi]
        for t in known:
            if t not in counts:
                raise CdcConflict(
                    f"progress statements disagree about time {time_to_json(t)}: "
                    f"count {self._audit_counts[t]} and count 0"
                )

    def _drain_progress(self) -> None:
        """Graft every actionable progress statement onto the progress frontier."""
        heap = self._int_queue
        while heap and (not self.progress or heap[0][0] <= self.progress.elements[0]):
            self._incorporate(heapq.heappop(heap)[2])
        progressed = True
        while progressed:
            progressed = False
            for i, statement in enumerate(self._queue):
                if statement.lower <= self.progress:
                    del self._queue[i]
                    self._incorporate(statement)
                    progressed = True
                    break

    def _incorporate(self, p: Progress) -> None:
        covered = self.progress
        # A statement may list its counts in any order; int times are announced in increasing
        # order so that ``_announced_order`` stays sorted for the bisects.
        counts = dict(p.counts if isinstance(self._minimum, Product) else sorted(p.counts))
        for t in counts:
            self._check_kind(t)
        # Where ``p`` overlaps times already covered but not yet reported, it must agree.
        for t in self._announced_within(p.lower, p.upper, covered):
            if counts.get(t, 0) != self._announced[t]:
                raise CdcConflict(
                    f"progress statements disagree about time {time_to_json(t)}: "
                    f"count {self._announced[t]} and count {counts.get(t, 0)}"
                )
        for t, c in counts.items():
            if covered.less_equal(t):
                if c:
                    self._announce(t, c)
            elif c and self.reported.less_equal(t) and t not in self._announced:
                raise CdcConflict(
                    f"progress statements disagree about time {time_to_json(t)}: "
                    f"count 0 and count {c}"
                )
        if self._audit is not None:
            self._check_late_progress(p, counts)
        self.progress = Antichain(join(u, f) for u in p.upper for f in covered)
        self._check_early()

    def _check_early(self) -> None:
        """Times that got updates before progress covered them must have been counted."""
        early, announced = self._early, self._announced
        if not early:
            return
        if isinstance(self._minimum, Product):
            beyond, covered = [], []
            for t in early:
                (beyond if self.progress.less_equal(t) else covered).append(t)
            self._early = beyond
        else:
            upper = self.progress.elements[0] if self.progress else None
            covered = []
            while early and (upper is None or early[0] < upper):
                covered.append(heapq.heappop(early))
        for t in covered:
            if t not in announced and t in self._received:
                raise CdcConflict(
                    f"time {time_to_json(t)} has {self._received[t]} distinct updates but its "
                    "progress count is 0"
                )

    def _announce(self, t: Time, c: int) -> None:
        n = self._received.get(t, 0)
        if n > c:
            raise CdcConflict(
                f"time {time_to_json(t)} has more distinct updates ({n}) than its "
                f"progress count ({c}) allows"
            )
        self._announced[t] = c
        if not isinstance(t, Product):
            self._announced_order.append(t)  # increasing: new counts lie beyond all earlier
        self._outstanding.update(t, c)

    def _announced_within(self, lower: Antichain, upper: Antichain, covered: Antichain) -> list:
        """Announced (unreported) times in ``[lower, upper)`` and not beyond ``covered``."""
        if isinstance(self._minimum, Product):
            return [
                t
                for t in self._announced
                if lower.contains_interval(t, upper) and not covered.less_equal(t)
            ]
        order = self._announced_order
        lo = bisect_left(order, lower.elements[0], self._order_start) if lower else len(order)
        hi = len(order)
        for bound in (upper, covered):
            if bound:
                hi = min(hi, bisect_left(order, bound.elements[0], self._order_start))
        return order[lo:hi]

    def _advance(self) -> list[Batch]:
        if self._minimum is None:
            return []
        frontier = self.progress.meet(self._outstanding.frontier())
        if frontier == self.reported:
            return []
        self.reported = frontier
        out: list[tuple[Hashable, Time, int]] = []
        for t in self._take_times_before(frontier):
            at_time = self._updates.pop(t)
            expected = self._announced.get(t, 0)
            if len(at_time) != expected:
                raise CdcConflict(
                    f"time {time_to_json(t)} has {len(at_time)} distinct updates but its "
                    f"progress count is {expected}"
                )
            published = [(d, t, r) for d, r in at_time.items()]
            if self._audit is not None:
                self._audit.update(((d, t), r) for d, r in at_time.items())
                self._audit_counts[t] = len(at_time)
                if not isinstance(t, Product):
                    self._audit_order.append(t)
            self._seen.difference_update(published)
            out += published
            del self._received[t]
            if self._announced.pop(t, None) is not None:
                self._outstanding.discard(t)
        if not isinstance(self._minimum, Product):
            self._forget_order_before(frontier)
        return [(out, frontier)]

    def _forget_order_before(self, frontier: Antichain) -> None:
        """Move the start of the int announcement order past reported times."""
        order = self._announced_order
        end = len(order)
        if frontier:
            end = bisect_left(order, frontier.elements[0], self._order_start)
        if end > 1024 and end * 2 > len(order):
            del order[:end]
            end = 0
        self._order_start = end

    def _take_times_before(self, frontier: Antichain) -> list[Time]:
        """Pending update times not at or beyond ``frontier``, in time order."""
        if isinstance(self._minimum, Product):
            ready = [t for t in self._updates if not frontier.less_equal(t)]
            ready.sort(key=sort_key)
            if ready:
                done = set(ready)
                self._times = [(sort_key(t), t) for t in self._updates if t not in done]
                heapq.heapify(self._times)
            return ready
        heap, ready = self._times, []
        while heap and not frontier.less_equal(heap[0][1]):
            ready.append(heapq.heappop(heap)[1])
        return ready


def decode(messages: Iterable[Message]) -> Iterator[Batch]:
    """The history that a stream of messages recovers, as ``(updates, frontier)`` advances."""
    return CdcReader().read(messages)
