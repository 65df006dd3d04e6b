"""Random CDC histories, the writer's messages for them, what at-least-once storage may do to
them (duplicated, re-batched, reordered) and a checked feed into a reader: shared by the
reader's tests (``test_reader_*.py``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import strategies as st

from changeflow.cdc.columnar import ColumnarReader
from changeflow.cdc.messages import Message, Progress, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.writer import CdcWriter, write_history
from changeflow.collection import consolidate
from changeflow.time import Antichain, Product, Time

A = Antichain
P = Product


class TriplesColumnarReader(ColumnarReader):
    """The columnar reader with its advances as triples, to be checked like the reference."""

    def feed(self, message):  # type: ignore[override]
        return [(self.triples(table), f) for table, f in super().feed(message)]


# Every property and conflict test runs against both readers: the answers must be the same.
READERS = pytest.mark.parametrize(
    "make", [CdcReader, TriplesColumnarReader], ids=["reference", "columnar"]
)

# -- histories ----------------------------------------------------------------------------------

DATA = st.sampled_from("abc")  # a small alphabet, so (data, time) pairs collide
DIFFS = st.sampled_from([-2, -1, 1, 2])


@dataclass
class History:
    """Steps of ``(updates, new frontier)`` given to a writer, then maybe ``close``."""

    steps: list[tuple[list[tuple[str, Time, int]], Antichain]]
    closed: bool
    minimum: Time

    def all_updates(self) -> list[tuple[str, Time, int]]:
        return [u for ups, _ in self.steps for u in ups]

    def final(self) -> Antichain:
        if self.closed:
            return Antichain()
        return self.steps[-1][1] if self.steps else Antichain([self.minimum])

    def expected(self, frontier: Antichain | None = None) -> list:
        """The consolidated history at times not at or beyond ``frontier`` (default: final)."""
        f = self.final() if frontier is None else frontier
        return consolidate(u for u in self.all_updates() if not f.less_equal(u[1]))

    def write(self, batch_size: int, groups: Sequence[int] = ()) -> list[Message]:
        """The writer's messages; ``groups`` coarsens the steps (sizes of runs merged into one)."""
        steps = self.steps
        if groups:
            merged, i = [], 0
            for g in groups:
                run = steps[i : i + g]
                if run:
                    merged.append(([u for ups, _ in run for u in ups], run[-1][1]))
                i += g
            merged += steps[i:]
            steps = merged
        if self.closed and self.minimum == 0:
            return write_history(steps, batch_size)
        writer = CdcWriter(batch_size, self.minimum)  # the lattice, even of an empty history
        out = [m for ups, f in steps for m in writer.write(ups, f)]
        return out + writer.close() if self.closed else out


def with_cancellations(draw, ups: list) -> list:
    """Add retractions of some updates, so that diffs cancel inside the writer."""
    if not ups:
        return ups
    undo = draw(st.lists(st.sampled_from(ups), max_size=2))
    return ups + [(d, t, -r) for d, t, r in undo]


@st.composite
def int_histories(draw, max_steps: int = 8) -> History:
    steps, f = [], 0
    for _ in range(draw(st.integers(0, max_steps))):
        ups = draw(st.lists(st.tuples(DATA, st.integers(f, f + 5), DIFFS), max_size=6))
        f += draw(st.sampled_from([0, 1, 1, 2, 3]))  # 0: a step without progress
        steps.append((with_cancellations(draw, ups), A([f])))
    return History(steps, draw(st.sampled_from([True, True, True, False])), 0)


def offsets(hi: int) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(0, hi), st.integers(0, hi))


@st.composite
def product_histories(draw, max_steps: int = 6) -> History:
    steps, f = [], A([P([0, 0])])

    def beyond(hi: int) -> st.SearchStrategy[Product]:
        return st.tuples(st.sampled_from(f.elements), offsets(hi)).map(
            lambda x: P([x[0][0] + x[1][0], x[0][1] + x[1][1]])
        )

    for _ in range(draw(st.integers(0, max_steps))):
        ups = draw(st.lists(st.tuples(DATA, beyond(3), DIFFS), max_size=6))
        f = f.join(A(draw(st.lists(beyond(2), min_size=1, max_size=2))))
        steps.append((with_cancellations(draw, ups), f))
    return History(steps, draw(st.sampled_from([True, True, True, False])), P([0, 0]))


# -- chaos --------------------------------------------------------------------------------------


def split_progress(p: Progress, rnd: random.Random, depth: int = 0) -> list[Progress]:
    """Split ``[lower, upper)`` at a frontier between them, partitioning the counts; shuffle
    the order of the counts; maybe recurse."""
    counts = list(p.counts)
    rnd.shuffle(counts)
    p = Progress(p.lower, p.upper, tuple(counts))
    if depth > 2 or rnd.random() < 0.4 or not p.lower:
        return [p]
    low = p.lower.elements[0]
    if isinstance(low, int):
        high = p.upper.elements[0] if p.upper else low + 6
        mid = A([rnd.randint(low, high)])
    else:
        x = A(P([rnd.randint(0, 14), rnd.randint(0, 14)]) for _ in range(rnd.randint(1, 2)))
        mid = p.lower.join(x).meet(p.upper)
    assert p.lower <= mid <= p.upper
    first = Progress(p.lower, mid, tuple((t, c) for t, c in counts if not mid.less_equal(t)))
    second = Progress(mid, p.upper, tuple((t, c) for t, c in counts if mid.less_equal(t)))
    return split_progress(first, rnd, depth + 1) + split_progress(second, rnd, depth + 1)


def mangle(messages: Sequence[Message], data: st.DataObject) -> list[Message]:
    """Duplicate, re-batch and reorder: what at-least-once storage may do to a stream."""
    rnd = data.draw(st.randoms(use_true_random=False))
    pool = [u for m in messages if isinstance(m, Updates) for u in m.updates]
    pool += [u for u in pool if rnd.random() < 0.3]  # duplicated triples
    pool = data.draw(st.permutations(pool))
    out: list[Message] = []
    i = 0
    while i < len(pool):  # re-batch: the same triple may land twice in one message
        n = rnd.randint(1, 6)
        out.append(Updates(tuple(pool[i : i + n])))
        i += n
    for m in messages:
        if isinstance(m, Progress):
            out += split_progress(m, rnd)
    out += [m for m in out if rnd.random() < 0.25]  # duplicated messages
    return data.draw(st.permutations(out))


# -- feeding and checking -----------------------------------------------------------------------


def feed_checked(
    reader: CdcReader, messages: Sequence[Message], history: History
) -> tuple[list, Antichain]:
    """Feed everything, checking every reported batch; return all updates and the frontier."""
    prev = Antichain([history.minimum])
    reported: list = []
    for m in messages:
        for ups, frontier in reader.feed(m):
            assert prev <= frontier and prev != frontier, (prev, frontier)
            for _, t, r in ups:
                assert prev.less_equal(t) and not frontier.less_equal(t), (t, prev, frontier)
                assert r != 0
            reported += ups
            prev = frontier
            # everything not beyond the frontier is out, and it is exactly the history
            assert sorted(reported, key=repr) == sorted(history.expected(frontier), key=repr)
    return reported, prev
