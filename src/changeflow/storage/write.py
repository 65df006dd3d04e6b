"""Write handles: a :class:`WriteCapability` owns its capability and appends under it
(compare-and-append of Arrow, pandas, triples or a Spark DataFrame)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from changeflow.errors import CapabilityError, FrontierViolation, UpperMismatch
from changeflow.failpoints import failpoint
from changeflow.storage.compact import tidy
from changeflow.storage.frames import check_times, to_frame
from changeflow.storage.machine import Machine, new_id
from changeflow.storage.spark_write import write_spark_frame
from changeflow.storage.state import Batch, ShardState
from changeflow.time import Antichain, to_bound, to_frontier

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class WriteCapability:
    """The right to append to shard ``shard`` from ``frontier`` on (compare-and-append).

    Only this handle moves its frontier: an append moves it to the new upper.
    """

    def __init__(
        self, machine: Machine, shard: str, name: str, id: str, frontier: Antichain
    ) -> None:
        self._machine = machine
        self.shard, self.name, self.id = shard, name, id
        self._frontier = frontier

    @property
    def frontier(self) -> Antichain:
        return self._frontier

    def __repr__(self) -> str:
        return f"WriteCapability({self.name!r}, id={self.id!r}, frontier={self._frontier})"

    def downgrade(self, frontier: Antichain | int | None) -> None:
        """Move forward to ``frontier``; never backwards."""
        frontier = to_frontier(frontier, "frontier")
        to_bound(frontier, "frontier")
        self._machine.downgrade_writer(self, frontier)
        self._frontier = frontier

    def drop(self) -> None:
        """Release the capability: it cannot be used again."""
        self._machine.drop_writer(self)
        self._frontier = Antichain()

    def clone(self) -> WriteCapability:
        """An independent write capability at the same frontier."""
        new = new_id()
        frontier = self._machine.clone_writer(self, new)
        return WriteCapability(self._machine, self.shard, self.name, new, frontier)

    def append(
        self, updates: Any, new_upper: Antichain | int, token: str | None = None
    ) -> int | None:
        """Append ``updates`` in ``[frontier, new_upper)`` iff ``frontier`` is the upper, and
        return how many were appended (None for a retry whose append had applied).

        ``token`` makes a retry after an indeterminate error apply once: give the same token
        to the retry. On success the capability moves to ``new_upper``.
        """
        machine = self._machine
        new_upper = to_frontier(new_upper, "the new upper")
        token = token or uuid.uuid4().hex
        state = machine.load(self.shard)
        machine.writer(state, self)
        lower, upper = self._interval(new_upper)
        if token in state.tokens:
            self._frontier = new_upper
            return None
        if state.upper != self._frontier:
            raise UpperMismatch(self.name, self._frontier, state.upper)
        batch = self._write_batch(state, updates, lower, upper, new_upper)
        failpoint("append.after_blob")
        try:
            appended = machine.append(self, self._frontier, batch, new_upper, token, state)
        except (UpperMismatch, CapabilityError):
            machine.delete_keys(batch.keys)  # surely not written; after other errors, maybe
            raise
        failpoint("append.after_cas")
        self._frontier = new_upper
        if appended is not None:  # else keep the blobs: any left unreferenced are garbage
            tidy(machine, appended)
        return batch.rows

    def _interval(self, new_upper: Antichain) -> tuple[int, int | None]:
        """The append's ``[lower, upper)`` as ints; an error unless it moves forward."""
        lower = to_bound(self._frontier, "the write capability's frontier")
        upper = to_bound(new_upper, "the new upper")
        if lower is None:
            raise CapabilityError(
                f"{self.name}: write capability {self.id} is at [] and cannot append"
            )
        if upper is not None and upper <= lower:
            raise FrontierViolation(
                f"{self.name}: the new upper {new_upper} must be beyond the capability's "
                f"frontier {self._frontier}"
            )
        return lower, upper

    def _write_batch(
        self, state: ShardState, updates: Any, lower: int, upper: int | None, new_upper: Antichain
    ) -> Batch:
        batch_lower = Antichain([lower])
        if type(updates).__module__.startswith("pyspark"):
            keys, rows = self._write_spark(state, updates, lower, upper)
            return Batch(batch_lower, new_upper, state.since, keys, rows)
        table = to_frame(updates, state.schema, self.name)
        check_times(table, lower, upper, self.name)
        if not table.num_rows:
            return Batch(batch_lower, new_upper, state.since, (), 0)
        key = f"{state.id}/{uuid.uuid4().hex}.parquet"
        self._machine.blob.set_table(key, table)
        return Batch(batch_lower, new_upper, state.since, (key,), table.num_rows)

    def _write_spark(
        self, state: ShardState, frame: DataFrame, lower: int, upper: int | None
    ) -> tuple[tuple[str, ...], int]:
        return write_spark_frame(
            self._machine, frame, state.schema, state.id, lower, upper, self.name
        )
