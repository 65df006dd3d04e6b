"""RETURNING of UPDATE … FROM and DELETE … USING as PostgreSQL 15 gives it: the target's
columns, the FROM or USING relations' columns (by name, ``name.*``, and in ``*`` after the
target's), expressions over both, one row per changed target row; the rows and errors
compared with PostgreSQL's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = (
    "CREATE TABLE rf (a int, b int)",
    "INSERT INTO rf VALUES (1, 2), (3, 4), (5, 6)",
    "DROP TABLE IF EXISTS rf_src",
    "CREATE TABLE rf_src (a int, w text)",
    "INSERT INTO rf_src VALUES (3, 'three'), (5, 'five')",
)


def test_returning_with_from_or_using(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "rf", *SETUP) as (ours, pg):
        values = "(VALUES (1, 'x')) AS u(a, c)"
        try:
            same_outcomes(
                ours,
                pg,
                [
                    f"UPDATE rf SET b = b + 1 FROM {values} WHERE rf.a = u.a RETURNING rf.*",
                    f"UPDATE rf AS r SET b = b + 1 FROM {values} WHERE r.a = u.a "
                    "RETURNING r.*, r.a",
                    "UPDATE rf SET b = b + 1 RETURNING *",
                    f"UPDATE rf SET b = 0 FROM {values} WHERE rf.a = u.a RETURNING *",
                    f"UPDATE rf SET b = 7 FROM {values} WHERE rf.a = u.a RETURNING u.*, b",
                    "UPDATE rf SET b = length(s.w) FROM rf_src s WHERE s.a = rf.a "
                    "RETURNING s.w || ':' || rf.b AS said, s.a",
                    f"DELETE FROM rf USING {values} WHERE rf.a = u.a RETURNING *",
                    "DELETE FROM rf USING rf_src s WHERE s.a = rf.a AND s.w = 'five' "
                    "RETURNING upper(s.w), rf.*",
                    "SELECT * FROM rf ORDER BY a",
                ],
            )
            same_errors(
                ours,
                pg,
                [
                    "UPDATE rf SET b = 1 RETURNING nope.*",
                    f"UPDATE rf SET b = 1 FROM {values} WHERE rf.a = u.a RETURNING nope.*",
                    "DELETE FROM rf USING rf_src s WHERE s.a = rf.a RETURNING s.nope",
                ],
            )
            same_outcomes(ours, pg, ["SELECT * FROM rf ORDER BY a"])  # nothing was written
        finally:
            pg.execute("DROP TABLE rf_src")
