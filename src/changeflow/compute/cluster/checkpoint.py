"""Where a cluster-tier dataflow's state is written down, so a restart resumes instead of
hydrating again.

After every step the dataflow records, in one consensus key, the frontier its arrangements
stand at and the batches of every spine (Parquet under ``dataflows/<name>/`` in the blob root).
A restart whose inputs are still held before that frontier, and whose output has been written
up to it, loads the spines and subscribes to the inputs from there; any other restart hydrates.
"""

from __future__ import annotations

from typing import Any

from changeflow.storage import Storage
from changeflow.storage.consensus import read_json, update_json

PREFIX = "dataflows/{}"  # a dataflow's folder in the blob root
KEY = "cluster-dataflow/{}"  # its latest checkpoint in consensus


def load(storage: Storage, name: str) -> dict[str, Any] | None:
    """The latest checkpoint of dataflow ``name``, or None."""
    return read_json(storage.consensus, KEY.format(name)) or None


def save(storage: Storage, name: str, state: dict[str, Any]) -> None:
    """Record ``state`` (``frontier``, and per operator its spines' batches)."""
    update_json(storage.consensus, KEY.format(name), lambda _: state)


def forget_state(storage: Storage, name: str) -> None:
    """Delete a dropped dataflow's arrangements and checkpoint."""
    if load(storage, name) is not None:
        save(storage, name, {})
    storage.machine.blob.delete_dir(PREFIX.format(name))
