"""Where a cluster-tier dataflow's state is written down, so a restart resumes instead of
hydrating again, and how the batches nobody can read any more are deleted.

After every step the dataflow records, in one consensus key, the frontier its arrangements
stand at and the batches of every spine (Parquet under ``dataflows/<name>/<incarnation>/`` in
the blob root). A restart whose inputs are still held before that frontier, and whose output has
been written up to it, loads the spines and subscribes to the inputs from there; any other
restart hydrates.

Several processes may run the same dataflow (each an **incarnation**, with its own folder), and
a restart may read batches an earlier incarnation wrote. Each incarnation holds a **lease** in
consensus, renewed as it steps and polls, naming the batches outside its folder it still reads
(none known yet while it loads the checkpoint). A **sweep** deletes, in the folders of
incarnations whose lease is gone or expired (crashed, stopped), every batch that neither the
latest checkpoint nor a live lease names: batches written after the last checkpoint of a
crashed process, and those merged away by a later incarnation. An incarnation that finds its own
lease expired stops: its folder may have been swept (as a shard's reader whose lease expired).
"""

from __future__ import annotations

from typing import Any

from changeflow.errors import CapabilityError
from changeflow.storage import Storage
from changeflow.storage.consensus import read_json, update_json

PREFIX = "dataflows/{}"  # a dataflow's folder in the blob root
KEY = "cluster-dataflow/{}"  # its latest checkpoint in consensus
LEASES = "cluster-dataflow-leases/{}"  # its incarnations' leases


def load(storage: Storage, name: str) -> dict[str, Any] | None:
    """The latest checkpoint of dataflow ``name``, or None."""
    return read_json(storage.consensus, KEY.format(name)) or None


def save(storage: Storage, name: str, state: dict[str, Any]) -> None:
    """Record ``state`` (``frontier``, and per operator its spines' batches)."""
    update_json(storage.consensus, KEY.format(name), lambda _: state)


def forget_state(storage: Storage, name: str) -> None:
    """Delete a dropped dataflow's arrangements, checkpoint and leases."""
    if load(storage, name) is not None:
        save(storage, name, {})
    if read_json(storage.consensus, LEASES.format(name)):
        update_json(storage.consensus, LEASES.format(name), lambda _: {})
    storage.machine.blob.delete_dir(PREFIX.format(name))


def batch_keys(state: dict[str, Any] | None) -> set[str]:
    """The batches a checkpoint names."""
    nodes = (state or {}).get("nodes", [])
    return {batch[0] for spines in nodes for spine in spines for batch in spine}


def lease(storage: Storage, name: str, incarnation: str, reads: list[str] | None) -> None:
    """Take or renew ``incarnation``'s lease, naming the batches of other incarnations it
    reads (None: not known yet). Refused if its lease expired: its state may be swept."""
    machine = storage.machine
    now = machine.now_ms()

    def renew(leases: dict | None) -> dict:
        leases = dict(leases or {})
        held = leases.get(incarnation)
        if reads is not None and (held is None or held["expires"] <= now):
            raise CapabilityError(
                f"dataflow {name!r}: the lease of incarnation {incarnation} expired; its "
                "arrangements may have been deleted: restart it"
            )
        leases[incarnation] = {"expires": now + machine.lease_ms, "reads": reads}
        return leases

    update_json(storage.consensus, LEASES.format(name), renew)


def release(storage: Storage, name: str, incarnation: str) -> None:
    """End ``incarnation``'s lease (it stopped: its folder may be swept)."""
    update_json(
        storage.consensus,
        LEASES.format(name),
        lambda leases: {k: v for k, v in (leases or {}).items() if k != incarnation},
    )


def sweep(storage: Storage, name: str) -> int:
    """Delete the batches no incarnation can read any more (see the module docstring);
    return how many. Nothing while an incarnation is loading the checkpoint."""
    latest = load(storage, name)  # read before the leases: a loader registers before it reads
    now = storage.machine.now_ms()
    leases = read_json(storage.consensus, LEASES.format(name)) or {}
    live = {k: v for k, v in leases.items() if v["expires"] > now}
    if any(v["reads"] is None for v in live.values()):
        return 0
    kept = batch_keys(latest).union(*(v["reads"] for v in live.values()))
    blob, folder = storage.machine.blob, PREFIX.format(name)
    swept: set[str] = set()
    for meta in blob.list(folder):
        parts = meta.key[len(folder) + 1 :].split("/")
        if len(parts) < 5 or parts[0] in live:  # not a batch's file, or a live folder
            continue
        batch = f"{folder}/{'/'.join(parts[:4])}"
        if batch not in kept and batch not in swept:
            blob.delete_dir(batch)
            swept.add(batch)
    dead = set(leases) - set(live)
    if dead:
        update_json(
            storage.consensus,
            LEASES.format(name),
            lambda held: {k: v for k, v in (held or {}).items() if k not in dead},
        )
    return len(swept)
