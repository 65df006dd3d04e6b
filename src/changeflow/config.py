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
        )
