"""One configuration value: from flags, then the environment, then embedded defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Config:
    """Where changeflow keeps its data and which Spark it runs on."""

    home: Path
    consensus: str
    blob_root: str
    spark_master: str
    cluster_rows: int = 1_000_000  # a view over this many stored input rows runs on the cluster
    spark_ingest_bytes: int = 64 << 20  # a source folder this large is decoded on Spark
    cluster_step_rows: int = 200_000  # a cluster-tier step this small runs in the driver

    @classmethod
    def load(cls, **flags: str | None) -> Config:
        """Flags (non-None) win over ``CHANGEFLOW_*`` environment variables, then defaults."""
        env = os.environ

        def pick(name: str, default: str) -> str:
            value = flags.get(name)
            return value if value is not None else env.get(f"CHANGEFLOW_{name.upper()}", default)

        home = Path(pick("home", "./changeflow-data")).resolve()
        return cls(
            home=home,
            consensus=pick("consensus", f"sqlite:{home / 'consensus.sqlite'}"),
            blob_root=pick("blob_root", str(home / "blob")),
            spark_master=pick("spark_master", "local[*]"),
            cluster_rows=_count("cluster_rows", pick("cluster_rows", "1000000")),
            spark_ingest_bytes=_count("spark_ingest_bytes", pick("spark_ingest_bytes", "67108864")),
            cluster_step_rows=_count("cluster_step_rows", pick("cluster_step_rows", "200000")),
        )


def _count(name: str, text: str) -> int:
    """A count setting (``1000000`` or ``1_000_000``)."""
    from changeflow.errors import ChangeflowError

    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise ChangeflowError(f"CHANGEFLOW_{name.upper()} must be a whole number, not {text!r}")
    return value
