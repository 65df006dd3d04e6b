"""Laws of lattice times, frontiers (antichains) and counted frontiers (mutable antichains)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changeflow.errors import InvalidTime
from changeflow.time import (
    MAX_TIME,
    Antichain,
    MutableAntichain,
    Product,
    advance_by,
    check_time,
    join,
    less_equal,
    meet,
    minimum_like,
    sort_key,
    time_from_json,
    time_to_json,
)

# -- strategies ---------------------------------------------------------------------------------

SMALL = 5  # product coordinates lie in [0, SMALL); the brute-force box is [0, SMALL]^dims

small_ints = st.integers(0, 12)
wide_ints = st.one_of(small_ints, st.integers(0, MAX_TIME))


def products(dims: int, hi: int = SMALL - 1) -> st.SearchStrategy[Product]:
    return st.lists(st.integers(0, hi), min_size=dims, max_size=dims).map(Product)


KINDS = ["int", 2, 3]


def times_of(kind) -> st.SearchStrategy:
    return wide_ints if kind == "int" else products(kind)


def small_times_of(kind) -> st.SearchStrategy:
    return small_ints if kind == "int" else products(kind)


def n_times(n: int, small: bool = False) -> st.SearchStrategy[tuple]:
    """``n`` times of one lattice (ints, or products of 2 or 3 coordinates)."""
    pick = small_times_of if small else times_of
    return st.sampled_from(KINDS).flatmap(lambda k: st.tuples(*[pick(k)] * n))


def box(kind) -> list:
    """Every time of a small box that contains all generated small times and their joins."""
    if kind == "int":
        return list(range(14))
    return [Product(c) for c in itertools.product(range(SMALL + 1), repeat=kind)]


def kind_of(t) -> object:
    return len(t) if isinstance(t, Product) else "int"


frontier_kinds = st.sampled_from(KINDS)


def frontiers(kind, max_size: int = 4) -> st.SearchStrategy[Antichain]:
    return st.lists(small_times_of(kind), max_size=max_size).map(Antichain)


# -- lattice laws -------------------------------------------------------------------------------


@given(n_times(3))
def test_join_and_meet_are_associative(abc):
    a, b, c = abc
    assert join(join(a, b), c) == join(a, join(b, c))
    assert meet(meet(a, b), c) == meet(a, meet(b, c))


@given(n_times(2))
def test_join_and_meet_are_commutative(ab):
    a, b = ab
    assert join(a, b) == join(b, a)
    assert meet(a, b) == meet(b, a)


@given(n_times(1))
def test_join_and_meet_are_idempotent(a):
    (a,) = a
    assert join(a, a) == a
    assert meet(a, a) == a


@given(n_times(2))
def test_absorption(ab):
    a, b = ab
    assert join(a, meet(a, b)) == a
    assert meet(a, join(a, b)) == a


@given(n_times(2))
def test_le_is_the_lattice_order(ab):
    a, b = ab
    assert (a <= b) == (join(a, b) == b) == (meet(a, b) == a) == less_equal(a, b)
    assert (a < b) == (a <= b and a != b)
    assert (a >= b) == (b <= a)
    assert (a > b) == (b < a)


@given(n_times(3))
def test_join_is_least_upper_bound_and_meet_greatest_lower_bound(abc):
    a, b, c = abc
    j, m = join(a, b), meet(a, b)
    assert a <= j and b <= j and m <= a and m <= b
    if a <= c and b <= c:
        assert j <= c
    if c <= a and c <= b:
        assert c <= m


@given(n_times(2))
def test_sort_key_extends_the_order(ab):
    a, b = ab
    if a <= b:
        assert sort_key(a) <= sort_key(b)
    if sort_key(a) == sort_key(b):
        assert a == b


@given(n_times(1))
def test_minimum_like_is_below_everything(a):
    (a,) = a
    m = minimum_like(a)
    assert m <= a
    assert kind_of(m) == kind_of(a)
    assert join(m, a) == a and meet(m, a) == m


def test_product_is_the_product_order_not_lexicographic():
    a, b = Product([1, 5]), Product([2, 0])
    assert not a <= b and not b <= a
    assert not a < b and not b < a
    assert join(a, b) == Product([2, 5])
    assert meet(a, b) == Product([1, 0])
    assert Product([1, 2]) < Product([1, 3])
    assert repr(Product([1, 2])) == "Product([1, 2])"
    assert minimum_like(Product([4, 4, 4])) == Product([0, 0, 0])
    assert minimum_like(17) == 0


def test_products_of_different_kinds_do_not_compare():
    with pytest.raises((TypeError, ValueError)):
        _ = Product([1, 2]) <= Product([1, 2, 3])
    with pytest.raises(TypeError):
        _ = Product([1, 2]) <= 3


# -- frontiers ----------------------------------------------------------------------------------


@st.composite
def time_lists(draw, max_size: int = 8):
    kind = draw(frontier_kinds)
    return kind, draw(st.lists(small_times_of(kind), max_size=max_size))


def is_antichain(elements) -> bool:
    return all(not (a <= b) for a, b in itertools.permutations(elements, 2))


@given(time_lists())
def test_antichain_holds_exactly_the_minimal_elements(kl):
    _, ts = kl
    f = Antichain(ts)
    assert is_antichain(f.elements)
    assert set(f.elements) == {t for t in ts if not any(u < t for u in ts)}
    assert len(f) == len(f.elements) and bool(f) == bool(ts)
    assert list(f) == sorted(f.elements, key=sort_key)


@given(time_lists(), st.data())
def test_insert_keeps_minimality(kl, data):
    kind, ts = kl
    f = Antichain()
    for t in ts:
        f = f.insert(t)
        assert is_antichain(f.elements)
    assert f == Antichain(ts)
    t = data.draw(small_times_of(kind))
    g = Antichain(ts).insert(t)
    assert g == Antichain([*ts, t])
    assert g.less_equal(t)


@given(time_lists(), st.data())
def test_less_equal_and_less_than(kl, data):
    kind, ts = kl
    f = Antichain(ts)
    for t in box(kind):
        assert f.less_equal(t) == any(u <= t for u in ts)
        assert f.less_than(t) == any(u < t for u in ts)
    upper = data.draw(frontiers(kind))
    t = data.draw(small_times_of(kind))
    assert f.contains_interval(t, upper) == (f.less_equal(t) and not upper.less_equal(t))


def upset(f: Antichain, kind) -> set:
    return {t for t in box(kind) if f.less_equal(t)}


@st.composite
def frontier_pairs(draw, n: int = 2):
    kind = draw(frontier_kinds)
    return kind, [draw(frontiers(kind)) for _ in range(n)]


@given(frontier_pairs())
def test_frontier_order_is_reverse_inclusion_of_upsets(kfs):
    kind, (f, g) = kfs
    assert (f <= g) == (upset(g, kind) <= upset(f, kind))
    assert (f < g) == (f <= g and f != g)
    assert (f >= g) == (g <= f)
    assert (f > g) == (g < f)
    assert f <= Antichain()  # the empty frontier is the greatest
    if kind != "int":
        assert Antichain([minimum_like(Product([0] * kind))]) <= f


@given(frontier_pairs(3))
def test_frontier_order_is_a_partial_order(kfs):
    _, (f, g, h) = kfs
    assert f <= f
    if f <= g and g <= f:
        assert f == g
    if f <= g and g <= h:
        assert f <= h


@given(frontier_pairs(3))
def test_meet_and_join_of_frontiers(kfs):
    kind, (f, g, h) = kfs
    m, j = f.meet(g), f.join(g)
    assert is_antichain(m.elements) and is_antichain(j.elements)
    # bounds
    assert m <= f and m <= g
    assert f <= j and g <= j
    # greatest and least, on a random third frontier
    if h <= f and h <= g:
        assert h <= m
    if f <= h and g <= h:
        assert j <= h
    # exactly: the meet's upset is the union, the join's the intersection
    assert upset(m, kind) == upset(f, kind) | upset(g, kind)
    assert upset(j, kind) == upset(f, kind) & upset(g, kind)
    # lattice laws on frontiers
    assert m == g.meet(f) and j == g.join(f)
    assert f.meet(f) == f and f.join(f) == f
    assert f.join(f.meet(g)) == f and f.meet(f.join(g)) == f
    assert f.meet(g).meet(h) == f.meet(g.meet(h))
    assert f.join(g).join(h) == f.join(g.join(h))


@given(time_lists(), st.randoms(use_true_random=False))
def test_antichain_equality_is_set_equality(kl, rnd):
    _, ts = kl
    f = Antichain(ts)
    shuffled = list(ts)
    rnd.shuffle(shuffled)
    g = Antichain(shuffled + [join(t, u) for t, u in zip(ts, shuffled, strict=True)])
    assert f == g and hash(f) == hash(g)
    assert f == Antichain(f.elements)
    assert (f == Antichain(ts[1:])) == (set(f) == set(Antichain(ts[1:])))
    assert f != list(f)


def test_empty_frontier():
    empty = Antichain()
    assert not empty and len(empty) == 0
    assert not empty.less_equal(0) and not empty.less_equal(MAX_TIME)
    assert Antichain([0]) <= empty and not empty <= Antichain([0])
    assert empty.meet(Antichain([3])) == Antichain([3])
    assert empty.join(Antichain([3])) == empty
    assert empty.to_json() == [] and Antichain.from_json([]) == empty
    assert repr(Antichain([Product([1, 2])])) == "Antichain([[1, 2]])"


# -- JSON ---------------------------------------------------------------------------------------


@given(n_times(1))
def test_time_json_round_trip(a):
    (a,) = a
    j = time_to_json(a)
    assert isinstance(j, int if isinstance(a, int) else list)
    back = time_from_json(j)
    assert back == a and type(back) is type(a)
    assert check_time(a) == a


@given(time_lists())
def test_frontier_json_round_trip(kl):
    _, ts = kl
    f = Antichain(ts)
    assert Antichain.from_json(f.to_json()) == f


def test_json_time_of_both_kinds():
    assert time_from_json(5) == 5
    assert time_from_json([1, 2]) == Product([1, 2])
    assert time_from_json(MAX_TIME) == MAX_TIME
    assert time_from_json(0) == 0
    assert time_to_json(Product([3, 4])) == [3, 4]


@pytest.mark.parametrize(
    "value",
    [-1, 2**63, 2**70, [1, -1], [1, 2**63], 1.0, "1", True, False, None, [], [1, True], [1.5],
     [[1]], {"t": 1}, [1, "2"]],
)  # fmt: skip
def test_time_from_json_rejects(value):
    with pytest.raises(InvalidTime):
        time_from_json(value)


@pytest.mark.parametrize(
    "value",
    [5, None, {"a": 1}, "[1]", [-1], [[1, 2], [-1, 0]], [1, [1, 2]], [[1, 2], [1, 2, 3]],
     [[1, 2], 3]],
)  # fmt: skip
def test_frontier_from_json_rejects(value):
    with pytest.raises(InvalidTime):
        Antichain.from_json(value)


@pytest.mark.parametrize(
    "value", [-1, 2**63, 1.0, "3", True, None, [1, 2], (1, 2), Product([1, -2]), Product([1.5])]
)
def test_check_time_rejects(value):
    with pytest.raises(InvalidTime):
        check_time(value)


# -- advance_by ---------------------------------------------------------------------------------


def test_advance_by_examples():
    assert advance_by(3, Antichain([5])) == 5
    assert advance_by(7, Antichain([5])) == 7
    assert advance_by(3, Antichain()) == 3
    p = Product
    assert advance_by(p([0, 0]), Antichain([p([1, 2]), p([2, 1])])) == p([1, 1])
    assert advance_by(p([0, 3]), Antichain([p([1, 2]), p([2, 1])])) == p([1, 3])
    assert advance_by(p([5, 0]), Antichain([p([1, 2]), p([2, 1])])) == p([5, 1])
    assert advance_by(p([2, 2]), Antichain([p([1, 2]), p([2, 1])])) == p([2, 2])
    assert advance_by(p([0, 0, 9]), Antichain([p([1, 0, 0])])) == p([1, 0, 9])


@given(st.data())
def test_advance_by_laws(data):
    kind = data.draw(frontier_kinds)
    since = data.draw(frontiers(kind))
    t = data.draw(small_times_of(kind))
    a = advance_by(t, since)
    assert t <= a  # it only slides forward
    assert advance_by(a, since) == a  # idempotent
    if since.less_equal(t):
        assert a == t  # times at or beyond since are left alone
    for r in box(kind):
        if since.less_equal(r):
            # the compaction rule: the same reads at every time at or beyond since
            assert (a <= r) == (t <= r)
    # and it slides furthest: every time with that property is at or before it
    if since:
        for c in box(kind):
            if all((c <= r) == (t <= r) for r in box(kind) if since.less_equal(r)):
                assert c <= a


# -- MutableAntichain ---------------------------------------------------------------------------


@st.composite
def count_sequences(draw):
    kind = draw(frontier_kinds)
    pool = draw(st.lists(small_times_of(kind), min_size=1, max_size=6, unique=True))
    steps = draw(
        st.lists(
            st.one_of(
                st.tuples(
                    st.just("update_iter"),
                    st.lists(st.tuples(st.sampled_from(pool), st.integers(-2, 2)), max_size=5),
                ),
                st.tuples(st.just("update"), st.tuples(st.sampled_from(pool), st.integers(-2, 2))),
                st.tuples(st.just("discard"), st.sampled_from(pool)),
            ),
            max_size=30,
        )
    )
    return steps


def model_frontier(counts: dict) -> Antichain:
    return Antichain(t for t, c in counts.items() if c > 0)


@given(count_sequences())
def test_mutable_antichain_against_model(steps):
    ma, model = MutableAntichain(), {}
    assert ma.frontier() == Antichain()
    for op, arg in steps:
        before = model_frontier(model)
        if op == "update_iter":
            changes = ma.update_iter(arg)
            for t, d in arg:
                model[t] = model.get(t, 0) + d
            after = model_frontier(model)
            # exactly the frontier changes: removals of old elements, additions of new ones
            assert sorted(changes, key=lambda c: (c[1], sort_key(c[0]))) == sorted(
                [(t, -1) for t in before if t not in set(after)]
                + [(t, 1) for t in after if t not in set(before)],
                key=lambda c: (c[1], sort_key(c[0])),
            )
            assert len(changes) == len({c[0] for c in changes})
            assert (
                Antichain(
                    [t for t in before if (t, -1) not in changes] + [t for t, d in changes if d > 0]
                )
                == after
            )
        elif op == "update":
            t, d = arg
            ma.update(t, d)
            model[t] = model.get(t, 0) + d
        else:
            ma.discard(arg)
            model.pop(arg, None)
        assert ma.frontier() == model_frontier(model)
        for t, c in model.items():
            assert ma.count(t) == c


def test_mutable_antichain_negative_counts_and_return_to_zero():
    ma = MutableAntichain()
    assert ma.update_iter([(5, -1)]) == []
    assert ma.frontier() == Antichain() and ma.count(5) == -1
    assert ma.update_iter([(5, 2)]) == [(5, 1)]
    assert ma.frontier() == Antichain([5])
    assert sorted(ma.update_iter([(3, 1), (5, -1)])) == [(3, 1), (5, -1)]
    assert ma.update_iter([(3, -1), (3, 1)]) == []
    assert ma.update_iter([(3, -1)]) == [(3, -1)]
    assert ma.frontier() == Antichain() and ma.count(3) == 0 and ma.count(5) == 0
    p = Product
    mp = MutableAntichain()
    assert sorted(mp.update_iter([(p([1, 0]), 1), (p([0, 1]), 1), (p([1, 1]), 1)])) == [
        (p([0, 1]), 1),
        (p([1, 0]), 1),
    ]
    assert sorted(mp.update_iter([(p([0, 1]), -1)])) == [(p([0, 1]), -1)]
    assert mp.frontier() == Antichain([p([1, 0])])
    assert mp.update_iter([(p([1, 0]), -1)]) == [(p([1, 0]), -1), (p([1, 1]), 1)]
    mp.discard(p([1, 1]))
    assert mp.frontier() == Antichain()
