"""Run-time parameters as PostgreSQL 15 has them: SET, SET LOCAL, RESET, RESET ALL, SHOW,
current_setting and set_config checked by type, unit, range and context, shown with
PostgreSQL's units, undone with the transaction block, and pg_settings listing every one;
each compared with a real PostgreSQL."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

import changeflow

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres


@pytest.fixture
def both(tmp_path: Path, postgres_url: str):
    ours = changeflow.connect(tmp_path / "home", host_seconds=0)
    ours.autocommit = True
    pg = psycopg.connect(postgres_url, autocommit=True)
    try:
        yield ours, pg
    finally:
        pg.close()
        ours.close()


def test_values_are_checked_kept_and_shown_as_postgres(both) -> None:
    same_outcomes(
        *both,
        [
            "SHOW work_mem",
            "SET work_mem = '64MB'",
            "SHOW work_mem",
            "SET work_mem TO 1536",  # in the base unit, kB
            "SHOW work_mem",
            "SET work_mem = '0.5MB'",
            "SHOW work_mem",
            "SET statement_timeout = 90000",
            "SHOW statement_timeout",
            "SET statement_timeout = '5 min'",
            "SELECT current_setting('statement_timeout')",
            "SET statement_timeout = ' 2 h '",
            "SHOW statement_timeout",
            "SET idle_session_timeout = '1d'",
            "SHOW idle_session_timeout",
            "SET effective_cache_size = 1000",  # pages of 8kB
            "SHOW effective_cache_size",
            "SET temp_buffers = '16MB'",
            "SHOW temp_buffers",
            "SET vacuum_cost_delay = '2.5ms'",
            "SHOW vacuum_cost_delay",
            "SET vacuum_cost_delay = '2000us'",
            "SHOW vacuum_cost_delay",
            "SET random_page_cost = 1.1",
            "SET seq_page_cost = 1e3",
            "SET cursor_tuple_fraction = .25",
            "SELECT current_setting('random_page_cost'), current_setting('seq_page_cost'), "
            "current_setting('cursor_tuple_fraction')",
            "SET enable_seqscan = 'of'",
            "SET enable_hashjoin TO tru",
            "SET enable_mergejoin = 0",
            "SELECT current_setting('enable_seqscan'), current_setting('enable_hashjoin'), "
            "current_setting('enable_mergejoin')",
            "SET synchronous_commit = 'LOCAL'",
            "SHOW synchronous_commit",
            "SET client_min_messages = WARNING",
            "SHOW client_min_messages",
            "SET application_name = MyApp",
            "SHOW application_name",
            "SET application_name = 'My App'",
            "SHOW application_name",
            "SET search_path = 'a', 'b'",
            "SHOW search_path",
            "RESET search_path",
            "SHOW search_path",
            "SET myapp.tenant = 42",
            "SHOW myapp.tenant",
            "SELECT current_setting('myapp.tenant'), current_setting('myapp.other', true)",
            "SELECT set_config('work_mem', '8MB', false)",
            "SHOW work_mem",
            "RESET work_mem",
            "SHOW work_mem",
            "SET work_mem TO DEFAULT",
            "SHOW work_mem",
            "SET work_mem = '32MB'",
            "SET enable_seqscan = off",
            "RESET ALL",
            "SELECT current_setting('work_mem'), current_setting('enable_seqscan')",
            "SELECT setting, unit FROM pg_settings WHERE name = 'work_mem'",
            "SET temp_buffers = '16MB'",
            "SELECT setting, unit, vartype, context FROM pg_settings WHERE name = 'temp_buffers'",
        ],
    )


def test_transaction_blocks_undo_and_end_settings_as_postgres(both) -> None:
    same_outcomes(
        *both,
        [
            "SET work_mem = '8MB'",
            "SET LOCAL work_mem = '1MB'",  # outside a block: a warning, no effect
            "SHOW work_mem",
            "BEGIN",
            "SET work_mem = '16MB'",
            "SET LOCAL statement_timeout = '1s'",
            "SHOW statement_timeout",
            "ROLLBACK",
            "SELECT current_setting('work_mem'), current_setting('statement_timeout')",
            "BEGIN",
            "SET work_mem = '16MB'",
            "SET LOCAL statement_timeout = '1s'",
            "COMMIT",
            "SELECT current_setting('work_mem'), current_setting('statement_timeout')",
            "BEGIN",
            "SET LOCAL work_mem = '2MB'",
            "SET work_mem = '3MB'",  # a SET after SET LOCAL outlasts the block
            "COMMIT",
            "SHOW work_mem",
            "BEGIN",
            "SET work_mem = '5MB'",
            "SAVEPOINT s",
            "SET work_mem = '6MB'",
            "ROLLBACK TO SAVEPOINT s",
            "SHOW work_mem",
            "COMMIT",
            "SHOW work_mem",
            "BEGIN",
            "RESET ALL",
            "ROLLBACK",
            "SHOW work_mem",
        ],
    )


def test_bad_settings_are_refused_as_postgres(both) -> None:
    same_errors(
        *both,
        [
            "SET no_such_parameter = 1",
            "SHOW no_such_parameter",
            "SELECT current_setting('no_such_parameter')",
            "SHOW myapp.never_set",
            "SET work_mem = 'lots'",
            "SET work_mem = '64XB'",
            "SET work_mem = 1.5",  # 2 kB, under its minimum
            "SET statement_timeout = -5",
            "SET statement_timeout = '5 parsecs'",
            "SET geqo_threshold = 1",
            "SET random_page_cost = -1",
            "SET enable_seqscan = maybe",
            "SET synchronous_commit = sometimes",
            "SET server_version = '1'",
            "SET block_size = 1",
            "SET max_connections = 5",
            "RESET max_connections",
            "SET log_checkpoints = on",
            "SET log_connections = on",
        ],
    )
    ours, pg = both
    with pytest.raises(psycopg.Error) as theirs:
        pg.execute("SET synchronous_commit = sometimes")
    with pytest.raises(changeflow.DatabaseError) as mine:
        ours.execute("SET synchronous_commit = sometimes")
    assert str(mine.value) == str(theirs.value).splitlines()[0]
    assert mine.value.error.hint == theirs.value.diag.message_hint  # the values it takes


def test_pg_settings_lists_every_parameter_as_postgres(both) -> None:
    """Names, types, units, contexts, ranges and enum values of every parameter."""
    ours, pg = both
    sql = (
        "SELECT name, vartype, unit, context, min_val, max_val, enumvals::text FROM pg_settings "
        "WHERE name NOT LIKE '%.%' ORDER BY name"
    )
    theirs = [tuple(str(v) for v in r) for r in pg.execute(sql).fetchall()]
    mine = [tuple(str(v) for v in r) for r in ours.execute(sql).fetchall()]
    assert len(mine) > 300
    assert mine == theirs
    rows = ours.execute("SHOW ALL").fetchall()
    assert ("work_mem", "4MB", "") in rows and len(rows) == len(mine)
