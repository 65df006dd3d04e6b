"""What a set of CDC v2 messages holds, and what keeps its frontier from advancing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from changeflow.cdc.messages import Message, Updates
from changeflow.cdc.reader import CdcReader
from changeflow.time import Antichain, Time, sort_key, time_to_json


@dataclass
class CdcStats:
    """Counts over a message stream and the reader's state at its end."""

    messages: int = 0
    update_messages: int = 0
    progress_messages: int = 0
    update_statements: int = 0
    distinct_updates: int = 0
    distinct_times: int = 0
    frontier: Antichain = field(default_factory=Antichain)
    progress_frontier: Antichain = field(default_factory=Antichain)
    waiting_progress: list[Antichain] = field(default_factory=list)
    short_times: dict[Time, tuple[int, int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """A human-readable report, one fact a line."""
        out = [
            f"messages: {self.messages} ({self.update_messages} updates, "
            f"{self.progress_messages} progress)",
            f"update statements: {self.update_statements}",
            f"distinct updates: {self.distinct_updates}",
            f"distinct times: {self.distinct_times}",
            f"completed frontier: {self.frontier.to_json()}",
        ]
        if not self.frontier:
            out.append("missing: nothing; the history is complete")
            return out
        if self.progress_frontier == self.frontier or not self.short_times:
            lowers = ", ".join(str(a.to_json()) for a in self.waiting_progress) or "none"
            out.append(
                f"missing: progress for times from {self.progress_frontier.to_json()} "
                f"(statements waiting for that gap to close start at: {lowers})"
            )
        for t, (announced, received) in sorted(
            self.short_times.items(), key=lambda i: sort_key(i[0])
        ):
            out.append(
                f"missing: updates at time {time_to_json(t)}: progress counts {announced}, "
                f"{received} received"
            )
        return out


def cdc_stats(messages: Iterable[Message]) -> CdcStats:
    """Read every message and report what it recovers and what is missing."""
    reader, stats, times = CdcReader(audit=True), CdcStats(), set()
    for message in messages:
        stats.messages += 1
        if isinstance(message, Updates):
            stats.update_messages += 1
            stats.update_statements += len(message.updates)
        else:
            stats.progress_messages += 1
        for batch, _ in reader.feed(message):
            stats.distinct_updates += len(batch)
            times.update(t for _, t, _ in batch)
    pending = reader.pending_times()
    stats.distinct_updates += reader.pending_updates()
    stats.distinct_times = len(times | pending)
    stats.frontier = reader.frontier
    stats.progress_frontier = reader.progress
    stats.waiting_progress = sorted(
        (p.lower for p in reader.queued_progress()), key=lambda a: [sort_key(t) for t in a]
    )
    stats.short_times = reader.missing()
    return stats
