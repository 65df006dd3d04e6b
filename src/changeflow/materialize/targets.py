"""Which target each materialization writes, kept in the recovery log beside its checkpoint.

A materialization's name is bound to its shard and target: pointed elsewhere, a recovery-log
checkpoint would skip the new target up to where the old one got, so that is refused while a
checkpoint exists. A table (a shard in a target) has one owner: a second materialization
writing it would fight the first over its rows.
"""

from __future__ import annotations

from pathlib import Path

from changeflow.errors import InvalidInput
from changeflow.materialize.recovery import RecoveryLog


def canonical(target: str) -> str:
    """A target URL with its path made absolute (``sqlite:a`` and ``sqlite:/…/a`` are one)."""
    scheme, _, rest = target.partition(":")
    if scheme in ("postgresql", "postgres") or not rest:
        return target
    return f"{scheme}:{Path(rest).expanduser().absolute()}"


def claim(log: RecoveryLog, name: str, shard: str, target: str, authoritative: bool) -> None:
    """Record that ``name`` writes ``shard`` into ``target``; refuse a table another
    materialization owns, and (while ``name`` has a checkpoint) another shard or, unless the
    target keeps its own checkpoint (``authoritative``), another target."""
    target = canonical(target)
    owner = log.owner(target, shard, other_than=name)
    if owner is not None:
        raise InvalidInput(
            f"table {shard!r} in {target} is owned by materialization {owner!r}; materialize "
            f"into another target, or drop {owner!r} first (changeflow materialize --drop "
            f"{owner})"
        )
    before = log.target(name)
    if before is not None and log.load(name)[0] is not None:
        old_target, old_shard = before
        if old_shard != shard:
            raise InvalidInput(
                f"materialization {name!r} materializes shard {old_shard!r}, and the recovery "
                f"log holds its checkpoint; pass another --name to materialize {shard!r}"
            )
        if old_target != target and not authoritative:
            raise InvalidInput(
                f"materialization {name!r} writes to {old_target}, and the recovery log holds "
                f"its checkpoint there; pass another --name to materialize into {target}"
            )
    log.record_target(name, target, shard)
