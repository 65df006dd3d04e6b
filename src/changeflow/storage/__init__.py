"""Durable shards: pTVCs on Parquet blobs under a SQLite or PostgreSQL consensus."""

from changeflow.storage.shard import (
    ReadCapability,
    Storage,
    Subscription,
    WriteCapability,
)

__all__ = ["ReadCapability", "Storage", "Subscription", "WriteCapability"]
