"""GROUP BY GROUPING SETS, ROLLUP and CUBE: the union of one reduce per grouping set, each
with NULL in the key columns its set leaves out, as PostgreSQL computes them; ``GROUPING(…)``
is a column of constants per set (a bit per argument, 1 where the set leaves it out)."""

from __future__ import annotations

from itertools import combinations, product

from sqlglot import exp

from changeflow.adapter.sql.dialect import PostgresCalls
from changeflow.adapter.sql.rows import one_row
from changeflow.compute import expr as X
from changeflow.compute import plan as P
from changeflow.compute.types import INT4

Sets = list[list[int]]


def expand(groups: list[exp.Expression]) -> tuple[list[exp.Expression], Sets] | None:
    """The distinct key expressions of a GROUP BY and its grouping sets (indices into them);
    None for a plain GROUP BY."""
    kinds = (exp.Rollup, exp.Cube, exp.GroupingSets)
    if not any(isinstance(g, kinds) for g in groups):
        return None
    keys: list[exp.Expression] = []

    def index(node: exp.Expression) -> int:
        text = node.sql(dialect=PostgresCalls)
        for i, k in enumerate(keys):
            if k.sql(dialect=PostgresCalls) == text:
                return i
        keys.append(node)
        return len(keys) - 1

    def element(node: exp.Expression) -> list[int]:
        """A parenthesized list of expressions, or one expression, as key indices."""
        if isinstance(node, exp.Tuple):
            return [index(e) for e in node.expressions]
        if isinstance(node, exp.Paren):
            return element(node.this)
        return [index(node)]

    def sets_of(node: exp.Expression) -> Sets:
        if isinstance(node, exp.Rollup):
            parts = [element(e) for e in node.expressions]
            return [sum(parts[:n], []) for n in range(len(parts), -1, -1)]
        if isinstance(node, exp.Cube):
            parts = [element(e) for e in node.expressions]
            chosen = [
                c for n in range(len(parts), -1, -1) for c in combinations(range(len(parts)), n)
            ]
            return [sum((parts[i] for i in c), []) for c in chosen]
        if isinstance(node, exp.GroupingSets):
            return [s for e in node.expressions for s in sets_of(e)]
        return [element(node)]

    per_item = [sets_of(g) for g in groups]
    return keys, [sorted(set(sum(combo, []))) for combo in product(*per_item)]


def grouping_value(arguments: list[int], kept: list[int]) -> int:
    """``GROUPING(args)`` for a grouping set: a bit per argument, the first the highest, 1
    where the set leaves the argument's key out."""
    value = 0
    for i in arguments:
        value = value * 2 + (0 if i in kept else 1)
    return value


def reduce_sets(
    plan: P.Plan,
    indices: list[int],
    inner: int,
    sets: Sets,
    aggregates: tuple[P.Aggregate, ...],
    names: tuple[str, ...],
    grouping: list[list[int]],
) -> P.Plan:
    """The union over ``sets`` (indices into the keys after the ``inner`` correlation keys,
    which every set keeps) of the reduce by that set's keys: the keys' columns (NULL where
    the set leaves a key out), the aggregates, then a column per ``grouping`` call."""
    parts: list[P.Plan] = []
    width = len(indices)
    for s in sets:
        kept = list(range(inner)) + [inner + i for i in s]
        reduced: P.Plan = P.Reduce(plan, tuple(indices[i] for i in kept), aggregates, names)
        if not kept:
            reduced = one_row(reduced)  # the empty set has its one row over no input
        base = len(reduced.schema)
        nulls = [
            (f"null{i}", X.Lit(None, plan.schema[indices[i]].type))
            for i in range(width)
            if i not in kept
        ]
        flags = [
            (f"grouping{j}", X.Lit(grouping_value([inner + a for a in args], kept), INT4))
            for j, args in enumerate(grouping)
        ]
        mapped = P.Map(reduced, tuple(nulls + flags)) if nulls or flags else reduced
        missing = [i for i in range(width) if i not in kept]
        columns = [kept.index(i) if i in kept else base + missing.index(i) for i in range(width)]
        columns += list(range(len(kept), len(kept) + len(aggregates)))
        columns += [base + len(nulls) + j for j in range(len(flags))]
        parts.append(P.Project(mapped, tuple(columns)))
    return parts[0] if len(parts) == 1 else P.Union(tuple(parts))
