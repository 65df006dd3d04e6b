"""pg_proc's OIDs are PostgreSQL 15's own for the functions it has (so tools that join on
them, and casts to regproc and regprocedure, agree with PostgreSQL), and do not depend on
which other functions exist."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

from changeflow.adapter.object_ids import function_oids
from changeflow.adapter.proc_oids import DERIVED, PG_OIDS, SIGNATURES, proc_oid

pytestmark = pytest.mark.postgres

STATEMENTS = [
    "SELECT 'initcap'::regproc::oid, 'split_part'::regproc::oid::int,"
    " 'abs(integer)'::regprocedure::oid, 'upper(text)'::regprocedure::oid",
    "SELECT 1397::regprocedure, 872::regprocedure, 'initcap'::regproc::oid::regprocedure",
    "SELECT 'abs(text)'::regprocedure",
    "SELECT p.proname, p.oid::int FROM pg_proc p WHERE p.oid = 'initcap'::regproc",
    "SELECT p.proname, p.oid::int, p.pronargs, p.prorettype::int, p.proargtypes::text"
    " FROM pg_proc p WHERE p.oid = 'abs(integer)'::regprocedure",
    "SELECT count(*) FROM pg_proc WHERE proname IN ('abs', 'upper', 'md5')",
    "SELECT pg_get_function_result(p.oid), pg_get_function_arguments(p.oid) FROM pg_proc p"
    " WHERE p.proname IN ('make_date', 'json_extract_path') ORDER BY 1",
    "SELECT p.proname, p.oid::int FROM pg_catalog.pg_proc p WHERE p.proname IN ('initcap',"
    " 'split_part', 'chr', 'left', 'array_dims') ORDER BY 1",
]


def test_oids_are_postgres_own(postgres_url: str) -> None:
    """Each signature listed is PostgreSQL's, with its OID; each function PostgreSQL has is
    listed under the lowest OID of its name; any other has an OID of its own, derived from
    its name, outside PostgreSQL's."""
    names = sorted(function_oids())
    with psycopg.connect(postgres_url) as pg:
        rows = pg.execute(
            "SELECT p.oid::int, p.proname, p.oid::regprocedure::text FROM pg_proc p"
            " WHERE pronamespace = 'pg_catalog'::regnamespace AND proname = ANY(%s)",
            [names],
        ).fetchall()
    theirs = {name + sig[sig.index("(") :]: oid for oid, name, sig in rows}
    assert theirs == SIGNATURES
    lowest = {name: min(o for o, n, _ in rows if n == name) for _, name, _ in rows}
    assert lowest == PG_OIDS
    ours = function_oids()
    assert {n: o for n, o in ours.items() if n in lowest} == lowest
    others = [o for n, o in ours.items() if n not in lowest]
    assert all(o in DERIVED for o in others) and len(set(ours.values())) == len(ours)


def test_a_derived_oid_depends_on_the_name_alone() -> None:
    assert proc_oid("no_such_function_x") == proc_oid("no_such_function_x") in DERIVED
    assert proc_oid("no_such_function_x") != proc_oid("no_such_function_y")
    assert proc_oid("initcap") == 872


def test_pg_proc_oids_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    setup = ("CREATE TABLE proc_oids (id int)",)
    with beside_postgres(tmp_path / "home", postgres_url, "proc_oids", *setup) as (ours, pg):
        same_outcomes(ours, pg, STATEMENTS)
