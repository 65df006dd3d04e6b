"""Durable shards: pTVCs on Parquet blobs under a SQLite or PostgreSQL consensus."""

from changeflow.storage.read import ReadCapability, Subscription
from changeflow.storage.shard import Storage
from changeflow.storage.write import WriteCapability

__all__ = ["ReadCapability", "Storage", "Subscription", "WriteCapability"]
