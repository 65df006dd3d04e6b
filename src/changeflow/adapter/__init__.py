"""The adapter: SQL, the catalog, the timestamp oracle, timelines, sessions and transactions."""
