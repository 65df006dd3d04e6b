"""Roles and privileges as PostgreSQL 15's, side by side: CREATE, ALTER and DROP ROLE,
membership (GRANT role TO role), GRANT and REVOKE on tables, schemas and the database (WITH
GRANT OPTION, CASCADE), SET ROLE and SET SESSION AUTHORIZATION, privileges enforced on reads,
writes, TRUNCATE and DDL, ownership of what a role creates, REASSIGN OWNED and DROP OWNED, the
catalogs (pg_roles, pg_auth_members, has_table_privilege, information_schema.table_privileges)
and ROLLBACK of all of it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_outcomes  # noqa: E402

import changeflow  # noqa: E402

pytestmark = pytest.mark.postgres

ROLES = ("cf_reader", "cf_writer", "cf_admin", "cf_group", "cf_tx")
SETUP = ["CREATE TABLE rt (id int, v text)", "INSERT INTO rt VALUES (1, 'a'), (2, 'b')"]
ROLE_ROWS = (
    "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, "
    "rolconnlimit FROM pg_roles WHERE rolname LIKE 'cf\\_%' ORDER BY 1"
)
MEMBERS = (
    "SELECT r.rolname, m.rolname, a.admin_option FROM pg_auth_members a "
    "JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member "
    "WHERE r.rolname LIKE 'cf\\_%' ORDER BY 1, 2"
)
GRANTS = (
    "SELECT grantee, table_name, privilege_type, is_grantable "
    "FROM information_schema.table_privileges WHERE grantee LIKE 'cf\\_%' ORDER BY 1, 2, 3"
)


def _clean(pg) -> None:
    pg.execute("RESET ROLE")
    pg.execute("RESET SESSION AUTHORIZATION")
    pg.execute("DROP VIEW IF EXISTS rv")
    pg.execute("DROP TABLE IF EXISTS cf_w CASCADE")
    pg.execute("DROP SEQUENCE IF EXISTS cf_s")
    pg.execute("DROP FUNCTION IF EXISTS cf_f(int)")
    pg.execute("DROP SCHEMA IF EXISTS cf_sch CASCADE")
    pg.execute("ALTER TABLE IF EXISTS rt OWNER TO CURRENT_USER")
    for role in ROLES:
        if pg.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            pg.execute(f"DROP OWNED BY {role}")
            pg.execute(f"DROP ROLE {role}")


@pytest.fixture
def both(tmp_path, postgres_url):
    with beside_postgres(tmp_path / "home", postgres_url, "rt", *SETUP) as (ours, pg):
        _clean(pg)
        try:
            yield ours, pg
        finally:
            _clean(pg)


def test_roles_are_created_altered_and_dropped(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_reader",
            "CREATE USER cf_writer PASSWORD 'pw'",
            "CREATE ROLE cf_group NOLOGIN",
            "CREATE ROLE cf_admin WITH CREATEROLE LOGIN CONNECTION LIMIT 3",
            "CREATE ROLE cf_reader",
            "CREATE ROLE pg_cf",
            "CREATE ROLE public",
            ROLE_ROWS,
            "ALTER ROLE cf_reader LOGIN CREATEDB",
            "ALTER ROLE cf_group WITH NOINHERIT",
            "ALTER USER cf_writer CONNECTION LIMIT 10",
            "ALTER ROLE cf_admin VALID UNTIL '2030-01-02 03:04:05+00'",
            "SELECT rolvaliduntil::text FROM pg_roles WHERE rolname = 'cf_admin'",
            "ALTER ROLE cf_admin VALID UNTIL 'infinity'",
            "SELECT rolvaliduntil::text FROM pg_roles WHERE rolname = 'cf_admin'",
            "ALTER ROLE cf_none LOGIN",
            ROLE_ROWS,
            "ALTER ROLE cf_reader SET work_mem TO '8MB'",
            "SELECT rolconfig::text FROM pg_roles WHERE rolname = 'cf_reader'",
            "ALTER ROLE cf_reader RESET work_mem",
            "SELECT rolconfig FROM pg_roles WHERE rolname = 'cf_reader'",
            "ALTER ROLE cf_writer RENAME TO cf_tx",
            "ALTER ROLE cf_tx RENAME TO cf_reader",
            ROLE_ROWS,
            "DROP ROLE cf_tx, cf_group",
            "DROP ROLE cf_tx",
            "DROP ROLE IF EXISTS cf_tx",
            ROLE_ROWS,
        ],
    )


def test_membership(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_group",
            "CREATE ROLE cf_reader LOGIN",
            "CREATE ROLE cf_admin LOGIN",
            "GRANT cf_group TO cf_reader",
            "GRANT cf_group TO cf_reader",
            "GRANT cf_reader TO cf_group",
            "GRANT cf_group TO cf_group",
            "GRANT cf_group TO cf_admin WITH ADMIN OPTION",
            "GRANT cf_group TO cf_none",
            MEMBERS,
            "SELECT pg_has_role('cf_reader', 'cf_group', 'MEMBER'),"
            " pg_has_role('cf_group', 'cf_reader', 'MEMBER')",
            "REVOKE ADMIN OPTION FOR cf_group FROM cf_admin",
            "REVOKE cf_group FROM cf_reader",
            "REVOKE cf_group FROM cf_reader",
            MEMBERS,
            "CREATE GROUP cf_tx",
            "ALTER GROUP cf_tx ADD USER cf_reader, cf_admin",
            "ALTER GROUP cf_tx DROP USER cf_admin",
            MEMBERS,
            "DROP ROLE cf_group",
            MEMBERS,
        ],
    )


def test_privileges_are_enforced(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_group",
            "CREATE ROLE cf_reader LOGIN IN ROLE cf_group",
            "CREATE ROLE cf_writer LOGIN",
            "GRANT SELECT ON rt TO cf_reader",
            "GRANT INSERT, UPDATE ON TABLE rt TO cf_group",
            "GRANT EXECUTE ON TABLE rt TO cf_reader",
            "GRANT SELECT ON rt TO cf_none",
            "GRANT SELECT ON cf_nothing TO cf_reader",
            "SELECT has_table_privilege('cf_reader', 'rt', 'SELECT'),"
            " has_table_privilege('cf_reader', 'rt', 'INSERT'),"
            " has_table_privilege('cf_reader', 'rt', 'DELETE'),"
            " has_table_privilege('cf_writer', 'rt', 'select')",
            "SELECT has_column_privilege('cf_reader', 'rt', 'v', 'SELECT'),"
            " has_column_privilege('cf_writer', 'rt', 'v', 'SELECT'),"
            " has_any_column_privilege('cf_reader', 'rt', 'INSERT')",
            GRANTS,
            "SET ROLE cf_reader",
            "SELECT current_user",
            "SELECT * FROM rt ORDER BY id",
            "INSERT INTO rt VALUES (3, 'c')",
            "UPDATE rt SET v = 'x' WHERE id = 3",
            "DELETE FROM rt WHERE id = 3",
            "TRUNCATE rt",
            "CREATE TABLE cf_w (a int)",
            "DROP TABLE rt",
            "ALTER TABLE rt ADD COLUMN z int",
            "COMMENT ON TABLE rt IS 'mine'",
            "COMMENT ON COLUMN rt.v IS 'mine'",
            "CREATE ROLE cf_tx",
            "GRANT SELECT ON rt TO cf_writer",
            "SET ROLE cf_writer",
            "RESET ROLE",
            "SET ROLE cf_writer",
            "SELECT table_name FROM information_schema.tables WHERE table_name = 'rt'",
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'rt'",
            "SELECT * FROM rt",
            "INSERT INTO rt VALUES (4, 'd')",
            "UPDATE rt SET v = 'y'",
            "RESET ROLE",
            "GRANT UPDATE ON rt TO cf_writer",
            "SET ROLE cf_writer",
            "SELECT table_name FROM information_schema.tables WHERE table_name = 'rt'",
            "UPDATE rt SET v = 'y'",
            "UPDATE rt SET v = v || 'y'",
            "RESET ROLE",
            "SELECT * FROM rt ORDER BY id",
            "REVOKE SELECT ON rt FROM cf_reader",
            "SET ROLE cf_reader",
            "SELECT * FROM rt",
            "RESET ROLE",
            "DROP ROLE cf_group",
            "SET ROLE cf_none",
        ],
    )


def test_ownership_and_schema_create(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_writer LOGIN",
            "CREATE ROLE cf_reader LOGIN",
            "GRANT CREATE ON SCHEMA public TO cf_writer",
            "SET ROLE cf_writer",
            "CREATE TABLE cf_w (a int)",
            "INSERT INTO cf_w VALUES (1)",
            "SELECT * FROM cf_w",
            "ALTER TABLE cf_w ADD COLUMN b int",
            "RESET ROLE",
            "SELECT tableowner FROM pg_tables WHERE tablename = 'cf_w'",
            "SET ROLE cf_reader",
            "SELECT * FROM cf_w",
            "DROP TABLE cf_w",
            "RESET ROLE",
            "DROP ROLE cf_writer",
            "REASSIGN OWNED BY cf_writer TO cf_reader",
            "SELECT tableowner FROM pg_tables WHERE tablename = 'cf_w'",
            "SET ROLE cf_reader",
            "SELECT * FROM cf_w",
            "DROP TABLE cf_w",
            "RESET ROLE",
            "REVOKE CREATE ON SCHEMA public FROM cf_writer",
            "DROP ROLE cf_writer",
        ],
    )


def test_grant_option_and_cascade(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_admin LOGIN",
            "CREATE ROLE cf_writer LOGIN",
            "GRANT SELECT ON rt TO cf_admin WITH GRANT OPTION",
            "GRANT SELECT ON rt TO PUBLIC WITH GRANT OPTION",
            "CREATE TABLE cf_w (a int)",
            "SET ROLE cf_admin",
            "GRANT SELECT ON rt, cf_w TO cf_writer",  # (all or nothing)
            "RESET ROLE",
            "SELECT has_table_privilege('cf_writer', 'rt', 'SELECT')",
            "SET ROLE cf_admin",
            "GRANT SELECT ON rt TO cf_writer",
            "GRANT INSERT ON rt TO cf_writer",
            "RESET ROLE",
            GRANTS,
            "REVOKE SELECT ON rt FROM cf_admin",
            "REVOKE GRANT OPTION FOR SELECT ON rt FROM cf_admin CASCADE",
            GRANTS,
            "REVOKE SELECT ON rt FROM cf_admin CASCADE",
            GRANTS,
            "SELECT has_table_privilege('cf_writer', 'rt', 'SELECT')",
        ],
    )


def test_owner_to(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_writer LOGIN",
            "CREATE ROLE cf_reader LOGIN",
            "ALTER TABLE rt OWNER TO cf_writer",
            "SELECT tableowner FROM pg_tables WHERE tablename = 'rt'",
            "SET ROLE cf_writer",
            "INSERT INTO rt VALUES (5, 'e')",
            "GRANT SELECT ON rt TO cf_reader",
            "ALTER TABLE rt OWNER TO cf_reader",
            "RESET ROLE",
            GRANTS,
            "ALTER TABLE rt OWNER TO cf_nobody",
            "SET ROLE cf_reader",
            "ALTER TABLE rt ADD COLUMN z int",
            "SELECT * FROM rt ORDER BY id",
            "RESET ROLE",
            "DROP ROLE cf_writer",
            "ALTER TABLE rt OWNER TO cf_reader",
            GRANTS,
            "ALTER TABLE rt OWNER TO CURRENT_USER",
            "DROP ROLE cf_writer",
            "CREATE ROLE cf_tx",
            "CREATE SCHEMA cf_sch",
            "ALTER SCHEMA cf_sch OWNER TO cf_tx",
            "CREATE FUNCTION cf_f(x int) RETURNS int LANGUAGE sql AS 'SELECT x'",
            "ALTER FUNCTION cf_f(int) OWNER TO cf_tx",
            "ALTER FUNCTION cf_nope(int) OWNER TO cf_tx",
            "CREATE SEQUENCE cf_s",
            "ALTER SEQUENCE cf_s OWNER TO cf_tx",
            "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'cf_sch'",
            "SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE proname = 'cf_f'",
            "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'cf_s'",
            "DROP ROLE cf_tx",
        ],
    )


def test_views_read_with_their_owners_privileges(both):
    same_outcomes(
        *both,
        [
            "CREATE VIEW rv AS SELECT id FROM rt",
            "CREATE ROLE cf_reader LOGIN",
            "GRANT SELECT ON rv TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT * FROM rv ORDER BY id",
            "SELECT * FROM rt",
            "RESET ROLE",
            "REVOKE SELECT ON rv FROM cf_reader",
            "SET ROLE cf_reader",
            "SELECT * FROM rv",
            "RESET ROLE",
        ],
    )


def test_predefined_roles(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_reader LOGIN",
            "GRANT pg_read_all_data TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT * FROM rt ORDER BY id",
            "INSERT INTO rt VALUES (9, 'z')",
            "RESET ROLE",
            "GRANT pg_write_all_data TO cf_reader",
            "SET ROLE cf_reader",
            "INSERT INTO rt VALUES (9, 'z')",
            "DELETE FROM rt WHERE id = 9",
            "TRUNCATE rt",
            "RESET ROLE",
            "SELECT rolname, oid, rolcanlogin FROM pg_roles"
            " WHERE rolname IN ('pg_monitor', 'pg_read_all_data') ORDER BY 1",
            "SELECT r.rolname FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid"
            " JOIN pg_roles m ON m.oid = a.member WHERE m.rolname = 'pg_monitor' ORDER BY 1",
            "SELECT nspname, pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'public'",
            "DROP ROLE pg_monitor",
            "CREATE ROLE pg_mine",
            "REVOKE pg_read_all_data, pg_write_all_data FROM cf_reader",
        ],
    )


def test_sequence_privileges(both):
    same_outcomes(
        *both,
        [
            "CREATE SEQUENCE cf_s",
            "CREATE TABLE cf_w (id serial, a int)",
            "CREATE ROLE cf_reader LOGIN",
            "GRANT INSERT, SELECT ON cf_w TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT nextval('cf_s')",
            "INSERT INTO cf_w (a) VALUES (1)",
            "RESET ROLE",
            "GRANT USAGE ON SEQUENCE cf_s, cf_w_id_seq TO cf_reader",
            "GRANT INSERT ON SEQUENCE cf_s TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT nextval('cf_s'), currval('cf_s')",
            "INSERT INTO cf_w (a) VALUES (1)",
            "SELECT * FROM cf_w",
            "SELECT setval('cf_s', 10)",
            "RESET ROLE",
            "SELECT has_sequence_privilege('cf_reader', 'cf_s', 'USAGE'),"
            " has_sequence_privilege('cf_reader', 'cf_s', 'UPDATE')",
        ],
    )


def test_function_privileges(both):
    same_outcomes(
        *both,
        [
            "CREATE FUNCTION cf_f(x int) RETURNS int LANGUAGE sql AS $$ SELECT x + 1 $$",
            "CREATE ROLE cf_reader LOGIN",
            "SET ROLE cf_reader",
            "SELECT cf_f(1)",
            "RESET ROLE",
            "REVOKE EXECUTE ON FUNCTION cf_f(int) FROM PUBLIC",
            "SET ROLE cf_reader",
            "SELECT cf_f(1)",
            "RESET ROLE",
            "SELECT has_function_privilege('cf_reader', 'cf_f(int)', 'EXECUTE')",
            "GRANT EXECUTE ON FUNCTION cf_f(int) TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT cf_f(1)",
            "RESET ROLE",
            "SELECT replace(array_to_string(proacl, ','), current_user, 'me') FROM pg_proc"
            " WHERE proname = 'cf_f'",
        ],
    )


def test_schema_usage_and_all_in_schema(both):
    same_outcomes(
        *both,
        [
            "CREATE SCHEMA cf_sch",
            "CREATE TABLE cf_sch.st (a int)",
            "INSERT INTO cf_sch.st VALUES (1)",
            "CREATE SEQUENCE cf_sch.sq",
            "CREATE ROLE cf_reader LOGIN",
            "GRANT SELECT ON ALL TABLES IN SCHEMA cf_sch TO cf_reader",
            "GRANT USAGE ON ALL SEQUENCES IN SCHEMA cf_sch TO cf_reader",
            "SET ROLE cf_reader",
            "SELECT * FROM cf_sch.st",
            "SELECT nextval('cf_sch.sq')",
            "RESET ROLE",
            "GRANT USAGE ON SCHEMA cf_sch TO cf_reader",
            "SELECT has_schema_privilege('cf_reader', 'cf_sch', 'USAGE'),"
            " has_schema_privilege('cf_reader', 'cf_sch', 'CREATE')",
            "SET ROLE cf_reader",
            "SELECT * FROM cf_sch.st",
            "SELECT nextval('cf_sch.sq')",
            "CREATE TABLE cf_sch.mine (a int)",
            "RESET ROLE",
            "GRANT ALL ON SCHEMA cf_sch TO cf_reader",
            "SET ROLE cf_reader",
            "CREATE TABLE cf_sch.mine (a int)",
            "SELECT tableowner FROM pg_tables WHERE tablename = 'mine'",
            "DROP TABLE cf_sch.mine",
            "DROP SCHEMA cf_sch",
            "RESET ROLE",
            "REVOKE ALL ON SCHEMA cf_sch FROM cf_reader",
            "REVOKE ALL ON ALL TABLES IN SCHEMA cf_sch FROM cf_reader",
            "REVOKE ALL ON ALL SEQUENCES IN SCHEMA cf_sch FROM cf_reader",
            "DROP ROLE cf_reader",
        ],
    )


def test_drop_owned(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_writer LOGIN",
            "GRANT CREATE ON SCHEMA public TO cf_writer",
            "GRANT SELECT ON rt TO cf_writer",
            "SET ROLE cf_writer",
            "CREATE TABLE cf_w (a int)",
            "CREATE VIEW cf_wv AS SELECT a FROM cf_w",
            "CREATE SEQUENCE cf_s",
            "RESET ROLE",
            "CREATE VIEW rv AS SELECT a FROM cf_w",
            "DROP OWNED BY cf_writer",
            "DROP VIEW rv",
            "DROP ROLE cf_writer",
            "DROP OWNED BY cf_writer",
            "SELECT count(*) FROM pg_class WHERE relname IN ('cf_w', 'cf_wv', 'cf_s')",
            "SELECT has_table_privilege('cf_writer', 'rt', 'SELECT')",
            "DROP ROLE cf_writer",
        ],
    )


def test_session_authorization(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_group",
            "CREATE ROLE cf_reader LOGIN IN ROLE cf_group",
            "CREATE ROLE cf_writer LOGIN",
            "SET SESSION AUTHORIZATION cf_reader",
            "SELECT session_user, current_user",
            "SET ROLE cf_group",
            "SELECT session_user, current_user",
            "SHOW role",
            "SET ROLE cf_writer",
            "SET ROLE NONE",
            "SELECT current_user",
            "SET SESSION AUTHORIZATION cf_writer",
            "SELECT session_user, current_user",
            "RESET SESSION AUTHORIZATION",
            "SET ROLE cf_nobody",
            "BEGIN",
            "SET LOCAL ROLE cf_reader",
            "SELECT current_user",
            "COMMIT",
            "SHOW role",
        ],
    )


def test_rollback_puts_roles_and_privileges_back(both):
    same_outcomes(
        *both,
        [
            "CREATE ROLE cf_reader",
            "BEGIN",
            "CREATE ROLE cf_tx",
            "GRANT SELECT ON rt TO cf_reader",
            "GRANT cf_tx TO cf_reader",
            "ROLLBACK",
            "SELECT count(*) FROM pg_roles WHERE rolname = 'cf_tx'",
            "SELECT has_table_privilege('cf_reader', 'rt', 'SELECT')",
            MEMBERS,
            "BEGIN",
            "GRANT SELECT ON rt TO cf_reader",
            "COMMIT",
            "SELECT has_table_privilege('cf_reader', 'rt', 'SELECT')",
        ],
    )


def test_a_rolled_back_drop_keeps_its_owner(tmp_path):
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in (
        "CREATE ROLE cf_writer LOGIN",
        "CREATE TABLE t (a int)",
        "ALTER TABLE t OWNER TO cf_writer",
        "CREATE TABLE b (a int)",
        "SET ROLE cf_writer",  # no CREATE on public: putting t back is no creation
        "BEGIN",
        "DROP TABLE t",
        "ROLLBACK",
        "RESET ROLE",
        "BEGIN",
        "DROP TABLE b",
        "ROLLBACK",
    ):
        conn.execute(sql)
    owners = "SELECT tablename, tableowner FROM pg_tables ORDER BY 1"
    assert conn.execute(owners).fetchall() == [("b", "changeflow"), ("t", "cf_writer")]
    conn.close()


def test_a_sink_needs_select_on_what_it_writes_out(tmp_path):
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in (
        "CREATE TABLE t (k int PRIMARY KEY, v text)",
        "CREATE ROLE cf_writer",
        "GRANT CREATE ON SCHEMA public TO cf_writer",
        "SET ROLE cf_writer",
    ):
        conn.execute(sql)
    sink = f"CREATE SINK out FROM t INTO 'sqlite:{tmp_path / 'o.sqlite'}' KEY (k)"
    with pytest.raises(changeflow.DatabaseError) as e:
        conn.execute(sink)
    assert e.value.sqlstate == "42501"
    conn.execute("RESET ROLE")
    conn.execute("GRANT SELECT ON t TO cf_writer")
    conn.execute("SET ROLE cf_writer")
    conn.execute(sink)
    assert conn.execute("SHOW SINKS").fetchall()
    conn.close()


def test_a_view_may_not_read_the_role(tmp_path):
    """A view keeps its plan, so the name of the role reading it cannot be in it: refused
    (PostgreSQL reads it anew for each reader)."""
    conn = changeflow.connect(tmp_path / "home", host_seconds=0)
    conn.autocommit = True
    for sql in (
        "CREATE VIEW v AS SELECT current_user AS u",
        "CREATE MATERIALIZED VIEW m AS SELECT session_user AS u",
        "CREATE VIEW w AS SELECT 1 WHERE user = 'x'",
    ):
        with pytest.raises(changeflow.DatabaseError) as e:
            conn.execute(sql)
        assert e.value.sqlstate == "0A000"
    conn.execute('CREATE TABLE t ("user" text)')
    conn.execute("""CREATE VIEW ok AS SELECT "user" FROM t""")  # a column of that name
    conn.close()


def test_roles_last_across_restarts(tmp_path):
    home = tmp_path / "home"
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        conn.execute("CREATE TABLE t (a int)")
        conn.execute("CREATE ROLE cf_reader LOGIN")
        conn.execute("GRANT SELECT ON t TO cf_reader")
    with changeflow.connect(home, host_seconds=0) as conn:
        conn.autocommit = True
        got = conn.execute("SELECT has_table_privilege('cf_reader', 't', 'SELECT')").fetchall()
        assert got == [(True,)]
        conn.execute("SET ROLE cf_reader")
        assert conn.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
        with pytest.raises(changeflow.DatabaseError) as e:
            conn.execute("INSERT INTO t VALUES (1)")
        assert e.value.sqlstate == "42501"
        assert str(e.value).startswith("permission denied for table t")
        conn.execute("RESET ROLE")
        conn.execute("CREATE TABLE hidden (a int)")
        conn.execute("SET ROLE cf_reader")
        for sql in ("SUBSCRIBE hidden", "SUBSCRIBE (SELECT a FROM hidden)"):
            with pytest.raises(changeflow.DatabaseError) as e:
                conn.subscribe(sql)
            assert e.value.sqlstate == "42501"


def test_default_privileges(both):
    ours, pg = both
    try:
        same_outcomes(
            ours,
            pg,
            [
                "CREATE ROLE cf_writer LOGIN",
                "CREATE ROLE cf_reader LOGIN",
                "GRANT CREATE ON SCHEMA public TO cf_writer",
                "ALTER DEFAULT PRIVILEGES FOR ROLE cf_writer GRANT SELECT ON TABLES TO cf_reader",
                "ALTER DEFAULT PRIVILEGES FOR ROLE cf_writer IN SCHEMA public"
                " GRANT INSERT ON TABLES TO cf_reader",
                "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ON SCHEMAS TO cf_reader",
                "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE ON SCHEMAS TO cf_reader",
                "SELECT pg_get_userbyid(defaclrole), defaclnamespace <> 0, defaclobjtype,"
                " array_to_string(defaclacl, ',') FROM pg_default_acl ORDER BY 2, 3",
                "SET ROLE cf_writer",
                "CREATE TABLE cf_w (a int)",
                "INSERT INTO cf_w VALUES (1)",
                "RESET ROLE",
                "SET ROLE cf_reader",
                "SELECT * FROM cf_w",
                "INSERT INTO cf_w VALUES (2)",
                "UPDATE cf_w SET a = 3",
                "RESET ROLE",
                "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 'cf_w'",
                GRANTS,
                "DROP ROLE cf_reader",
                "ALTER DEFAULT PRIVILEGES FOR ROLE cf_writer REVOKE SELECT ON TABLES"
                " FROM cf_reader",
                "ALTER DEFAULT PRIVILEGES FOR ROLE cf_writer IN SCHEMA public"
                " REVOKE INSERT ON TABLES FROM cf_reader",
                "SELECT count(*) FROM pg_default_acl",
            ],
        )
    finally:
        for conn in (ours, pg):
            conn.execute("DROP TABLE IF EXISTS cf_w")
            conn.execute("REVOKE CREATE ON SCHEMA public FROM cf_writer")
