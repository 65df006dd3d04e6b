"""Roles through the server: a client connecting as a created role is that role (its
privileges checked; a role without LOGIN refused, 28000), and psql's ``\\du``, ``\\dp`` and
``\\dn+`` and ``\\ddp`` show roles and privileges as PostgreSQL 15's."""

from __future__ import annotations

import psycopg
import pytest
from serve_clients import psql
from test_psql import _same_psql_output


def test_a_client_is_the_role_it_connects_as(server, table_name: str) -> None:
    t = table_name
    with server.connect() as admin:
        for sql in (
            "CREATE ROLE cf_wire_app LOGIN",
            "CREATE ROLE cf_wire_off NOLOGIN",
            f"CREATE TABLE {t} (a int)",
            f"INSERT INTO {t} VALUES (1), (2)",
            f"GRANT SELECT ON {t} TO cf_wire_app",
        ):
            admin.execute(sql)
        try:
            with psycopg.connect(server.dsn(user="cf_wire_app"), autocommit=True) as app:
                got = app.execute("SELECT current_user, session_user").fetchone()
                assert got == ("cf_wire_app", "cf_wire_app")
                assert app.execute(f"SELECT a FROM {t} ORDER BY a").fetchall() == [(1,), (2,)]
                with pytest.raises(psycopg.errors.InsufficientPrivilege) as e:
                    app.execute(f"INSERT INTO {t} VALUES (3)")
                assert str(e.value).startswith(f"permission denied for table {t}")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    app.execute("CREATE TABLE cf_wire_mine (a int)")
            with server.connect() as other:  # DISCARD ALL sets the session's role back
                other.execute("SET ROLE cf_wire_app")
                assert other.execute("SELECT current_user").fetchone() == ("cf_wire_app",)
                other.execute("DISCARD ALL")
                assert other.execute("SELECT current_user").fetchone() == ("tester",)
            with pytest.raises(psycopg.OperationalError) as refused:
                psycopg.connect(server.dsn(user="cf_wire_off"))
            assert 'role "cf_wire_off" is not permitted to log in' in str(refused.value)
            admin.execute("REVOKE CONNECT ON DATABASE materialize FROM PUBLIC")
            try:
                with pytest.raises(psycopg.OperationalError) as refused:
                    psycopg.connect(server.dsn(user="cf_wire_app"))
                assert 'permission denied for database "materialize"' in str(refused.value)
                admin.execute("GRANT CONNECT ON DATABASE materialize TO cf_wire_app")
                with psycopg.connect(server.dsn(user="cf_wire_app")) as app:
                    assert app.execute("SELECT 1").fetchone() == (1,)
            finally:
                admin.execute("GRANT CONNECT ON DATABASE materialize TO PUBLIC")
                admin.execute("REVOKE CONNECT ON DATABASE materialize FROM cf_wire_app")
            assert admin.execute(f"SELECT count(*) FROM {t}").fetchone() == (2,)
        finally:
            admin.execute(f"DROP TABLE {t}")
            admin.execute("DROP ROLE cf_wire_app, cf_wire_off")


@pytest.mark.postgres
def test_psql_shows_roles_and_privileges_as_postgres(server, postgres_url: str) -> None:
    setup = [
        "CREATE ROLE cf_wp_r LOGIN CONNECTION LIMIT 4",
        "CREATE ROLE cf_wp_g NOLOGIN CREATEDB",
        "GRANT cf_wp_g TO cf_wp_r",
        "CREATE TABLE cf_wp_t (a int)",
        "GRANT SELECT, INSERT ON cf_wp_t TO cf_wp_r",
        "GRANT UPDATE ON cf_wp_t TO cf_wp_g WITH GRANT OPTION",
        "ALTER DEFAULT PRIVILEGES FOR ROLE cf_wp_g GRANT SELECT ON TABLES TO cf_wp_r",
    ]
    teardown = [
        "DROP TABLE IF EXISTS cf_wp_t",
        "DROP OWNED BY cf_wp_r, cf_wp_g",
        "DROP ROLE IF EXISTS cf_wp_r, cf_wp_g",
    ]
    try:
        _same_psql_output(
            server,
            postgres_url,
            setup,
            ["\\du cf_wp*", "\\dp cf_wp_t", "\\z cf_wp_t", "\\dn+ public", "\\ddp"],
            teardown,
            shown=lambda text: text.replace("postgres", "tester"),
        )
    finally:
        for sql in teardown:
            psql(server, "-c", sql)


@pytest.mark.parametrize("method", ["scram", "md5"])
def test_a_role_logs_in_with_its_password(start_server, tmp_path, method: str) -> None:
    passwords = tmp_path / "passwords"
    passwords.write_text("alice:adm1n\n[roles]\nalice: superuser\n")
    server = start_server("--password-file", str(passwords), "--auth", method)
    with server.connect(user="alice", password="adm1n") as admin:
        admin.execute("CREATE ROLE cf_pw LOGIN PASSWORD 'first'")
        stored = admin.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'cf_pw'")
        assert stored.fetchone()[0].startswith("SCRAM-SHA-256$4096:")
        shown = admin.execute("SELECT rolpassword FROM pg_roles WHERE rolname = 'cf_pw'")
        assert shown.fetchone() == ("********",)
        admin.execute("ALTER ROLE cf_pw SET statement_timeout TO '7s'")
        with server.connect(user="cf_pw", password="first") as app:
            assert app.execute("SELECT current_user").fetchone() == ("cf_pw",)
            assert app.execute("SHOW statement_timeout").fetchone() == ("7s",)
            app.execute("RESET statement_timeout")  # back to the role's, as in PostgreSQL
            assert app.execute("SHOW statement_timeout").fetchone() == ("7s",)
            assert app.info.parameter_status("is_superuser") == "off"
            hidden = app.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'cf_pw'")
            assert hidden.fetchone() == (None,)  # a secret only a superuser reads
        with pytest.raises(psycopg.OperationalError) as e:
            server.connect(user="cf_pw", password="wrong")
        assert "password authentication failed" in str(e.value)
        admin.execute("ALTER ROLE cf_pw PASSWORD 'second'")
        with pytest.raises(psycopg.OperationalError):
            server.connect(user="cf_pw", password="first")
        with server.connect(user="cf_pw", password="second") as app:
            assert app.execute("SELECT session_user").fetchone() == ("cf_pw",)
        admin.execute("ALTER ROLE cf_pw VALID UNTIL '2001-01-01'")  # passed: the password too
        with pytest.raises(psycopg.OperationalError):
            server.connect(user="cf_pw", password="second")
        admin.execute("ALTER ROLE cf_pw VALID UNTIL 'infinity'")
        admin.execute("ALTER ROLE cf_pw CONNECTION LIMIT 1")
        with server.connect(user="cf_pw", password="second"):
            with pytest.raises(psycopg.OperationalError) as e:
                server.connect(user="cf_pw", password="second")
            assert 'too many connections for role "cf_pw"' in str(e.value)
        admin.execute("ALTER ROLE cf_pw PASSWORD NULL")
        with pytest.raises(psycopg.OperationalError):
            server.connect(user="cf_pw", password="second")
