"""Differential operators: a plan built into operators that turn their inputs' updates for a
step into the output's updates for the same step.

Times are ints, so a step ``[lower, upper)`` is processed time by time in order. Stateless
operators (Map, Filter, Project, Union, Negate, TemporalFilter) map each update on its own. Stateful
operators (Join, Reduce, Distinct, Threshold, TopK) keep an **arrangement**: their input
accumulated per key up to the last time processed, which is their input compacted to the
dataflow's frontier, so state is proportional to the live data, not to its history. An update at a
time at or beyond the step's upper (a temporal filter's retraction) waits in the operator that
needs time order until a step reaches it; stateless operators pass it on at once.

Each operator's output at every time equals :func:`changeflow.compute.evaluate.evaluate` of its
plan at that time; the tests check it on random plans and histories.
"""

from changeflow.compute.evaluate import Row
from changeflow.compute.operators.base import Inputs, Operator, Source, Update
from changeflow.compute.operators.build import build, hydrate
from changeflow.compute.operators.reduce import Group, Reduce
from changeflow.compute.operators.topk import TopK

__all__ = [
    "Group",
    "Inputs",
    "Operator",
    "Reduce",
    "Row",
    "Source",
    "TopK",
    "Update",
    "build",
    "hydrate",
]
