"""Lattice times and frontiers.

A time is an ``int`` (0 <= t < 2**63, totally ordered) or a :class:`Product` of such ints
(product partial order). Both support ``<=`` as the lattice order, so generic code compares
times with ``a <= b`` and combines them with :func:`join` and :func:`meet`.
A frontier is an :class:`Antichain` of mutually incomparable times.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any, Union

from changeflow.errors import InvalidTime

MAX_TIME = 2**63 - 1


class Product(tuple):
    """A time of several int coordinates, ordered coordinate-wise (the product order).

    ``<=`` and ``<`` are the partial order, not the lexicographic one: sort with
    :func:`sort_key`, which is a linear extension of it.
    """

    __slots__ = ()

    def __new__(cls, coords: Iterable[int]) -> Product:
        return super().__new__(cls, coords)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Product):
            return NotImplemented
        return all(a <= b for a, b in zip(self, other, strict=True))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Product):
            return NotImplemented
        return self != other and self <= other

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Product):
            return NotImplemented
        return other <= self

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Product):
            return NotImplemented
        return other < self

    def __repr__(self) -> str:
        return f"Product({list(self)})"

    __hash__ = tuple.__hash__
    __eq__ = tuple.__eq__
    __ne__ = tuple.__ne__


Time = Union[int, Product]  # noqa: UP007


def less_equal(a: Time, b: Time) -> bool:
    """The lattice order: ``a`` is at or before ``b``."""
    return a <= b


def join(a: Time, b: Time) -> Time:
    """Least upper bound."""
    if isinstance(a, Product):
        return Product(map(max, a, b))
    return a if a >= b else b


def meet(a: Time, b: Time) -> Time:
    """Greatest lower bound."""
    if isinstance(a, Product):
        return Product(map(min, a, b))
    return a if a <= b else b


def minimum_like(t: Time) -> Time:
    """The minimum of the lattice that ``t`` belongs to."""
    return Product((0,) * len(t)) if isinstance(t, Product) else 0


def sort_key(t: Time) -> Any:
    """A total order that extends the lattice order (lexicographic for products)."""
    return tuple(t) if isinstance(t, Product) else t


def advance_by(t: Time, since: Antichain) -> Time:
    """The earliest time that reads the same as ``t`` at every time at or beyond ``since``.

    meet over ``s`` in ``since`` of ``join(t, s)``; an empty ``since`` leaves ``t`` unchanged.
    """
    result: Time | None = None
    for s in since:
        j = join(t, s)
        result = j if result is None else meet(result, j)
    return t if result is None else result


def time_from_json(value: Any) -> Time:
    """Parse ``5`` or ``[1, 2]``, checking the range of every coordinate."""
    if isinstance(value, bool):
        raise InvalidTime(f"a time is an int or a list of ints, not {value!r}")
    if isinstance(value, int):
        _check_coordinate(value)
        return value
    if isinstance(value, (list, tuple)) and value:
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidTime(f"a product time holds ints only, not {value!r}")
            _check_coordinate(v)
        return Product(value)
    raise InvalidTime(f"a time is an int or a non-empty list of ints, not {value!r}")


def time_to_json(t: Time) -> int | list[int]:
    return list(t) if isinstance(t, Product) else t


def _check_coordinate(v: int) -> None:
    if not 0 <= v <= MAX_TIME:
        raise InvalidTime(f"time {v} is outside 0 <= t < 2^63")


def check_time(t: Any) -> Time:
    """Validate a time given from Python (an int or a Product)."""
    if isinstance(t, Product):
        if not t:
            raise InvalidTime("a product time has at least one coordinate")
        for v in t:
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidTime(f"a product time holds ints only, not {t!r}")
            _check_coordinate(v)
        return t
    if isinstance(t, int) and not isinstance(t, bool):
        _check_coordinate(t)
        return t
    raise InvalidTime(f"a time is an int or a Product, not {t!r}")


class Antichain:
    """A frontier: a set of mutually incomparable times, kept minimal.

    Immutable. ``[]`` (the empty frontier) is the greatest frontier: no time is at or beyond it.
    Equality is equality as sets.
    """

    __slots__ = ("_elements",)

    def __init__(self, times: Iterable[Time] = ()) -> None:
        minimal: list[Time] = []
        for t in times:
            if any(m <= t for m in minimal):
                continue
            minimal = [m for m in minimal if not t <= m]
            minimal.append(t)
        minimal.sort(key=sort_key)
        self._elements: tuple[Time, ...] = tuple(minimal)

    @classmethod
    def single(cls, t: int) -> Antichain:
        """The frontier ``[t]`` of one int time, checked for range only (a fast path)."""
        if not 0 <= t <= MAX_TIME:
            raise InvalidTime(f"time {t} is outside 0 <= t < 2^63")
        frontier = cls.__new__(cls)
        frontier._elements = (t,)
        return frontier

    @property
    def elements(self) -> tuple[Time, ...]:
        return self._elements

    def __iter__(self) -> Iterator[Time]:
        return iter(self._elements)

    def __len__(self) -> int:
        return len(self._elements)

    def __bool__(self) -> bool:
        return bool(self._elements)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Antichain) and self._elements == other._elements

    def __hash__(self) -> int:
        return hash(self._elements)

    def __repr__(self) -> str:
        return f"Antichain({[time_to_json(t) for t in self._elements]})"

    def insert(self, t: Time) -> Antichain:
        """The frontier with ``t`` added (keeping only minimal elements)."""
        return Antichain((*self._elements, t))

    def less_equal(self, t: Time) -> bool:
        """Is ``t`` at or beyond this frontier?"""
        for e in self._elements:  # noqa: SIM110 - a plain loop: this is on every hot path
            if e <= t:
                return True
        return False

    def less_than(self, t: Time) -> bool:
        """Is ``t`` strictly beyond this frontier?"""
        for e in self._elements:  # noqa: SIM110
            if e < t:
                return True
        return False

    def contains_interval(self, t: Time, upper: Antichain) -> bool:
        """Is ``t`` in ``[self, upper)``: at or beyond self and not at or beyond ``upper``?"""
        return self.less_equal(t) and not upper.less_equal(t)

    def __le__(self, other: Antichain) -> bool:
        """Frontier order: every time at or beyond ``other`` is at or beyond ``self``."""
        return all(self.less_equal(t) for t in other._elements)

    def __lt__(self, other: Antichain) -> bool:
        return self <= other and self != other

    def __ge__(self, other: Antichain) -> bool:
        return other <= self

    def __gt__(self, other: Antichain) -> bool:
        return other < self

    def meet(self, other: Antichain) -> Antichain:
        """The greatest frontier at or before both (minimal elements of the union)."""
        return Antichain((*self._elements, *other._elements))

    def join(self, other: Antichain) -> Antichain:
        """The least frontier at or beyond both (minimal pairwise joins)."""
        return Antichain(join(a, b) for a in self._elements for b in other._elements)

    def to_json(self) -> list[Any]:
        return [time_to_json(t) for t in self._elements]

    @classmethod
    def from_json(cls, value: Any) -> Antichain:
        if not isinstance(value, list):
            raise InvalidTime(f"a frontier is a list of times, not {value!r}")
        times = [time_from_json(v) for v in value]
        kinds = {len(t) if isinstance(t, Product) else None for t in times}
        if len(kinds) > 1:
            raise InvalidTime(f"a frontier holds times of one lattice, not {value!r}")
        return cls(times)


class MutableAntichain:
    """Counts per time; the frontier is the minimal times whose count is positive.

    Counts may go negative (a time seen before it is announced). Int times use a heap so the
    frontier costs O(log n) per change; product times recompute the minimal elements lazily.
    """

    __slots__ = ("_counts", "_heap", "_frontier", "_dirty")

    def __init__(self) -> None:
        self._counts: dict[Time, int] = {}
        self._heap: list[Any] = []
        self._frontier = Antichain()
        self._dirty = False

    def count(self, t: Time) -> int:
        return self._counts.get(t, 0)

    def frontier(self) -> Antichain:
        if self._dirty:
            self._frontier = self._compute()
            self._dirty = False
        return self._frontier

    def update(self, t: Time, delta: int) -> None:
        """Add ``delta`` to the count at ``t`` (no report; see :meth:`update_iter`)."""
        counts = self._counts
        old = counts.get(t, 0)
        new = old + delta
        if new:
            counts[t] = new
        else:
            counts.pop(t, None)
        if (old > 0) != (new > 0):
            if new > 0:
                heapq.heappush(self._heap, (sort_key(t), t))
            self._dirty = True

    def update_iter(self, updates: Iterable[tuple[Time, int]]) -> list[tuple[Time, int]]:
        """Apply count changes; return how the frontier changed as ``(time, +1 | -1)`` pairs."""
        before = self.frontier()
        for t, delta in updates:
            self.update(t, delta)
        after = self.frontier()
        if before == after:
            return []
        old, new = set(before), set(after)
        return [(t, -1) for t in before if t not in new] + [(t, 1) for t in after if t not in old]

    def discard(self, t: Time) -> None:
        """Forget the count at ``t`` entirely."""
        if self._counts.pop(t, 0) > 0:
            self._dirty = True

    def _compute(self) -> Antichain:
        heap, counts = self._heap, self._counts
        while heap and counts.get(heap[0][1], 0) <= 0:
            heapq.heappop(heap)
        if not heap:
            return Antichain()
        top = heap[0][1]
        if not isinstance(top, Product):
            return Antichain((top,))
        # Rebuild the heap without stale or duplicate entries, then take the minimal elements.
        positive = [t for t, c in counts.items() if c > 0]
        self._heap = [(sort_key(t), t) for t in positive]
        heapq.heapify(self._heap)
        return Antichain(positive)


Bound = int | None  # the one int time of a frontier, or None for the empty frontier


def to_bound(frontier: Antichain | int | None, what: str = "a frontier") -> Bound:
    """The single int time of a frontier (an int stands for itself), None for the empty one."""
    if frontier is None:
        return None
    if not isinstance(frontier, Antichain):
        return check_int_time(frontier, what)
    check_frontier(frontier, what)
    if not frontier:
        return None
    if len(frontier) != 1 or isinstance(frontier.elements[0], Product):
        raise InvalidTime(f"{what} {frontier} is not a frontier of one int time")
    return frontier.elements[0]


def to_frontier(value: Antichain | int | None, what: str = "a frontier") -> Antichain:
    """A frontier from an Antichain, one int time (``[t]``) or None (the empty frontier)."""
    if value is None:
        return Antichain()
    if isinstance(value, Antichain):
        return check_frontier(value, what)
    return Antichain.single(check_int_time(value, what))


def check_frontier(frontier: Antichain, what: str = "a frontier") -> Antichain:
    """``frontier`` if it is a well-formed Antichain of valid times (an InvalidTime if not: a
    frontier built by hand may hold floats, None or out-of-range ints)."""
    elements = getattr(frontier, "_elements", None)
    if not isinstance(elements, tuple):
        raise InvalidTime(f"{what} is not a well-formed frontier")
    for t in elements:
        try:
            check_time(t)
        except InvalidTime as e:
            raise InvalidTime(f"{what} {list(elements)!r} holds an invalid time: {e}") from None
    if len(elements) > 1 and Antichain(elements).elements != elements:
        raise InvalidTime(f"{what} {list(elements)!r} is not an antichain")
    return frontier


def check_int_time(value: Any, what: str = "a time") -> int:
    """An int time in ``0 <= t < 2^63`` (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTime(f"{what} must be an int time, not {value!r}")
    if not 0 <= value <= MAX_TIME:
        raise InvalidTime(f"{what} {value} is outside 0 <= t < 2^63")
    return value


def show_bound(b: Bound) -> str:
    """A bound as its frontier's JSON: ``[5]``, or ``[]`` for None."""
    return "[]" if b is None else f"[{b}]"
