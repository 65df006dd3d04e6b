"""Each function of the function table called with one argument more than it takes gives
PostgreSQL 15's SQLSTATE (42883 where PostgreSQL has no such function: sqlglot keeps or drops
the extra argument where the planner would not see it); ``length(bytea, name)`` counts the
characters of an encoding as PostgreSQL's does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome, same_outcomes  # noqa: E402

from changeflow.compute import expr as X
from changeflow.compute.functions import FUNCTIONS, Func
from changeflow.errors import PlanError

pytestmark = pytest.mark.postgres

# calls of functions whose rules take no NULL there (the most arguments they take)
CALLS = {
    "array_append": ["ARRAY[1]", "1"],
    "array_prepend": ["1", "ARRAY[1]"],
    "array_remove": ["ARRAY[1]", "1"],
    "date_part": ["'year'", "now()"],
    "date_trunc": ["'day'", "now()", "'UTC'"],
    "timezone": ["'UTC'", "now()"],
    "to_char": ["now()", "'YYYY'"],
}
# PostgreSQL takes more arguments there, which changeflow does not (yet)
MORE_IN_POSTGRES = {"jsonb_delete", "jsonb_extract_path", "jsonb_extract_path_text"}
MORE_IN_POSTGRES |= {"json_extract_path", "json_extract_path_text"}  # VARIADIC: any count
MORE_IN_POSTGRES |= {"regexp_replace"}
# written only in PostgreSQL's own syntax (extract(f FROM x), position(a IN b), trim(… FROM …))
SYNTAX = {"extract", "position", "trim"}

# of NULLs PostgreSQL cannot tell the polymorphic type (42804), where changeflow reads a NULL
# as an array of any type; pg_typeof's own type is regtype there, text here
NOT_OF_NULLS = {"array_cat", "array_length", "array_lower", "array_upper", "array_to_string"}
NOT_OF_NULLS |= {"cardinality", "to_jsonb", "pg_typeof", "concat", "concat_ws"}

LENGTHS = [
    "SELECT length('abc'::bytea, 'UTF8'), length('abc'::bytea, 'utf-8')",
    "SELECT length('\\xc3a9'::bytea, 'utf8'), length('\\xc3a9'::bytea, 'latin1')",
    "SELECT length('\\xa4a2'::bytea, 'EUC_JP'), length('\\xa4a2'::bytea, 'SJIS')",
    "SELECT length('\\xff'::bytea, 'SQL_ASCII'), length('\\xc3a9'::bytea, 'UNICODE')",
    "SELECT length('abc', 'UTF8'), length(NULL, 'UTF8'), length('ab'::bytea, NULL)",
    "SELECT pg_typeof(length('ab'::bytea, 'UTF8'))",
    "SELECT length('\\xc3'::bytea, 'UTF8')",
    "SELECT length('\\x610062'::bytea, 'UTF8')",
    "SELECT length('abc'::bytea, 'x')",
    "SELECT length('abc', 'x')",
    "SELECT length('abc'::text, 'UTF8')",
    "SELECT char_length('abc', 'UTF8')",
]


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    with beside_postgres(tmp_path / "home", postgres_url, "ar", "CREATE TABLE ar (x int)") as pair:
        yield pair


def _most_nulls(name: str) -> int | None:
    """The most NULL arguments ``name``'s rule takes; None if none or any number."""
    taken = []
    for count in range(8):
        try:
            Func(name, tuple(X.Lit(None) for _ in range(count)))
            taken.append(count)
        except PlanError:
            pass
    return max(taken) if taken and max(taken) < 7 else None


def one_too_many(names: set[str]) -> list[str]:
    """A call of each function of the table PostgreSQL has, with one argument too many."""
    calls = []
    for name in sorted(FUNCTIONS):
        if name not in names or name in MORE_IN_POSTGRES | SYNTAX:
            continue
        if name in CALLS:
            args = [*CALLS[name], "NULL"]
        elif (most := _most_nulls(name)) is not None:
            args = ["NULL"] * (most + 1)
        else:
            continue
        calls.append(f"SELECT {name}({', '.join(args)})")
    return calls


def of_nulls(names: set[str]) -> list[str]:
    """``pg_typeof`` of each function of the table PostgreSQL has, of up to three NULLs."""
    calls = []
    for name in sorted(FUNCTIONS):
        if name not in names or name in NOT_OF_NULLS | SYNTAX:
            continue
        for count in range(4):
            try:
                Func(name, tuple(X.Lit(None) for _ in range(count)))
            except PlanError:
                continue
            calls.append(f"SELECT pg_typeof({name}({', '.join(['NULL'] * count)}))")
    return calls


def test_calls_of_nulls_as_postgres(both) -> None:
    """The signature a call of NULLs runs (its result type), or PostgreSQL's SQLSTATE where
    it cannot choose one (42725: to_hex(NULL), trunc(NULL))."""
    ours, pg = both
    names = {n for (n,) in pg.execute("SELECT DISTINCT proname FROM pg_proc").fetchall()}
    calls = of_nulls(names)
    assert len(calls) > 80
    same_outcomes(ours, pg, calls)


def test_one_argument_too_many_as_postgres(both) -> None:
    ours, pg = both
    names = {n for (n,) in pg.execute("SELECT DISTINCT proname FROM pg_proc").fetchall()}
    calls = one_too_many(names) + ["SELECT trim(NULL, NULL, NULL)", "SELECT trim('a', 'b', 'c')"]
    assert len(calls) > 80
    for sql in calls:
        theirs = outcome(pg, sql)
        assert theirs[0] == "error", sql
        assert outcome(ours, sql) == theirs, sql


def test_length_in_an_encoding_as_postgres(both) -> None:
    ours, pg = both
    same_outcomes(ours, pg, LENGTHS)
