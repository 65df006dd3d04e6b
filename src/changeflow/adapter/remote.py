"""A connection to a ``changeflow serve`` server: the same interface as the embedded one.

``changeflow.connect(url="postgresql://host:6875/…")`` speaks the PostgreSQL wire protocol
through psycopg, whose connections and cursors are PEP 249 already; this adds ``sql()`` (a
result with ``to_arrow``, ``to_pandas``, ``to_spark``) and ``subscribe()`` (``DECLARE … CURSOR
FOR SUBSCRIBE`` and ``FETCH`` on a connection of its own), as the embedded connection has.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

from changeflow.adapter.connection import QueryResult, notice_text
from changeflow.compute import types as T

MIN_WAIT = 0.2  # seconds a FETCH waits at least (to tell an ended subscription apart)
OIDS = {
    16: T.BOOL,
    21: T.INT2,
    23: T.INT4,
    20: T.INT8,
    26: T.INT8,  # oid (catalog queries)
    1700: T.NUMERIC,
    700: T.FLOAT4,
    701: T.FLOAT8,
    25: T.TEXT,
    1043: T.TEXT,
    1082: T.DATE,
    1114: T.TIMESTAMP,
    1184: T.TIMESTAMPTZ,
}


def _columns(description: Any) -> T.Schema:
    return tuple(T.Column(d.name, OIDS.get(d.type_code, T.TEXT)) for d in description or ())


class RemoteConnection:
    """A psycopg connection to a server, with ``sql`` and ``subscribe``; other attributes
    (``cursor``, ``commit``, ``rollback``, ``autocommit``…) are psycopg's. The server's
    NOTICEs are kept in ``notices`` as the embedded connection keeps them."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.notices: list[str] = []
        self.pg = psycopg.connect(url, autocommit=True)
        self.pg.add_notice_handler(self._heard)

    def _heard(self, d: Any) -> None:
        self.notices.append(notice_text(d.sqlstate, d.message_primary, d.message_detail or ""))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pg, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("url", "pg", "notices"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.pg, name, value)

    def __enter__(self) -> RemoteConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def execute(self, operation: str, params: Any = None) -> Any:
        return self.pg.execute(operation, params)

    def sql(self, query: str, params: Any = None) -> QueryResult:
        cur = self.pg.execute(query, params)
        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        return QueryResult(cur.statusmessage or "", _columns(cur.description), rows)

    def subscribe(self, query: str, params: Any = None) -> RemoteSubscribe:
        text = query.strip().rstrip(";")
        if not re.match(r"SUBSCRIBE\b", text, re.I):
            query_like = re.match(r"\s*(SELECT|WITH|VALUES)\b", text, re.I)
            text = f"SUBSCRIBE ({text})" if query_like else f"SUBSCRIBE {text}"
        return RemoteSubscribe(self.url, text, params)

    def close(self) -> None:
        self.pg.close()


class RemoteSubscribe:
    """A SUBSCRIBE through a server cursor: ``poll(timeout)``, iteration, ``columns``, ``done``."""

    def __init__(self, url: str, statement: str, params: Any) -> None:
        import psycopg

        self.pg = psycopg.connect(url, autocommit=True)
        self.pg.execute("BEGIN")
        self.pg.execute(f"DECLARE changeflow_subscribe CURSOR FOR {statement}", params)
        self.done = False
        self.columns: T.Schema = ()

    def poll(self, timeout: float = 0.0) -> list[tuple[Any, ...]]:
        if self.done:
            return []
        wait = max(timeout, MIN_WAIT)
        started = time.monotonic()
        cur = self.pg.execute(f"FETCH ALL changeflow_subscribe WITH (timeout = '{wait}s')")
        self.columns = _columns(cur.description) or self.columns
        rows = [tuple(r) for r in cur.fetchall()]
        # The server answers a FETCH on an ended subscription at once and with nothing; one
        # that is still running waits for rows up to the timeout.
        if not rows and time.monotonic() - started < wait / 2:
            self.done = True
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while not self.done:
            yield from self.poll(1.0)

    def close(self) -> None:
        self.done = True
        self.pg.close()
