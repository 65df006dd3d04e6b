"""pg_table_size, pg_relation_size, pg_total_relation_size and pg_indexes_size in catalog
queries: a table's and a materialized view's are the bytes of its shard's blobs (they grow with
its rows), a view's 0, an unknown OID's NULL, as PostgreSQL's are; pg_size_pretty gives
PostgreSQL 15's text for the same numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

import changeflow

SIZES = [0, 1, -1, 10239, 10240, 10241, 10751, 10752, -10240, 1536, 12345678, 20479 * 1024]
SIZES += [20480 * 1024 - 1, 20480 * 1024, 987654321012, -987654321012, 3 * 1024**5, 2**63 - 1]


@pytest.mark.postgres
def test_size_pretty_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    sql = "SELECT " + ", ".join(f"pg_size_pretty({n}::bigint)" for n in SIZES)
    with (
        changeflow.connect(tmp_path / "home", host_seconds=0) as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        assert ours.execute(sql).fetchall() == pg.execute(sql).fetchall()


def test_sizes_are_the_shards_bytes(tmp_path: Path) -> None:
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE sz (a int, b text)")
        conn.execute("CREATE VIEW szv AS SELECT a FROM sz")
        conn.execute("CREATE MATERIALIZED VIEW szm AS SELECT a, b FROM sz")
        conn.execute("CREATE INDEX szi ON sz (a)")

        def sizes() -> dict[str, tuple]:
            conn.execute("SELECT count(*) FROM szm").fetchall()  # the view has caught up
            rows = conn.execute(
                "SELECT c.relname, pg_table_size(c.oid), pg_relation_size(c.oid),"
                " pg_total_relation_size(c.oid), pg_indexes_size(c.oid),"
                " pg_size_pretty(pg_table_size(c.oid)) FROM pg_class c"
                " WHERE c.relname IN ('sz', 'szv', 'szm', 'szi')"
            ).fetchall()
            return {r[0]: r[1:] for r in rows}

        empty = sizes()
        assert empty["szv"] == (0, 0, 0, 0, "0 bytes")
        assert empty["szi"][:3] == (0, 0, 0)
        conn.execute("INSERT INTO sz SELECT g, repeat('x', 100) FROM generate_series(1, 3000) g")
        full = sizes()
        for name in ("sz", "szm"):
            size = full[name][0]
            assert size > empty[name][0] and size > 3000, (name, full)
            assert full[name][:3] == (size, size, size) and full[name][3] == 0
            assert full[name][4].endswith(("kB", "bytes"))
        assert full["szv"] == empty["szv"]
        got = conn.execute(
            "SELECT pg_table_size('sz') = pg_table_size('sz'::regclass), pg_table_size(1),"
            " pg_indexes_size(1)"
        ).fetchone()
        assert got == (True, None, None)
