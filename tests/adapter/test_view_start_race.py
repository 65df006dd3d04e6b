"""A view created over a table the host has not yet compacted: the host's compaction of the
table (its since moved to the history's start) landing while the view's dataflow starts must
not leave the dataflow starting later than its output begins (its first step then failed:
"cannot downgrade capability … back to [0]"). The interleaving is forced with a hook between
the output's creation and the dataflow's start, where the host thread once ran while the
inputs were not held yet."""

from __future__ import annotations

from pathlib import Path

import changeflow
from changeflow.adapter.environment import EPOCH, HISTORY_MS
from changeflow.failpoints import hooked
from changeflow.storage.txns import WRITER


def test_compaction_while_a_view_starts(tmp_path: Path) -> None:
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        env = conn.env
        conn.execute("CREATE TABLE t (a int, b int)")
        conn.execute("INSERT INTO t VALUES (1, 2), (3, 4)")
        table = env.catalog.load().get("t").id
        assert env.storage.state(table).since.elements == (0,)  # not compacted yet

        def host_compacts() -> None:  # what the host's tick does (Environment.tick)
            now = env.oracle(EPOCH).read_ts()
            env.log.ready({table}, now)
            env.allow_compaction(env.catalog.load(), now - HISTORY_MS)

        with hooked("dataflow.before_start", host_compacts):
            conn.execute("CREATE MATERIALIZED VIEW v AS SELECT a, sum(b) FROM t GROUP BY a")
        compacted = env.storage.registered_readers(table)[WRITER].frontier
        assert compacted.elements[0] > 0  # the host's compaction ran (the view holds since)
        assert sorted(conn.execute("SELECT * FROM v").fetchall()) == [(1, 2), (3, 4)]
        conn.execute("INSERT INTO t VALUES (1, 5)")
        assert sorted(conn.execute("SELECT * FROM v").fetchall()) == [(1, 7), (3, 4)]
