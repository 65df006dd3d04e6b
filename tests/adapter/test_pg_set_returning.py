"""generate_series and unnest in a select list (several in lockstep) and of an earlier FROM
item's columns, compared with PostgreSQL 15: ad hoc and as materialized views kept through
inserts, updates and deletes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, maintained_as_postgres, same_errors  # noqa: E402

pytestmark = pytest.mark.postgres

CREATE = "CREATE TABLE sr (id int NOT NULL, n int, x numeric(6,2))"
INSERT = "INSERT INTO sr VALUES (1, 3, 1.5), (2, 0, 0.5), (3, NULL, 2), (4, 1, NULL)"
CHANGES = [
    "INSERT INTO sr VALUES (5, 4, 3.25)",
    "UPDATE sr SET n = 2 WHERE id = 2",
    "DELETE FROM sr WHERE id = 1",
]
QUERIES = [
    "SELECT id, generate_series(1, n) FROM sr",
    "SELECT id, generate_series(n, 1, -1) * 10 AS s FROM sr WHERE id > 1",
    "SELECT id, generate_series(x, 4) FROM sr",
    "SELECT sr.id, g FROM sr, generate_series(1, sr.n) AS g",
    "SELECT id, v, o FROM sr CROSS JOIN LATERAL generate_series(n, 2) WITH ORDINALITY AS g(v, o)",
    "SELECT id, unnest(ARRAY[n, id]) FROM sr",
    "SELECT generate_series(1, 3)",
    "SELECT id, generate_series(1, n), unnest(ARRAY[x, x * 2]) FROM sr",
    "SELECT id, unnest(ARRAY[id]) AS u, generate_series(n, 1, -1) + 1, unnest(ARRAY[id]) * 2"
    " FROM sr",
    "SELECT generate_series(1, 2), generate_series(1, 4, 2), unnest(ARRAY['a', 'b', 'c'])",
    # a one-column function's alias is its value (was the record text "(…)")
    "SELECT sr.id, e::text, e ->> 'k' AS k FROM sr,"
    " jsonb_array_elements(jsonb_build_array(jsonb_build_object('k', n), x)) e",
    "SELECT e::text AS v, e.value::text AS w FROM jsonb_array_elements('[1, {\"a\": 2}]') e",
    "SELECT u * 2 AS d FROM sr, unnest(ARRAY[n, id]) u",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "sr", CREATE, INSERT) as pair:
        yield pair


def test_set_returning_functions_as_postgres(both) -> None:
    maintained_as_postgres(*both, QUERIES, CHANGES)


def test_set_returning_errors_as_postgres(both) -> None:
    ours, pg = both
    same_errors(
        ours,
        pg,
        [
            "SELECT generate_series(1, n, 0) FROM sr",
            "SELECT generate_series(1, 'a'::text) FROM sr",
            "SELECT sr.id FROM sr, generate_series(1, sr.nope) AS g",
        ],
    )
