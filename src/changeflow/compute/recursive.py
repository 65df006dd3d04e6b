"""WITH RECURSIVE: the :class:`Recursive` plan node and its meaning, a fixed point.

``Recursive(inputs_, step, name, distinct)`` is the rows of a recursive query: the rows of
``inputs_[0]`` (the non-recursive term), then the rows ``step`` (the recursive term, reading the
rows the last iteration added as the collection ``name``) gives, iteration after iteration,
until an iteration adds nothing. UNION ALL (``distinct`` false) keeps every row; UNION keeps
each row once, as PostgreSQL. ``inputs_[1:]`` are the collections the recursive term reads
besides ``name``, so that a dataflow feeds them to the node. An iteration past
:data:`MAX_STEPS`, or more than :data:`MAX_ROWS` rows, is an error (54001).

The output depends on all the inputs' rows at once, so the operator keeps its inputs and
recomputes the fixed point at each time they change, emitting the difference: exact at every
time, as Materialize's WITH MUTUALLY RECURSIVE is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from changeflow.compute import plan as P
from changeflow.compute.types import Schema
from changeflow.errors import EvalError, PlanError

MAX_STEPS = 10_000
MAX_ROWS = 1_000_000

Rows = dict[tuple[Any, ...], int]


@dataclass(frozen=True)
class Recursive(P.Plan):
    """A recursive query's rows (see the module docstring)."""

    inputs_: tuple[P.Plan, ...]
    step: P.Plan
    name: str
    distinct: bool
    schema: Schema

    def __post_init__(self) -> None:
        if len(self.inputs_[0].schema) != len(self.schema) or len(self.step.schema) != len(
            self.schema
        ):
            raise PlanError(
                "each UNION query must have the same number of columns", sqlstate="42601"
            )

    def inputs(self) -> tuple[P.Plan, ...]:
        return self.inputs_

    def describe(self) -> str:
        kind = "UNION" if self.distinct else "UNION ALL"
        return f"Recursive {self.name} ({kind})\n" + self.step.explain(1).replace("\n", "\n  ")


def has_recursive(plan: P.Plan) -> bool:
    return isinstance(plan, Recursive) or any(has_recursive(p) for p in plan.inputs())


def reads(step: P.Plan, name: str) -> tuple[P.Get, ...]:
    """The collections ``step`` reads besides ``name``, once each."""
    found: dict[str, P.Get] = {}
    todo = [step]
    while todo:
        node = todo.pop()
        if isinstance(node, P.Get) and node.name != name:
            found.setdefault(node.name, node)
        todo.extend(node.inputs())
    return tuple(found[n] for n in sorted(found))


def added(rows: Rows, distinct: bool, seen: Rows) -> Rows:
    """The rows an iteration adds: all of them (UNION ALL), or the new distinct ones (UNION)."""
    if not distinct:
        return {r: c for r, c in rows.items() if c > 0}
    return {r: 1 for r, c in rows.items() if c > 0 and r not in seen}


def marker(name: str) -> str:
    """The collection name under which the recursive term reads the last iteration's rows (no
    table can have it)."""
    return f"{name}#recursive"


def endless(name: str) -> EvalError:
    """The error of a recursion without end (``name``: the query's, or its marker)."""
    return EvalError(
        f'recursive query "{name.partition("#")[0]}" did not reach a fixed point within '
        f"{MAX_STEPS} steps and {MAX_ROWS} rows",
        sqlstate="54001",
    )


def fixed_point(
    plan: Recursive, base: Rows, inputs: Mapping[str, Rows], run: Callable[[P.Plan, Any], Rows]
) -> Rows:
    """The rows of ``plan``, its non-recursive term having given ``base``; ``run(step, env)``
    evaluates the recursive term over the collections ``env``."""
    found = added(base, plan.distinct, {})
    total = dict(found)
    for _ in range(MAX_STEPS):
        if not found:
            return total
        found = added(run(plan.step, {**inputs, plan.name: found}), plan.distinct, total)
        for row, count in found.items():
            total[row] = total.get(row, 0) + count
        if sum(total.values()) > MAX_ROWS:
            break
    raise endless(plan.name)


def evaluate_recursive(plan: Recursive, inputs: Mapping[str, Rows], now: int) -> Rows:
    """The reference meaning: the fixed point over the inputs' versions at ``now``."""
    from changeflow.compute.evaluate import evaluate

    base = evaluate(plan.inputs_[0], inputs, now)
    return fixed_point(plan, base, inputs, lambda step, env: evaluate(step, env, now))
