"""The pTVC reference model: consolidation, reads, and append/compact preserving reads."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.collection import PTVC, consolidate, diff, read
from changeflow.errors import FrontierViolation, InvalidTime
from changeflow.time import Antichain, Product

DATA = st.sampled_from(["a", "b", "c", ("t", 1), 7])
DIFFS = st.integers(-3, 3)

# -- basics -------------------------------------------------------------------------------------


def test_consolidate_examples():
    ups = [("a", 1, 1), ("a", 1, 1), ("b", 0, 1), ("c", 1, 2), ("c", 1, -2), ("a", 0, -1)]
    assert consolidate(ups) == [("a", 0, -1), ("b", 0, 1), ("a", 1, 2)]
    assert consolidate([]) == []
    p = Product
    assert consolidate([("x", p([1, 0]), 1), ("x", p([0, 1]), 1), ("x", p([1, 0]), -1)]) == [
        ("x", p([0, 1]), 1)
    ]


@given(st.lists(st.tuples(DATA, st.integers(0, 5), DIFFS), max_size=30))
def test_consolidate_laws(ups):
    c = consolidate(ups)
    keys = [(d, t) for d, t, _ in c]
    assert len(keys) == len(set(keys))  # one entry per (data, time)
    assert all(r != 0 for _, _, r in c)  # no zeros
    assert [t for _, t, _ in c] == sorted(t for _, t, _ in c)  # in time order
    assert consolidate(c) == c  # idempotent
    assert consolidate(list(reversed(ups))) == c  # order does not matter
    for d, t, r in c:
        assert r == sum(r2 for d2, t2, r2 in ups if d2 == d and t2 == t)
    for t in range(7):
        assert read(c, t) == read(ups, t)


def test_read_examples():
    ups = [("a", 0, 2), ("b", 0, 1), ("b", 1, -1), ("c", 1, 1), ("a", 2, -2), ("c", 2, -1)]
    assert read(ups, 0) == {"a": 2, "b": 1}
    assert read(ups, 1) == {"a": 2, "c": 1}
    assert read(ups, 2) == {}
    p = Product
    pu = [("a", p([0, 1]), 1), ("a", p([1, 0]), 1), ("a", p([1, 1]), -1)]
    assert read(pu, p([0, 0])) == {}
    assert read(pu, p([0, 1])) == {"a": 1}
    assert read(pu, p([1, 0])) == {"a": 1}
    assert read(pu, p([1, 1])) == {"a": 1}
    assert read(pu, p([0, 5])) == {"a": 1}


versions = st.dictionaries(DATA, st.integers(-3, 3).filter(bool), max_size=4)


@given(versions, versions, st.integers(0, 5))
def test_diff_is_the_minimal_change(cv1, cv2, t):
    d = diff(t, cv1, cv2)
    assert all(time == t and r != 0 for _, time, r in d)
    assert len({x for x, _, _ in d}) == len(d)
    start = [(x, 0, m) for x, m in cv1.items()]
    assert read(start + d, t) == cv2
    assert diff(t, cv1, cv1) == []


# -- random pTVCs -------------------------------------------------------------------------------

INT_BOX = list(range(0, 14))
PRODUCT_BOX = [Product(c) for c in itertools.product(range(6), repeat=2)]


def frontier_at_or_beyond(kind, current: Antichain) -> st.SearchStrategy[Antichain]:
    """A frontier at or beyond ``current`` (sometimes the empty frontier)."""
    if not current:
        return st.just(Antichain())
    if kind == "int":
        (c,) = current.elements
        return st.one_of(st.integers(c, 12).map(lambda x: Antichain([x])), st.just(Antichain()))
    points = st.lists(st.lists(st.integers(0, 5), min_size=2, max_size=2).map(Product), max_size=3)
    return st.one_of(points.map(lambda ps: current.join(Antichain(ps))), st.just(Antichain()))


@st.composite
def ptvc_scenarios(draw, kind):
    time = (
        st.integers(0, 11)
        if kind == "int"
        else st.lists(st.integers(0, 4), min_size=2, max_size=2).map(Product)
    )
    tvc = draw(st.lists(st.tuples(DATA, time, DIFFS), max_size=25))
    ops = []
    since = upper = Antichain([0 if kind == "int" else Product([0, 0])])
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            upper = draw(frontier_at_or_beyond(kind, upper))
            ops.append(("append", upper))
        else:
            since = draw(frontier_at_or_beyond(kind, since))
            ops.append(("compact", since))
    return tvc, ops


def check_reads(ptvc: PTVC, tvc, box) -> None:
    for t in box:
        if ptvc.since.less_equal(t) and not ptvc.upper.less_equal(t):
            assert ptvc.read(t) == read(tvc, t), t
        else:
            with pytest.raises(FrontierViolation):
                ptvc.read(t)


def run_scenario(kind, scenario, rnd) -> None:
    tvc, ops = scenario
    box = INT_BOX if kind == "int" else PRODUCT_BOX
    ptvc = PTVC.empty(0 if kind == "int" else Product([0, 0]), name="orders")
    check_reads(ptvc, tvc, box)
    for op, frontier in ops:
        if op == "append":
            batch = [u for u in tvc if ptvc.upper.contains_interval(u[1], frontier)]
            # noise that cancels, inside the interval
            batch += [(d, t, s * 5) for d, t, _ in batch[:2] for s in (1, -1)]
            rnd.shuffle(batch)
            ptvc.append(iter(batch), frontier)
            assert ptvc.upper == frontier
        else:
            before = ptvc.distinct_times()
            ptvc.compact(frontier)
            assert ptvc.since == frontier
            assert ptvc.distinct_times() <= before
        assert ptvc.updates == consolidate(ptvc.updates)
        check_reads(ptvc, tvc, box)


@settings(max_examples=300)
@given(ptvc_scenarios("int"), st.randoms(use_true_random=False))
def test_append_and_compact_preserve_reads_int(scenario, rnd):
    run_scenario("int", scenario, rnd)


@settings(max_examples=300)
@given(ptvc_scenarios("product"), st.randoms(use_true_random=False))
def test_append_and_compact_preserve_reads_product(scenario, rnd):
    run_scenario("product", scenario, rnd)


@given(
    st.lists(st.tuples(DATA, st.integers(0, 11), DIFFS), max_size=25),
    st.lists(st.integers(0, 12), min_size=1, max_size=6).map(sorted),
)
def test_appends_in_steps_equal_one_append(tvc, uppers):
    stepped, whole = PTVC.empty(), PTVC.empty()
    for u in uppers:
        new = Antichain([u])
        stepped.append([x for x in tvc if stepped.upper.contains_interval(x[1], new)], new)
    last = Antichain([uppers[-1]])
    whole.append([x for x in tvc if not last.less_equal(x[1])], last)
    assert (
        stepped.updates == whole.updates == consolidate(x for x in tvc if not last.less_equal(x[1]))
    )


def test_compaction_merges_times():
    p = Product
    ptvc = PTVC.empty(p([0, 0]))
    ups = [("a", p([0, 0]), 1), ("a", p([1, 0]), -1), ("b", p([0, 3]), 1), ("b", p([2, 2]), 1)]
    ptvc.append(ups, Antichain())
    ptvc.compact(Antichain([p([1, 2]), p([2, 1])]))
    # (0,0) and (1,0) both slide to (1,1) and cancel; (0,3) slides to (1,3)
    assert ptvc.updates == [("b", p([1, 3]), 1), ("b", p([2, 2]), 1)]
    ptvc.compact(Antichain([p([3, 3])]))
    assert ptvc.updates == [("b", p([3, 3]), 2)]
    assert ptvc.read(p([3, 3])) == {"b": 2}
    ptvc.compact(Antichain())
    assert ptvc.updates == [] and ptvc.distinct_times() == 0


def test_int_compaction_to_a_single_time():
    ptvc = PTVC.empty()
    ptvc.append([("a", 0, 1), ("a", 1, 1), ("b", 2, 1), ("a", 3, -2), ("c", 5, 1)], Antichain([6]))
    ptvc.compact(Antichain([4]))
    assert ptvc.updates == [("b", 4, 1), ("c", 5, 1)]
    assert ptvc.read(4) == {"b": 1} and ptvc.read(5) == {"b": 1, "c": 1}


# -- errors -------------------------------------------------------------------------------------


def test_read_outside_since_and_upper():
    ptvc = PTVC.empty(name="orders")
    with pytest.raises(FrontierViolation, match="orders.*time 0"):
        ptvc.read(0)  # [0, 0) is empty
    ptvc.append([("a", 1, 1)], Antichain([5]))
    assert ptvc.read(4) == {"a": 1}
    with pytest.raises(FrontierViolation, match=r"orders: cannot read at time 5.*\[5\]"):
        ptvc.read(5)
    ptvc.compact(Antichain([2]))
    with pytest.raises(FrontierViolation, match=r"time 1.*since Antichain\(\[2\]\)"):
        ptvc.read(1)
    assert ptvc.read(2) == {"a": 1}


def test_append_outside_the_interval_is_an_error_and_changes_nothing():
    ptvc = PTVC.empty(name="orders")
    ptvc.append([("a", 1, 1)], Antichain([3]))
    snapshot = (list(ptvc.updates), ptvc.since, ptvc.upper)
    with pytest.raises(FrontierViolation, match=r"orders: update 'b' at time 2 is outside"):
        ptvc.append([("c", 4, 1), ("b", 2, 1)], Antichain([6]))  # below upper
    with pytest.raises(FrontierViolation, match="time 6"):
        ptvc.append([("c", 4, 1), ("b", 6, 1)], Antichain([6]))  # at new upper
    with pytest.raises(FrontierViolation, match="time 3"):
        ptvc.append([("b", 3, 1)], Antichain([3]))  # empty interval
    with pytest.raises(FrontierViolation, match="move upper back"):
        ptvc.append([], Antichain([2]))
    with pytest.raises(InvalidTime):
        ptvc.append([("b", -4, 1)], Antichain([6]))
    assert (ptvc.updates, ptvc.since, ptvc.upper) == snapshot
    ptvc.append([], Antichain())
    with pytest.raises(FrontierViolation, match="move upper back"):
        ptvc.append([], Antichain([100]))


def test_product_append_outside_the_interval():
    p = Product
    ptvc = PTVC.empty(p([0, 0]))
    ptvc.append([("a", p([0, 5]), 1)], Antichain([p([1, 0]), p([0, 6])]))
    with pytest.raises(FrontierViolation):
        ptvc.append([("a", p([0, 2]), 1)], Antichain([p([3, 3])]))  # not at or beyond upper
    with pytest.raises(FrontierViolation, match="move upper back"):
        ptvc.append([], Antichain([p([0, 5])]))  # [0,5] is before [0,6]
    ptvc.append([("b", p([1, 0]), 1), ("c", p([0, 6]), 1)], Antichain([p([2, 7])]))
    assert ptvc.read(p([1, 6])) == {"a": 1, "b": 1, "c": 1}


def test_since_may_not_move_back():
    ptvc = PTVC.empty(name="orders")
    ptvc.compact(Antichain([3]))
    with pytest.raises(FrontierViolation, match="orders: compaction would move since back"):
        ptvc.compact(Antichain([2]))
    ptvc.compact(Antichain([3]))  # staying put is fine
    ptvc.compact(Antichain())
    with pytest.raises(FrontierViolation):
        ptvc.compact(Antichain([9]))
    assert ptvc.since == Antichain()
