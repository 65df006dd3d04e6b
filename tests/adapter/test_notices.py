"""An embedded connection keeps the NOTICEs a statement gives, as psycopg2 keeps them, in
``connection.notices`` (the server sends the same ones as NoticeResponse messages)."""

from __future__ import annotations

from pathlib import Path

import changeflow


def test_notices_are_kept_on_the_connection(tmp_path: Path) -> None:
    with changeflow.connect(tmp_path / "home", host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE t (a int)")
        assert conn.notices == []
        conn.execute("DROP TABLE IF EXISTS nope, t; CREATE TABLE IF NOT EXISTS t (a int)")
        conn.execute("CREATE TABLE IF NOT EXISTS t (a int)")
        assert conn.notices == [
            'NOTICE:  table "nope" does not exist, skipping\n',
            'NOTICE:  relation "t" already exists, skipping\n',
        ]
