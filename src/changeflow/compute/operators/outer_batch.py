"""An outer join's step on batches: the matched pairs by the inner join's delta
(:func:`~changeflow.compute.operators.join_batch.delta_join`), and the kept side's unmatched
rows, NULL-padded, by key: a changed row whose key's match stays absent is padded as it
comes (by position); only a key whose match appears or goes is read from the arrangements in
Python. Python runs once per changed key, and per row only for the keys that flip and for the
other side's changed rows (to tell whether its key still has any).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from changeflow.compute.evaluate import Row
from changeflow.compute.operators.batch import Batch, concat, groups_as_rows
from changeflow.compute.operators.join_batch import Arranged, Side, delta_join
from changeflow.compute.types import SqlType

Kinds = tuple[tuple[SqlType, ...], tuple[SqlType, ...]]


def batchable(equivalences: tuple[tuple[int, ...], ...], width: int, kinds: Kinds) -> bool:
    """Whether the join's condition is its keys alone (each class one column of each side, a
    type Arrow groups as Python compares it); a residual is checked by the caller."""
    for klass in equivalences:
        lo = [i for i in klass if i < width]
        hi = [i - width for i in klass if i >= width]
        if len(lo) != 1 or len(hi) != 1:
            return False
        if not (groups_as_rows(kinds[0][lo[0]].arrow) and groups_as_rows(kinds[1][hi[0]].arrow)):
            return False
    return bool(equivalences)


def outer_step(
    t: int,
    batches: list[Batch],
    kind: str,
    keys: tuple[tuple[int, ...], tuple[int, ...]],
    sides: tuple[Arranged, Arranged],
    kinds: Kinds,
) -> Batch:
    """The output at ``t`` of both inputs' changes at ``t`` (added to ``sides`` after)."""
    changed = (Side(batches[0], keys[0]), Side(batches[1], keys[1]))
    parts = []
    for s, keeps in enumerate((kind in ("left", "full"), kind in ("right", "full"))):
        if keeps:
            parts += _unmatched(t, s, changed, sides, keys[s], kinds)
    parts.append(delta_join(t, batches, keys, sides, kinds, ((), lambda u: [u]), changed))
    return concat(parts, kinds[0] + kinds[1])


def _unmatched(
    t: int,
    s: int,
    changed: tuple[Side, Side],
    sides: tuple[Arranged, Arranged],
    columns: tuple[int, ...],
    kinds: Kinds,
) -> list[Batch]:
    """The change in side ``s``'s NULL-padded rows (its rows whose key the other side lacks)."""
    mine, theirs = changed[s], changed[1 - s]
    if not (mine.at or theirs.at) and not len(mine.batch):
        return []
    other = sides[1 - s].arrangement() if (mine.at or theirs.at) else {}
    their_rows = _by_key(theirs) if theirs.at else {}
    plain = [np.flatnonzero(_null_key(mine.batch, columns))]  # a NULL key matches nothing
    flipped: list[tuple[Row, int]] = []
    for key in set(mine.at) | set(their_rows):
        before = key in other
        after = before if key not in their_rows else _has(other.get(key), their_rows[key])
        if before and after:
            continue
        if before != after:  # its match appears (retract the padded rows) or goes (pad them)
            sign = 1 if before else -1
            flipped += [(row, sign * c) for row, c in sides[s].arrangement().get(key, {}).items()]
        if not after and key in mine.at:
            plain.append(mine.at[key])
    out = []
    at = np.concatenate(plain)
    if len(at):
        taken = pa.array(at, pa.int64())
        columns_ = [c.take(taken) for c in mine.batch.columns]
        out.append(_padded(s, columns_, mine.batch.diffs.take(taken), t, kinds))
    if flipped:
        rows = Batch.of_updates([(r, t, c) for r, c in flipped], kinds[s])
        out.append(_padded(s, rows.columns, rows.diffs, t, kinds))
    return out


def _by_key(changes: Side) -> dict[Row, Counter]:
    """The changed rows of each key, summed."""
    rows = changes.batch.updates()
    out: dict[Row, Counter] = {}
    for key, at in changes.at.items():
        summed = out[key] = Counter()
        for i in at.tolist():
            summed[rows[i][0]] += rows[i][2]
    return out


def _has(before: Counter | None, changes: Counter) -> bool:
    """Whether a key holds any row once ``changes`` are added to its rows ``before``."""
    held = len(before) if before else 0
    for row, diff in changes.items():
        was = before.get(row, 0) if before else 0
        held += bool(was + diff) - bool(was)
    return held > 0


def _null_key(batch: Batch, columns: tuple[int, ...]) -> np.ndarray:
    mask = np.zeros(len(batch), bool)
    for c in columns:
        mask |= pc.is_null(batch.columns[c]).to_numpy(zero_copy_only=False)
    return mask


def _padded(s: int, columns: list[pa.Array], diffs: pa.Array, t: int, kinds: Kinds) -> Batch:
    """Side ``s``'s rows beside NULLs for the other side's columns."""
    n = len(diffs)
    nulls = [pa.nulls(n, k.arrow) for k in kinds[1 - s]]
    both = columns + nulls if s == 0 else nulls + columns
    return Batch(both, pa.repeat(pa.scalar(t, pa.int64()), n), diffs, kinds[0] + kinds[1])
