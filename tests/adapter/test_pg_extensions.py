"""Extensions as a PostgreSQL 15 database with ``uuid-ossp`` installed has them: ``CREATE
EXTENSION [IF NOT EXISTS]`` of plpgsql and uuid-ossp (42710, or a notice), an unknown one
refused, ``DROP EXTENSION IF EXISTS`` of a missing one; uuid-ossp's functions
(``uuid_generate_v3/v4/v5``, ``uuid_nil``, ``uuid_ns_*``) as DEFAULTs and in queries;
``pg_sleep``. Compared with PostgreSQL statement by statement."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, same_errors, same_outcomes  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = (
    'CREATE EXTENSION IF NOT EXISTS "uuid-ossp"',
    "CREATE TABLE ext_t (id uuid DEFAULT uuid_generate_v4() PRIMARY KEY, name text)",
)
STATEMENTS = [
    "CREATE EXTENSION IF NOT EXISTS plpgsql",
    'CREATE EXTENSION IF NOT EXISTS "uuid-ossp" WITH SCHEMA public',
    "DROP EXTENSION IF EXISTS nope, other",
    "INSERT INTO ext_t (name) VALUES ('a'), ('b'), ('c')",
    "SELECT count(DISTINCT id), count(*) FILTER (WHERE id::text ~ '^.{14}4') FROM ext_t",
    "SELECT uuid_nil(), uuid_ns_dns(), uuid_ns_url(), uuid_ns_oid(), uuid_ns_x500()",
    "SELECT uuid_generate_v5(uuid_ns_url(), 'http://x'), uuid_generate_v3(uuid_ns_dns(), 'a.b')",
    "SELECT name, uuid_generate_v5(uuid_ns_dns(), name) FROM ext_t ORDER BY name",
    "SELECT pg_sleep(0.01), pg_sleep(NULL), pg_sleep('0'), pg_typeof(pg_sleep(0))",
    "SELECT extname, extversion FROM pg_extension WHERE extname IN ('plpgsql', 'uuid-ossp') "
    "ORDER BY 1",
]
REFUSED = [
    "CREATE EXTENSION plpgsql",
    'CREATE EXTENSION "uuid-ossp"',
    "CREATE EXTENSION no_such_extension",
    "DROP EXTENSION no_such_extension",
    "SELECT pg_sleep('x')",
    "SELECT pg_sleep(true)",
]


def test_extensions_as_postgres(tmp_path: Path, postgres_url: str) -> None:
    with beside_postgres(tmp_path / "home", postgres_url, "ext_t", *SETUP) as (ours, pg):
        try:
            same_outcomes(ours, pg, STATEMENTS)
            same_errors(ours, pg, REFUSED)
        finally:  # (the server is shared: its other tests list its functions)
            pg.execute("DROP TABLE ext_t")
            pg.execute('DROP EXTENSION "uuid-ossp"')
            pg.execute("CREATE TABLE ext_t ()")  # (for the fixture's own DROP)
