"""RETURNING of UPDATE … FROM and DELETE … USING: the target's columns as PostgreSQL 15 gives
them; a ``*`` that would take the other relations' columns (which were silently left out, or
taken for the target's) is refused with 0A000 before anything is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from changeflow.adapter.connection import DatabaseError

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = (
    "CREATE TABLE rf (a int, b int)",
    "INSERT INTO rf VALUES (1, 2), (3, 4)",
)


def test_returning_with_from_or_using(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rf", *SETUP) as (ours, pg):
        values = "(VALUES (1, 'x')) AS u(a, c)"
        same_outcomes(
            ours,
            pg,
            [
                f"UPDATE rf SET b = b + 1 FROM {values} WHERE rf.a = u.a RETURNING rf.*",
                f"UPDATE rf AS r SET b = b + 1 FROM {values} WHERE r.a = u.a RETURNING r.*, r.a",
                "UPDATE rf SET b = b + 1 RETURNING *",
                "SELECT * FROM rf ORDER BY a",
            ],
        )
        same_errors(ours, pg, ["UPDATE rf SET b = 1 RETURNING nope.*"])
        for sql in [
            f"UPDATE rf SET b = 0 FROM {values} WHERE rf.a = u.a RETURNING *",
            f"UPDATE rf SET b = 0 FROM {values} WHERE rf.a = u.a RETURNING u.*",
            f"DELETE FROM rf USING {values} WHERE rf.a = u.a RETURNING *",
        ]:
            with pytest.raises(DatabaseError) as caught:
                ours.execute(sql)
            assert caught.value.sqlstate == "0A000", sql
        same_outcomes(ours, pg, ["SELECT * FROM rf ORDER BY a"])  # nothing was written
