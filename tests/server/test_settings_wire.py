"""Run-time parameters over the wire as PostgreSQL 15 sends them: SET LOCAL outside a
transaction block warns (WARNING, 25P01), a SET of a reported parameter sends its new value
(ParameterStatus: psycopg's ``info.parameter_status``), DISCARD ALL resets every parameter;
compared with a throwaway PostgreSQL server."""

from __future__ import annotations

import psycopg
import pytest
from serve_clients import notices_of

pytestmark = pytest.mark.postgres


def _session(conn: psycopg.Connection) -> list:
    out = [notices_of(conn, "SET LOCAL work_mem = '1MB'")]
    for sql in ("SET application_name = 'reporting'", "SET DateStyle = 'ISO, DMY'"):
        conn.execute(sql)
        out.append([conn.info.parameter_status(n) for n in ("application_name", "DateStyle")])
    conn.execute("SET work_mem = '32MB'")
    conn.execute("SET statement_timeout = '90s'")
    out.append(conn.execute("SHOW work_mem").fetchall())
    conn.execute("DISCARD ALL")
    out.append(
        conn.execute(
            "SELECT current_setting('work_mem'), current_setting('statement_timeout')"
        ).fetchall()
    )
    out.append(conn.execute("SHOW application_name").fetchall())
    return out


def test_settings_over_the_wire_as_postgres(server, postgres_url: str) -> None:
    with (
        server.connect(autocommit=True) as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        assert _session(ours) == _session(pg)


def test_deallocate_all_keeps_settings_and_temporary_tables(server, postgres_url: str) -> None:
    """psycopg sends DEALLOCATE ALL after a DROP, ALTER or rollback: it forgets the prepared
    statements only, as PostgreSQL's does, not the session's settings or temporary tables."""

    def session(conn: psycopg.Connection) -> list:
        conn.execute("SET work_mem = '32MB'")
        conn.execute("CREATE TEMP TABLE kept_temp (a int)")
        conn.execute("INSERT INTO kept_temp VALUES (1)")
        conn.execute("PREPARE p AS SELECT 1")
        conn.execute("DEALLOCATE ALL")
        out = [conn.execute("SHOW work_mem").fetchall()]
        out.append(conn.execute("SELECT * FROM kept_temp").fetchall())
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("EXECUTE p")
        out.append(caught.value.sqlstate)
        return out

    with (
        server.connect(autocommit=True) as ours,
        psycopg.connect(postgres_url, autocommit=True) as pg,
    ):
        assert session(ours) == session(pg)


def test_reset_gives_back_the_startup_application_name(server, postgres_url: str) -> None:
    """RESET and RESET ALL give back the application_name the client started with (it was
    the empty default), as PostgreSQL's."""
    statements = [
        "SET application_name = 'other'",
        "RESET application_name",
        "SET application_name = 'other'",
        "RESET ALL",
    ]
    with (
        server.connect(application_name="started") as ours,
        psycopg.connect(postgres_url, autocommit=True, application_name="started") as pg,
    ):
        for sql in statements:
            ours.execute(sql)
            pg.execute(sql)
            shown = "SHOW application_name"
            assert ours.execute(shown).fetchall() == pg.execute(shown).fetchall(), sql
        assert ours.execute("SHOW application_name").fetchone() == ("started",)
