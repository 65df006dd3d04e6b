"""Views stored before a column's type modifier held char(n)'s width (their ``pads`` option,
their plans pickled with ``Column.pad``) still read as char(n) after a restart: values shown
padded, ``character(n)`` in the catalogs, typmod n + 4; compared with PostgreSQL 15."""

from __future__ import annotations

import base64
import copyreg
import dataclasses
import io
import pickle
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import changeflow
from changeflow.compute.types import Column

sys.path.insert(0, str(Path(__file__).parent))
from sqlhelp import beside_postgres, outcome  # noqa: E402

pytestmark = pytest.mark.postgres

SETUP = [
    "CREATE TABLE chs (id int PRIMARY KEY, a char(4), v varchar(5))",
    "INSERT INTO chs VALUES (1, 'ab', 'ab'), (2, NULL, 'x '), (3, 'abcd', NULL)",
    "CREATE VIEW chs_v AS SELECT id, a, a::char(2) AS b, v FROM chs",
    "CREATE MATERIALIZED VIEW chs_m AS SELECT id, a, a::char(6) AS c FROM chs",
]
QUERIES = [
    "SELECT * FROM chs_v ORDER BY id",
    "SELECT * FROM chs_m ORDER BY id",
    "SELECT id, b || '|', b = 'ab', octet_length(b) FROM chs_v ORDER BY id",
    "SELECT attrelid::regclass::text, attname, atttypmod, format_type(atttypid, atttypmod)"
    " FROM pg_attribute WHERE attrelid IN ('chs_v'::regclass, 'chs_m'::regclass)"
    " AND attnum > 0 ORDER BY 1, attnum",
]


class _OldPickler(pickle.Pickler):
    """Pickles a plan's columns as they were: ``pad`` stored, no typmod for a cast's."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Column:
            state = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
            del state["text_type"]
            state["pad"] = obj.pad
            if obj.pad is not None:
                state["typmod"] = -1
            return copyreg._reconstructor, (Column, object, None), state
        return NotImplemented


def _old_options(options: dict[str, Any]) -> dict[str, Any]:
    plan = pickle.loads(base64.b64decode(options["plan"]))
    out = io.BytesIO()
    _OldPickler(out).dump(plan)
    mods = list(zip(options["typmods"], options["text_types"], strict=True))
    old = {k: v for k, v in options.items() if k != "text_types"}
    return old | {
        "plan": base64.b64encode(out.getvalue()).decode(),
        "pads": [m - 4 if kind == "bpchar" else None for m, kind in mods],
        "typmods": [m if kind != "bpchar" else -1 for m, kind in mods],
    }


def test_an_old_view_still_reads_as_char(tmp_path: Path, postgres_url: str) -> None:
    home = tmp_path / "home"
    with beside_postgres(home, postgres_url, "chs CASCADE", *SETUP) as (ours, pg):
        expected = [outcome(pg, sql) for sql in QUERIES]
        assert [outcome(ours, sql) for sql in QUERIES] == expected

        def rewrite(state: Any) -> tuple[Any, None]:
            for name in ("chs_v", "chs_m"):
                item = state.by_name(name)
                state = state.with_item(replace(item, options=_old_options(item.options)))
            return state, None

        ours.env.catalog.change(rewrite)
        ours.close()
        again = changeflow.connect(home, host_seconds=0)
        again.autocommit = True
        try:
            item = again.env.catalog.load().by_name("chs_v")
            assert "pads" in item.options and "text_types" not in item.options
            assert [outcome(again, sql) for sql in QUERIES] == expected
            for conn in (again, pg):
                conn.execute("INSERT INTO chs VALUES (4, 'q', 'q')")
            kept = "SELECT * FROM chs_m ORDER BY id"  # PostgreSQL's until refreshed: the query
            query = "SELECT id, a, a::char(6) AS c FROM chs ORDER BY id"
            assert outcome(again, kept) == outcome(pg, query)
        finally:
            again.close()
