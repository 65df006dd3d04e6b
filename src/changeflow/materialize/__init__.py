"""Materialization: a shard kept in step with an external store, exactly once."""
