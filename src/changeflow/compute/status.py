"""What running dataflows report about themselves, kept in consensus for ``changeflow dataflow``.

One consensus key holds every dataflow's latest status (changed by compare-and-set, so several
processes report side by side). A dataflow reports after a step at most once a second, and when
it closes; the status says where the output is, how far behind its inputs it is, how much state
its arrangements hold and how long its steps take.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

from changeflow.storage.consensus import Consensus, read_json, update_json

KEY = "dataflows"
RECENT = 20  # step durations kept


@dataclass
class DataflowStatus:
    """A dataflow's latest report."""

    name: str
    output: str
    inputs: list[str]
    as_of: int
    frontier: int | None  # the output is complete below this (None: the inputs closed)
    input_uppers: dict[str, int | None]
    steps: int = 0
    updates_in: int = 0
    updates_out: int = 0
    arranged: int = 0  # rows held in arrangements and waiting updates
    step_seconds: list[float] = field(default_factory=list)  # the most recent steps
    running: bool = True
    reported_ms: int = 0
    plan: str = ""
    tier: str = "process"  # where its arrangements live: the process or the cluster

    @property
    def lag(self) -> int | None:
        """How many times the output trails the inputs' meet (None when unknown or closed)."""
        uppers = [u for u in self.input_uppers.values() if u is not None]
        if self.frontier is None or not uppers:
            return None
        return max(0, min(uppers) - self.frontier)

    @property
    def median_step(self) -> float | None:
        return statistics.median(self.step_seconds) if self.step_seconds else None


def report(consensus: Consensus, status: DataflowStatus) -> None:
    """Record ``status`` (replacing the dataflow's last report)."""
    status.reported_ms = int(time.time() * 1000)
    status.step_seconds = status.step_seconds[-RECENT:]
    update_json(consensus, KEY, lambda known: {**(known or {}), status.name: asdict(status)})


def forget(consensus: Consensus, name: str) -> None:
    """Remove the report of dataflow ``name``."""
    update_json(consensus, KEY, lambda known: {k: v for k, v in (known or {}).items() if k != name})


def statuses(consensus: Consensus) -> list[DataflowStatus]:
    """Every dataflow's latest report, by name."""
    known = read_json(consensus, KEY) or {}
    return [DataflowStatus(**known[name]) for name in sorted(known)]
