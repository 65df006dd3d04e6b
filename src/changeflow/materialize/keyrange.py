"""Key ranges: a materialization's task splits, each the keys whose hash falls in its range.

A key hashes to 32 bits (the high half of the 64-bit hash the columnar CDC reader gives each
value, combined over the key columns), the same in every process and run. A split of ``n``
ranges cuts ``[0, 2**32)`` into ``n`` equal, contiguous, inclusive ranges, so the splits
partition the keys: each key's rows are written by exactly one split, whose checkpoint and
fence cover its range alone (one checkpoint per task split, as the protocol has it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from changeflow.cdc.columnar import MIXES, SEEDS, column_hash
from changeflow.errors import InvalidInput

if TYPE_CHECKING:
    from changeflow.materialize.recovery import RecoveryLog

KEY_SPACE = 2**32
LAST = KEY_SPACE - 1  # the end of the last range (ranges are inclusive)


@dataclass(frozen=True)
class KeyRange:
    """The keys whose hash is in ``[begin, end]``."""

    begin: int = 0
    end: int = LAST

    @property
    def whole(self) -> bool:
        return self.begin == 0 and self.end == LAST

    def qualify(self, name: str) -> str:
        """The name of this range's split of materialization ``name`` (``name`` for the
        whole key space)."""
        return name if self.whole else f"{name}@{self.begin:08x}-{self.end:08x}"

    def select(self, rows: pa.Table, key: Sequence[str]) -> pa.Table:
        """The rows of ``rows`` whose key is in this range."""
        if self.whole or not rows.num_rows:
            return rows
        hashes = key_hashes(rows, key)
        return rows.filter(pa.array((hashes >= self.begin) & (hashes <= self.end)))


def key_ranges(count: int) -> list[KeyRange]:
    """``count`` equal ranges that cover the key space, in order."""
    if not 1 <= count <= 1024:
        raise InvalidInput(f"a materialization splits into 1 to 1024 key ranges, not {count}")
    cuts = [i * KEY_SPACE // count for i in range(count + 1)]
    return [KeyRange(cuts[i], cuts[i + 1] - 1) for i in range(count)]


def key_hashes(rows: pa.Table, key: Sequence[str]) -> np.ndarray:
    """Each row's key hash, in ``[0, 2**32)`` (uint64)."""
    h = None
    for name in key:
        c = column_hash(rows.column(name), SEEDS[0])
        h = c if h is None else h * MIXES[0] + c
        h ^= h >> np.uint64(29)
    return np.zeros(rows.num_rows, np.uint64) if h is None else h >> np.uint64(32)


def parse(name: str, qualified: str) -> KeyRange | None:
    """The key range of ``qualified``, a split of materialization ``name`` (see
    :meth:`KeyRange.qualify`); None if it is not one of ``name``'s."""
    if qualified == name:
        return KeyRange()
    head, at, tail = qualified.rpartition("@")
    begin, dash, end = tail.partition("-")
    if head != name or not at or not dash:
        return None
    try:
        return KeyRange(int(begin, 16), int(end, 16))
    except ValueError:
        return None


def check_layout(log: RecoveryLog, name: str, ranges: Sequence[KeyRange]) -> None:
    """Refuse ``ranges`` when a range of ``name`` with a checkpoint in ``log`` overlaps one
    of them without being it: its keys would be written from two checkpoints."""
    held = [r for q in log.checkpointed(name) if (r := parse(name, q)) is not None]
    check_overlap(name, held, ranges)


def check_overlap(name: str, held: Sequence[KeyRange], ranges: Sequence[KeyRange]) -> None:
    """Refuse ``ranges`` if one overlaps a range of ``held`` (those with a checkpoint)
    without being it."""
    for old in held:
        for new in ranges:
            if old != new and old.begin <= new.end and new.begin <= old.end:
                raise InvalidInput(
                    f"materialization {name!r} has a checkpoint for keys {old.begin:08x}.."
                    f"{old.end:08x}, which overlaps keys {new.begin:08x}..{new.end:08x} of "
                    f"this run: run it with the key ranges (the number of splits) it had, "
                    f"or materialize into a new target under another name"
                )
