"""changeflow's own catalog relations, shaped as Materialize's: mz_catalog's tables, views,
materialized views (with the tier that maintains each) and sinks, and mz_internal.mz_frontiers'
read and write frontiers of each shard, qualified or not, embedded and over the wire."""

from __future__ import annotations

from pathlib import Path

import changeflow

SETUP = [
    "CREATE TABLE mt (k int, v int)",
    "INSERT INTO mt VALUES (1, 10), (2, 20)",
    "CREATE VIEW mv AS SELECT k FROM mt",
    "CREATE MATERIALIZED VIEW mm AS SELECT k, sum(v) AS s FROM mt GROUP BY k",
]


def test_mz_catalog_lists_changeflow_objects(tmp_path: Path) -> None:
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    try:
        for sql in SETUP:
            conn.execute(sql)
        conn.execute(f"CREATE SINK ms FROM mm INTO 'sqlite:{tmp_path / 'out.sqlite'}' KEY (k)")
        tables = conn.execute("SELECT id, name, owner_id FROM mz_catalog.mz_tables").fetchall()
        assert [(name, owner) for _, name, owner in tables] == [("mt", "u1")]
        assert conn.execute("SELECT name, definition FROM mz_views").fetchall() == [
            ("mv", "SELECT k FROM mt;")
        ]
        matviews = "SELECT name, cluster_id, create_sql FROM mz_materialized_views"
        ((name, tier, create),) = conn.execute(matviews).fetchall()
        assert (name, tier) == ("mm", "process") and create.startswith("CREATE MATERIALIZED")
        ((sink, kind, envelope),) = conn.execute(
            "SELECT name, type, envelope_type FROM mz_catalog.mz_sinks"
        ).fetchall()
        assert (sink, kind, envelope) == ("ms", "sqlite", "upsert")
        assert conn.execute("SELECT count(*) FROM mz_sources").fetchall() == [(0,)]
        # a table's frontiers: written up to its upper, readable from its since
        table_id = tables[0][0]
        ((since, upper),) = conn.execute(
            "SELECT read_frontier, write_frontier FROM mz_internal.mz_frontiers"
            f" WHERE object_id = '{table_id}'"
        ).fetchall()
        assert 0 <= since < upper
        conn.execute("INSERT INTO mt VALUES (3, 30)")
        ((later,),) = conn.execute(
            f"SELECT write_frontier FROM mz_internal.mz_frontiers WHERE object_id = '{table_id}'"
        ).fetchall()
        assert later > upper
        joined = conn.execute(
            "SELECT t.name FROM mz_tables t JOIN mz_internal.mz_frontiers f ON f.object_id = t.id"
        ).fetchall()
        assert joined == [("mt",)]
    finally:
        conn.close()


def test_mz_catalog_over_the_wire(server, table_name: str) -> None:
    with server.connect() as ours:
        ours.execute(f"CREATE TABLE {table_name} (a int)")
        ours.execute(
            f"CREATE MATERIALIZED VIEW {table_name}_m AS SELECT count(*) FROM {table_name}"
        )
        rows = ours.execute(
            "SELECT name, cluster_id FROM mz_catalog.mz_materialized_views WHERE name = %s",
            [f"{table_name}_m"],
        ).fetchall()
        assert rows == [(f"{table_name}_m", "process")]
        names = [r[0] for r in ours.execute("SELECT name FROM mz_tables").fetchall()]
        assert table_name in names
        ours.execute(f"DROP TABLE {table_name} CASCADE")
