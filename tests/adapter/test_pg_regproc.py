"""A function's name cast to regproc, compared with PostgreSQL 15: a name PostgreSQL has
several functions of is ambiguous (42725), a regprocedure with its arguments is not; the list
of such names here is PostgreSQL's own for the function table's names."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

from changeflow.adapter.object_ids import OVERLOADED
from changeflow.compute.functions import FUNCTIONS

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "SELECT 'upper'::regproc",
    "SELECT 'abs'::regproc",
    "SELECT 'pg_catalog.round'::regproc",
    "SELECT 'trim_scale'::regproc",
    "SELECT 'initcap'::regproc::text",
    "SELECT 'abs(integer)'::regprocedure",
    "SELECT 'upper(text)'::regprocedure::text",
    "SELECT 'nosuch'::regproc",
    "SELECT 'upper'::regproc FROM rp",
    "SELECT 'initcap'::regproc FROM rp",
]


def test_overloaded_names_are_postgres_own(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as pg:
        rows = pg.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace"
            " GROUP BY proname HAVING count(*) > 1"
        ).fetchall()
    assert {name for (name,) in rows} & set(FUNCTIONS) == OVERLOADED


def test_regproc_of_a_name_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE rp (id int)", "INSERT INTO rp VALUES (1)")
    with beside_postgres(tmp_path / "home", postgres_url, "rp", *setup) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
