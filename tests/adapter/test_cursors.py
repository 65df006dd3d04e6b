"""Query cursors (DECLARE, FETCH and MOVE in every direction, CLOSE) in an embedded
connection, side by side with PostgreSQL 15: the rows each FETCH returns, the tags of FETCH
and MOVE, NO SCROLL's refusal to go back, the cursors of a transaction ending with it and
WITH HOLD ones outliving it; and the cursor's moves against a row-by-row model of
PostgreSQL's rule on random positions and motions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

from changeflow.adapter.cursors import Motion, QueryCursor  # noqa: E402

SETUP = [
    "CREATE TABLE cu (id int, v text)",
    "INSERT INTO cu SELECT g, 'v' || g FROM generate_series(1, 6) g",
]
SCRIPT = [
    "BEGIN",
    "DECLARE c1 CURSOR FOR SELECT id, v FROM cu ORDER BY id",
    "FETCH 2 FROM c1",
    "FETCH BACKWARD 1 IN c1",
    "FETCH c1",
    "FETCH ALL c1",
    "FETCH BACKWARD 1 c1",
    "FETCH PRIOR c1",
    "FETCH FIRST c1",
    "FETCH LAST c1",
    "FETCH ABSOLUTE -2 c1",
    "FETCH RELATIVE -2 c1",
    "FETCH RELATIVE 0 c1",
    "FETCH ABSOLUTE 10 c1",
    "FETCH BACKWARD ALL c1",
    "MOVE 3 c1",
    "FETCH NEXT FROM c1",
    "MOVE FORWARD ALL c1",
    "FETCH -1 c1",
    "FETCH FORWARD 0 c1",
    "MOVE BACKWARD 100 c1",
    "FETCH c1",
    "MOVE ABSOLUTE 0 c1",
    "FETCH FORWARD 3 c1",
    "DECLARE c1 CURSOR FOR SELECT 1",
    "DECLARE c2 NO SCROLL CURSOR FOR SELECT id FROM cu ORDER BY id",
    "FETCH 2 c2",
    "FETCH PRIOR c2",
    "ROLLBACK",
    "FETCH c1",
    "BEGIN",
    "DECLARE c3 NO SCROLL CURSOR FOR SELECT id FROM cu WHERE id > 2 ORDER BY id DESC",
    "FETCH ABSOLUTE 3 c3",
    "FETCH FIRST c3",
    "ROLLBACK",
    "DECLARE c4 CURSOR FOR SELECT 1",
    "DECLARE c5 CURSOR WITH HOLD FOR SELECT id FROM cu WHERE id < 3 ORDER BY id",
    "FETCH ALL c5",
    "FETCH BACKWARD 1 c5",
    "FETCH c9",
    "MOVE c9",
    "CLOSE c9",
    "CLOSE c5",
    "FETCH c5",
    "CLOSE ALL",
]


@pytest.mark.postgres
def test_cursors_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "cu", *SETUP) as (ours, pg):
        for sql in SCRIPT:
            assert outcome(ours, sql) == outcome(pg, sql), sql
        for conn in (ours, pg):
            conn.execute("BEGIN")
            conn.execute("DECLARE t CURSOR FOR SELECT id FROM cu ORDER BY id")
        for sql in ("MOVE 4 t", "MOVE FORWARD ALL t", "MOVE BACKWARD 2 t", "FETCH ALL t"):
            tags = [conn.execute(sql).statusmessage for conn in (ours, pg)]
            assert tags[0] == tags[1], sql
        for conn in (ours, pg):
            conn.execute("ROLLBACK")


def _stepped(rows: list, position: int, where: Motion) -> tuple[int, list]:
    """PostgreSQL's rule, one row at a time: a FETCH passes rows in its direction and stops
    on the last it returned, or before the first (0) / after the last (N + 1) past an end."""
    n = len(rows)
    if where.kind in ("absolute", "relative") or where.count == 0:
        count = where.count or 0
        if where.kind == "relative" or where.kind in ("forward", "backward"):
            target = position + count
        else:
            target = count if count >= 0 else n + 1 + count
        position = min(max(target, 0), n + 1)
        return position, [rows[position - 1]] if 1 <= position <= n else []
    out, left = [], n + 2 if where.count is None else where.count
    step = 1 if where.kind == "forward" else -1
    while left:
        if not 1 <= position + step <= n:
            return (0 if step < 0 else n + 1), out
        position += step
        out.append(rows[position - 1])
        left -= 1
    return position, out


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(0, 6),
    moves=st.lists(
        st.one_of(
            st.tuples(st.sampled_from(["forward", "backward"]), st.none() | st.integers(0, 8)),
            st.tuples(st.sampled_from(["absolute", "relative"]), st.integers(-9, 9)),
        ),
        max_size=8,
    ),
)
def test_moves_follow_postgres_rule(n: int, moves: list) -> None:
    rows = [(k,) for k in range(1, n + 1)]
    cursor, position = QueryCursor((), rows), 0
    for kind, count in moves:
        where = Motion(kind, count)
        position, expected = _stepped(rows, position, where)
        assert cursor.go(where) == expected
        assert cursor.position == position
