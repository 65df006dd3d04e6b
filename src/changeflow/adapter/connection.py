"""The Python way in: a PEP 249 (DB-API 2.0) connection to a home, plus Arrow, pandas and
Spark results and live subscriptions.

``changeflow.connect(home=...)`` opens the home in this process (the embedded default: its
views, indexes and sinks are hosted here while the connection is open). Parameters are bound as
``%s`` (or ``%(name)s``) and sent as SQL literals. Connections start in autocommit mode, as
Materialize recommends for its clients: every statement is its own transaction unless ``BEGIN``
opens one; set ``autocommit = False`` for DB-API transactions (``commit()`` / ``rollback()``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeflow.adapter.batches import one_transaction
from changeflow.adapter.environment import Environment
from changeflow.adapter.result import Result, severity
from changeflow.adapter.session import Session
from changeflow.adapter.sql.statements import parse, split
from changeflow.adapter.subscribe import Subscribe
from changeflow.compute.types import NUMERIC
from changeflow.config import Config
from changeflow.errors import ChangeflowError, InvalidInput

if TYPE_CHECKING:
    from changeflow.adapter.remote import RemoteConnection

apilevel = "2.0"
threadsafety = 1
paramstyle = "format"


class Error(ChangeflowError):
    """PEP 249's base error (a changeflow error too); ``sqlstate`` and the underlying error
    are kept."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error), sqlstate=sqlstate(error))
        self.sqlstate = sqlstate(error)
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.error,))


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class ProgrammingError(DatabaseError):
    pass


class DataError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


class InternalError(DatabaseError):
    """A bug (XX000): its one-line message here, the original exception as the cause."""


def sqlstate(error: BaseException) -> str:
    """The PostgreSQL SQLSTATE of an error (XX000 when it has none)."""
    fields = getattr(error, "fields", {}) or {}
    return fields.get("sqlstate") or getattr(error, "sqlstate", None) or "XX000"


def _wrapped(error: BaseException) -> Error:
    code = sqlstate(error)
    kind = {
        "0A": NotSupportedError,
        "22": DataError,
        "23": IntegrityError,
        "40": OperationalError,
        "57": OperationalError,
        "58": OperationalError,
    }.get(code[:2], ProgrammingError)
    return kind(error)


def connect(
    home: str | Path | None = None,
    *,
    url: str | None = None,
    config: Config | None = None,
    host_seconds: float = 1.0,
) -> Connection | RemoteConnection:
    """A connection to the home at ``home`` (default ``./changeflow-data``), hosted in this
    process; or, with ``url`` (``postgresql://host:6875/…``), to a ``changeflow serve``."""
    if url is not None:
        if home is not None or config is not None:
            raise InterfaceError(InvalidInput("give a home or a server's url, not both"))
        from changeflow.adapter.remote import RemoteConnection

        return RemoteConnection(url)
    if config is None:
        config = Config.load(home=str(home) if home is not None else None)
    return Connection(Environment(config, host_seconds=host_seconds))


class Connection:
    """A PEP 249 connection (see the module docstring)."""

    def __init__(self, env: Environment, owns: bool = True) -> None:
        self.env, self.owns = env, owns
        self.session = Session(env)
        self.autocommit = True
        self.closed = False
        self.notices: list[str] = []  # as psycopg2 keeps them: 'NOTICE:  message\n'

    def cursor(self) -> Cursor:
        self._check()
        return Cursor(self)

    def execute(self, operation: str, params: Any = None) -> Cursor:
        """A new cursor with ``operation`` run on it (a shortcut, as sqlite3 has)."""
        return self.cursor().execute(operation, params)

    def sql(self, query: str, params: Any = None) -> Result:
        """The result of the last statement of ``query``, with ``to_arrow``, ``to_pandas``
        and ``to_spark``."""
        self._check()
        results = self._run(bind(query, params))
        return QueryResult.of(results[-1]) if results else QueryResult("")

    def subscribe(self, query: str, params: Any = None) -> Subscribe:
        """The rows of ``SUBSCRIBE`` to ``query`` (a query or an item name, or a whole
        SUBSCRIBE statement) as they happen: iterate, or ``poll(timeout)``."""
        self._check()
        text = bind(query, params).strip().rstrip(";")
        if not re.match(r"SUBSCRIBE\b", text, re.I):
            text = (
                f"SUBSCRIBE ({text})"
                if re.match(r"\s*(SELECT|WITH|VALUES)\b", text, re.I)
                else f"SUBSCRIBE {text}"
            )
        try:
            return self.session.subscribe(parse(text))
        except ChangeflowError as e:
            raise _wrapped(e) from None

    def commit(self) -> None:
        self._check()
        if self.session.txn is not None:
            self._run("COMMIT")

    def rollback(self) -> None:
        self._check()
        if self.session.txn is not None:
            self._run("ROLLBACK")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.session.close()
            if self.owns:
                self.env.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check(self) -> None:
        if self.closed:
            raise InterfaceError(InvalidInput("the connection is closed"))

    def _run(self, script: str) -> list[Result]:
        out = []
        block = False
        try:
            texts = split(script)
            block = self.autocommit and one_transaction(self.session, texts)  # all or none
            if block:
                self.session.run(parse("BEGIN"))
            for text in texts:
                stmt = parse(text)
                if (
                    not self.autocommit
                    and self.session.txn is None
                    and stmt.kind not in ("begin", "commit", "rollback")
                ):
                    self.session.run(parse("BEGIN"))
                out.append(self.session.run(stmt))
                self.notices += [notice_text(*n) for n in out[-1].notices]
            if block:
                block = False
                self.session.run(parse("COMMIT"))
        except ChangeflowError as e:
            self.session.fail()  # a statement that did not parse fails the transaction too
            if block:
                self.session.run(parse("ROLLBACK"))
            raise _wrapped(e) from None
        except Exception as e:  # a bug: one line, as the server answers it (XX000)
            self.session.fail()
            message = f"internal error: {type(e).__name__}: {e}"
            raise InternalError(ChangeflowError(message, sqlstate="XX000")) from e
        return out


class QueryResult(Result):
    """A :class:`Result` that converts to pandas and Spark too."""

    @classmethod
    def of(cls, result: Result) -> QueryResult:
        return cls(result.status, result.columns, result.rows)

    def to_pandas(self) -> Any:
        return self.to_arrow().to_pandas()

    def to_spark(self, spark: Any = None) -> Any:
        from changeflow.spark import get_spark

        spark = spark or get_spark()
        return spark.createDataFrame(self.to_arrow())


class Cursor:
    """A PEP 249 cursor. ``SUBSCRIBE`` on a cursor streams: ``fetchone`` and ``fetchmany``
    wait for the next rows; ``fetchall`` returns once the subscription ends (UP TO)."""

    arraysize = 1

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self.statusmessage: str | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._subscribe: Subscribe | None = None

    def execute(self, operation: str, params: Any = None) -> Cursor:
        self.connection._check()
        text = bind(operation, params)
        self._rows, self._subscribe, self.description = [], None, None
        try:
            statements = split(text)
        except ChangeflowError as e:  # a bad literal or an unterminated string or comment
            raise _wrapped(e) from None
        if len(statements) == 1 and re.match(r"SUBSCRIBE\b", statements[0], re.I):
            self._subscribe = self.connection.subscribe(statements[0])
            self.description = _describe(self._subscribe.columns)
            return self
        results = self.connection._run(text)
        if results:
            last = results[-1]
            self._rows = _unsigned_zeros(last)
            self.statusmessage = last.status
            query = last.columns or last.rows  # a SELECT of no columns has rows
            self.description = _describe(last.columns) if query else None
            self.rowcount = _rowcount(last)
        return self

    def executemany(self, operation: str, seq_of_params: Sequence[Any]) -> Cursor:
        total = 0
        for params in seq_of_params:
            self.execute(operation, params)
            total += max(self.rowcount, 0)
        self.rowcount = total
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        size = size or self.arraysize
        while self._subscribe is not None and len(self._rows) < size and not self._subscribe.done:
            self._rows += self._subscribe.poll(timeout=1.0)
        out, self._rows = self._rows[:size], self._rows[size:]
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self._subscribe is not None:
            self._rows += list(self._subscribe)
        out, self._rows = self._rows, []
        return out

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def close(self) -> None:
        self._rows, self._subscribe = [], None

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        pass


def _describe(columns: Any) -> list[tuple[Any, ...]]:
    return [(c.name, c.type.name, None, None, None, None, c.nullable) for c in columns]


def _unsigned_zeros(result: Result) -> list[tuple[Any, ...]]:
    """``result``'s rows, a numeric zero without its sign (PostgreSQL's has none: -0.5 * 0 is
    0.0 there, where Python's ``Decimal`` keeps the sign)."""
    numeric = [i for i, c in enumerate(result.columns) if c.type is NUMERIC]
    if not numeric:
        return list(result.rows)

    def fixed(row: tuple[Any, ...]) -> tuple[Any, ...]:
        if not any(isinstance(row[i], Decimal) and row[i].is_zero() for i in numeric):
            return row
        return tuple(abs(v) if isinstance(v, Decimal) and v.is_zero() else v for v in row)

    return [fixed(row) for row in result.rows]


def notice_text(code: str, message: str, detail: str) -> str:
    """A notice as psycopg2 keeps it: ``NOTICE:  message`` (``WARNING:`` for a warning's
    SQLSTATE), then ``DETAIL:  …`` if any."""
    return f"{severity(code)}:  {message}\n" + (f"DETAIL:  {detail}\n" if detail else "")


def _rowcount(result: Result) -> int:
    parts = result.status.split()
    return int(parts[-1]) if parts and parts[-1].isdigit() else -1


# -- parameters ------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|%\((\w+)\)s|%s|%%")


def bind(operation: str, params: Any) -> str:
    """``operation`` with its ``%s`` / ``%(name)s`` placeholders replaced by the parameters as
    SQL literals (placeholders inside quotes are left alone; ``%%`` is ``%``)."""
    if params is None:
        return operation
    positional = iter(params) if not isinstance(params, Mapping) else None
    used = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal used
        token = m.group(0)
        if token[0] in "'\"":
            return token
        if token == "%%":
            return "%"
        if m.group(1) is not None:
            if not isinstance(params, Mapping) or m.group(1) not in params:
                raise ProgrammingError(InvalidInput(f"no parameter named {m.group(1)!r}"))
            return literal(params[m.group(1)])
        if positional is None:
            raise ProgrammingError(InvalidInput("%s placeholders need a sequence of parameters"))
        try:
            value = next(positional)
        except StopIteration:
            raise ProgrammingError(
                InvalidInput(f"the statement has more placeholders than the {used} parameters")
            ) from None
        used += 1
        return literal(value)

    text = _PLACEHOLDER.sub(replace, operation)
    if positional is not None and next(positional, _END) is not _END:
        raise ProgrammingError(InvalidInput("more parameters than placeholders were given"))
    return text


_END = object()


def literal(value: Any) -> str:
    """``value`` as a SQL literal of its type."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"'{value!r}'::double precision".replace("inf", "Infinity").replace("nan", "NaN")
        return f"{value!r}::double precision"
    if isinstance(value, Decimal):
        return f"{value}::numeric"
    if isinstance(value, dt.datetime):
        kind = "timestamptz" if value.tzinfo is not None else "timestamp"
        return f"'{value.isoformat(sep=' ')}'::{kind}"
    if isinstance(value, dt.date):
        return f"'{value.isoformat()}'::date"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"'\\x{bytes(value).hex()}'::bytea"
    if isinstance(value, uuid.UUID):
        return f"'{value}'::uuid"
    raise ProgrammingError(
        InvalidInput(f"cannot bind a parameter of type {type(value).__name__}: {value!r}")
    )
