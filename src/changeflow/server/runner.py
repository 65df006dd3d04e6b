"""Running one statement for a client: the session's statements, and those answered here
(cursors over queries and subscriptions, COPY in and out, DISCARD, catalog functions)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from changeflow.adapter import cursors, temp_tables
from changeflow.adapter.advisory_locks import CANCEL
from changeflow.adapter.result import severity
from changeflow.adapter.settings import (
    ROLE_SETTINGS,
    reported_changes,
    reported_values,
    reset_all,
)
from changeflow.adapter.sizes import shard_sizes
from changeflow.adapter.sql.session_values import current_role, session_user
from changeflow.adapter.sql.statements import Statement, options, parse
from changeflow.adapter.subscribe import Subscribe
from changeflow.adapter.system import answer, mentions_catalog
from changeflow.compute.types import INT4, TEXT, Column, Schema
from changeflow.errors import ChangeflowError, PlanError
from changeflow.server import commands as C
from changeflow.server import pgwire as W
from changeflow.server import prepare as P
from changeflow.server.copy import copy_header, copy_line, copy_trailer
from changeflow.server.params import placeholders, substitute
from changeflow.server.values import TYPE_NAMES

if TYPE_CHECKING:
    from changeflow.adapter.session import Session
    from changeflow.server.server import Server


FLUSH = object()  # in a row stream: send what is buffered now
POLL = 0.25


class Interrupted(ChangeflowError):
    """A statement cancelled by the client, or by the server shutting down."""


class Shutdown(Exception):
    """The server is stopping; the connection ends after its current statement."""


@dataclass
class Outcome:
    """What a statement produced: a tag, and for queries columns and rows (or a stream that
    writes its own messages and returns the tag)."""

    tag: str = ""
    columns: Schema | None = None
    rows: Iterator[Any] = field(default_factory=lambda: iter(()))
    counted: str | None = None  # "SELECT" or "FETCH": the tag is this and the rows sent
    stream: Callable[[], str] | None = None


@dataclass
class Cursor:
    """A cursor from DECLARE: a query's rows, or a subscription's as they come."""

    columns: Schema
    query: cursors.QueryCursor | None = None
    subscribe: Subscribe | None = None
    buffer: list[tuple[Any, ...]] = field(default_factory=list)
    in_transaction: bool = False


class Runner:
    """The statement-running part of a client connection (:class:`ClientConnection` gives
    the socket, the session and the interrupt checks)."""

    session: Session | None
    wire: W.Wire
    server: Server
    params: dict[str, str]
    cursors: dict[str, Cursor]
    prepared: dict[str, Any]
    cancel: threading.Event
    busy: bool

    def check_interrupt(self) -> None:
        raise NotImplementedError

    def wait_readable(self) -> None:
        raise NotImplementedError

    # -- running one statement ---------------------------------------------------------------

    def run(self, text: str, stmt: Statement | None = None) -> Outcome:
        """Run one statement; its outcome (rows may still be streaming). ``stmt``: ``text``
        as parsed when it was described (the session kept its plan for that tree)."""
        assert self.session is not None
        self.cancel.clear()
        CANCEL.set(self.cancel)  # a wait for an advisory lock ends on a cancel request
        self.busy = True
        text = C.strip(text)
        special = self._special(text, describe=False)
        if special is not None:
            return special
        stmt = parse(text) if stmt is None else stmt
        if stmt.kind == "subscribe":
            sub = self.session.subscribe(stmt)
            return Outcome(columns=sub.columns, rows=self._follow(sub), counted="SUBSCRIBE")
        if stmt.kind == "begin" and self.session.in_transaction:
            self.wire.send(
                *W.notice("25001", "there is already a transaction in progress", "WARNING")
            )
        if stmt.kind in ("commit", "rollback") and self.session.txn is None:
            self.wire.send(*W.notice("25P01", "there is no transaction in progress", "WARNING"))
        reported = reported_values(self.session.settings)
        try:
            result = self.session.run(stmt)
        finally:
            self._end_cursors()
        for code, message, detail in result.notices:
            self.wire.send(*W.notice(code, message, severity(code), detail=detail))
        for name, value in reported_changes(self.session.settings, reported).items():
            self.wire.send(*W.parameter_status(name, value))  # as PostgreSQL reports them
        made = stmt.kind == "create_table"  # CREATE TABLE … AS: tagged SELECT n, no rows
        if not made and (result.columns or result.status.startswith("SELECT")):
            counted = "SELECT" if result.status.startswith("SELECT") else None
            return Outcome(result.status, result.columns, iter(result.rows), counted)
        return Outcome(result.status)

    def _failed_check(self) -> None:
        txn = self.session.txn if self.session else None
        if txn is not None and txn.failed:
            raise PlanError(
                "current transaction is aborted, commands ignored until end of transaction block",
                sqlstate="25P02",
            )

    def _end_cursors(self) -> None:
        """Cursors declared in a transaction close when it ends (WITH HOLD ones stay)."""
        if self.session is not None and not self.session.in_transaction:
            for key in [k for k, c in self.cursors.items() if c.in_transaction]:
                del self.cursors[key]

    def _special(self, text: str, describe: bool) -> Outcome | None:
        """A statement answered here rather than by the session (None if it is not one).
        With ``describe`` only its columns are found: nothing runs."""
        if m := cursors.DECLARE.fullmatch(text):
            if not describe:
                self._failed_check()
                self.declare(C.cursor_name(m["name"]), m)
            return Outcome("DECLARE CURSOR")
        if m := cursors.MOTION.fullmatch(text):
            cursor = self._cursor(m["name"])
            move = m["verb"].upper() == "MOVE"
            if describe:
                return Outcome("MOVE") if move else Outcome(columns=cursor.columns)
            self._failed_check()
            if cursor.query is not None:
                result = cursors.moved(cursor.query, m)
                if move:
                    return Outcome(result.status)
                return Outcome(columns=cursor.columns, rows=iter(result.rows), counted="FETCH")
            where = cursors.motion(m)
            if move or where.kind != "forward":
                raise PlanError(
                    "a cursor of a SUBSCRIBE only goes forward: FETCH [FORWARD] [n | ALL]",
                    sqlstate="55000",
                )
            opts = options(m["with"])
            timeout = C.timeout_seconds(opts["timeout"]) if "timeout" in opts else None
            rows = self.fetch(cursor, where.count, timeout)
            return Outcome(columns=cursor.columns, rows=iter(rows), counted="FETCH")
        if m := cursors.CLOSE.fullmatch(text):
            if m["name"].upper() == "ALL":
                if not describe:
                    self.cursors.clear()
            elif not describe:
                key = C.cursor_name(m["name"])
                if key not in self.cursors:
                    raise PlanError(f'cursor "{key}" does not exist', sqlstate="34000")
                del self.cursors[key]
            return Outcome("CLOSE CURSOR")
        if m := C.COPY.fullmatch(text):
            copy = C.copy_statement(m)
            if describe:
                return Outcome("COPY")
            self._failed_check()
            return self.copy(copy)
        if C.DISCARD.fullmatch(text):
            if not describe:
                self.cursors.clear()
                self.prepared = {k: v for k, v in self.prepared.items() if not k}
                if re.search(r"ALL", text, re.I) and self.session is not None:
                    self.session.close()  # its temporary tables dropped, advisory locks let go
                    reset_all(self.session)
                    for key in ROLE_SETTINGS:  # and SET SESSION AUTHORIZATION DEFAULT
                        self.session.settings.pop(key, None)
                elif re.search(r"TEMP", text, re.I) and self.session is not None:
                    temp_tables.end(self.session)
            return Outcome(text.upper())
        prepared = self._prepared_statement(text, describe)
        if prepared is not None:
            return prepared
        if m := C.FUNCTION.fullmatch(text):
            return self._function(m["fn"].lower(), m["alias"])
        if m := C.PG_CURSORS.fullmatch(text):
            found = m["name"].replace("''", "'") in self.cursors
            column = (Column("?column?", INT4, False),)
            return Outcome(columns=column, rows=iter([(1,)] if found else []), counted="SELECT")
        if mentions_catalog(text) and re.match(r"\s*(SELECT|WITH)\b", text, re.I):
            return self._catalog(text)
        return None

    def _prepared_statement(self, text: str, describe: bool) -> Outcome | None:
        """SQL's PREPARE, EXECUTE and DEALLOCATE [ALL] (None if ``text`` is none of them); they
        share the extended protocol's prepared statements, as in PostgreSQL."""
        if m := P.PREPARE.fullmatch(text):
            key = P.statement_name(m["name"])
            if not describe:
                if key in self.prepared:
                    raise PlanError(f'prepared statement "{key}" already exists', sqlstate="42P05")
                query = C.strip(m["query"])
                oids = P.type_oids(m["types"])
                oids += [0] * (placeholders(query) - len(oids))
                self.prepared[key] = P.Prepared(query, oids)
            return Outcome("PREPARE")
        if m := P.EXECUTE.fullmatch(text):
            key = P.statement_name(m["name"])
            found = self.prepared.get(key)
            if found is None:
                raise PlanError(f'prepared statement "{key}" does not exist', sqlstate="26000")
            args = P.arguments(m["args"])
            if len(args) != len(found.oids):
                raise PlanError(
                    f'wrong number of parameters for prepared statement "{key}": expected '
                    f"{len(found.oids)}, got {len(args)}",
                    sqlstate="42601",
                )
            literals = [
                f"CAST(({a}) AS {TYPE_NAMES[o]})" if o in TYPE_NAMES else f"({a})"
                for a, o in zip(args, found.oids, strict=True)
            ]
            query = substitute(found.text, literals)
            if describe:
                return Outcome(columns=self._describe_text(query, None))  # type: ignore[attr-defined]
            return self.run(query)
        if m := P.DEALLOCATE.fullmatch(text):
            if m["name"].upper() == "ALL":  # the prepared statements only
                if not describe:
                    self.prepared = {k: v for k, v in self.prepared.items() if not k}
                return Outcome("DEALLOCATE ALL")
            key = P.statement_name(m["name"])
            if not describe:
                if key not in self.prepared:
                    raise PlanError(f'prepared statement "{key}" does not exist', sqlstate="26000")
                del self.prepared[key]
            return Outcome("DEALLOCATE")
        return None

    def _catalog(self, text: str) -> Outcome:
        """A query of the system catalogs, answered from changeflow's catalog."""
        assert self.session is not None
        user = self.params.get("user", "")
        database = self.params.get("database") or user
        state = self.session.env.catalog.load()
        sizes = shard_sizes(self.session.env)
        got = answer(text, state, user, database, self.session.settings, sizes)
        columns = got.columns
        return Outcome(columns=columns, rows=iter(got.rows), counted="SELECT")

    def _function(self, fn: str, alias: str | None) -> Outcome:
        database = self.params.get("database") or self.params.get("user", "")
        settings, user = self.session.settings, self.params.get("user", "")
        role = current_role(settings, user)
        values = {
            "version": f"PostgreSQL 15.0 on changeflow {self.server.version}",
            "current_database": database,
            "current_schema": "public",
            "session_user": session_user(settings, user),
            **dict.fromkeys(("current_user", "current_role", "user"), role),  # SET ROLE's
        }
        label = (alias or fn).strip('"')
        return Outcome(
            columns=(Column(label, TEXT, False),), rows=iter([(values[fn],)]), counted="SELECT"
        )

    # -- cursors -----------------------------------------------------------------------------

    def declare(self, key: str, m: re.Match[str]) -> None:
        """A cursor of a DECLARE (``m``: its match): of a query (:mod:`adapter.cursors`), or
        of a SUBSCRIBE, whose rows come as they happen."""
        assert self.session is not None
        if key in self.cursors:
            raise PlanError(f'cursor "{key}" already exists', sqlstate="42P03")
        in_txn = self.session.in_transaction and (m["hold"] or "").upper() != "WITH"
        stmt = parse(C.strip(m["query"]))
        if stmt.kind == "subscribe":
            sub = self.session.subscribe(stmt)
            self.cursors[key] = Cursor(sub.columns, subscribe=sub, in_transaction=in_txn)
            return
        if stmt.kind not in ("select", "show_items", "show_columns", "show_create", "show_var"):
            raise PlanError("DECLARE takes a query or a SUBSCRIBE", sqlstate="42601")
        result = self.session.run(stmt)
        query = cursors.declared(m, result.columns, result.rows, self.session.in_transaction)
        self.cursors[key] = Cursor(result.columns, query=query, in_transaction=in_txn)

    def _cursor(self, raw: str) -> Cursor:
        key = C.cursor_name(raw)
        cursor = self.cursors.get(key)
        if cursor is None:
            raise PlanError(f'cursor "{key}" does not exist', sqlstate="34000")
        return cursor

    def fetch(self, cursor: Cursor, count: int | None, timeout: float | None) -> list[Any]:
        """Up to ``count`` rows (None: all there are); a subscription's FETCH waits for its
        first rows up to ``timeout`` seconds (None: until some come or it ends)."""
        sub = cursor.subscribe
        assert sub is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not cursor.buffer and not sub.done:
            self.check_interrupt()
            left = POLL if deadline is None else max(0.0, min(POLL, deadline - time.monotonic()))
            cursor.buffer += sub.poll(left)
            if deadline is not None and time.monotonic() >= deadline:
                break
        take = len(cursor.buffer) if count is None else count
        out, cursor.buffer = cursor.buffer[:take], cursor.buffer[take:]
        return out

    def _follow(self, sub: Subscribe) -> Iterator[Any]:
        """A subscription's rows as they come, a FLUSH after each batch, until it ends."""
        while not sub.done:
            self.check_interrupt()
            rows = sub.poll(POLL)
            yield from rows
            if rows:
                yield FLUSH

    # -- COPY --------------------------------------------------------------------------------

    def copy(self, copy: C.Copy) -> Outcome:
        assert self.session is not None
        if copy.direction == "from":
            return Outcome(stream=lambda: self.copy_in(copy))
        stmt = parse(C.strip(copy.query))
        if stmt.kind == "subscribe":
            sub = self.session.subscribe(stmt)
            columns, rows = sub.columns, self._follow(sub)
        else:
            if stmt.kind not in ("select", "show_items", "show_columns", "show_create"):
                raise PlanError("COPY takes a query or a SUBSCRIBE", sqlstate="42601")
            result = self.session.run(stmt)
            columns, rows = result.columns, iter(result.rows)
        return Outcome(stream=lambda: self.copy_out(copy, columns, rows))

    def copy_out(self, copy: C.Copy, columns: Schema, rows: Iterator[Any]) -> str:
        binary = copy.format == "binary"
        self.wire.send(*W.copy_out_response(1 if binary else 0, len(columns)))
        head = copy_header(copy, columns)  # binary: sent with the first row, as PostgreSQL does
        if head and not binary:
            self.wire.send(b"d", head)
            head = b""
        n = 0
        for row in rows:
            if row is FLUSH:
                self.wire.flush()
                continue
            self.wire.send(b"d", head + copy_line(copy, columns, row))
            head = b""
            n += 1
        tail = copy_trailer(copy)
        if tail:
            self.wire.send(b"d", head + tail)
        self.wire.send(b"c")
        return f"COPY {n}"

    def copy_in(self, copy: C.Copy) -> str:
        """COPY FROM STDIN: the data read to the end, then inserted as columns (one frame,
        no SQL text); by INSERT statements for a table whose left-out columns have DEFAULTs."""
        from changeflow.adapter.resolver import CatalogResolver
        from changeflow.adapter.sql.generated import copied_columns
        from changeflow.server.copy import (
            binary_columns,
            insert_statements,
            text_columns,
            with_line,
        )

        assert self.session is not None and copy.table is not None
        relation = CatalogResolver(self.session.env.catalog.load()).relation(copy.table)
        by_name = {c.name: c for c in relation.plan.schema}
        names = copied_columns(relation, copy.columns) or list(by_name)
        copy = replace(copy, columns=names)  # (a generated column is left out)
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise PlanError(
                f'column "{unknown[0]}" of relation "{copy.table}" does not exist',
                sqlstate="42703",
            )
        self.wire.send(*W.copy_in_response(1 if copy.format == "binary" else 0, len(names)))
        self.wire.flush()
        data = self._copy_data()
        if copy.format == "binary":
            columns = binary_columns(data, names, tuple(by_name[n] for n in names))
        else:
            columns = text_columns(copy, data, names)
        try:
            count = self.session.insert_columns(
                copy.table, copy.columns, columns, text=copy.format != "binary"
            )
        except ChangeflowError as e:  # a row's value refused: the line it came from
            if copy.format == "binary" or not isinstance(e.fields.get("row"), int):
                raise
            raise with_line(e, copy, data, e.fields["row"]) from None
        if count is not None:
            return f"COPY {count}"
        if copy.format == "binary":
            raise PlanError(
                "COPY FROM in binary format into a table whose left-out columns have DEFAULTs "
                "is not supported; name every column",
                sqlstate="0A000",
            )
        own = not self.session.in_transaction
        if own:
            self.session.run(parse("BEGIN"))
        count = 0
        try:
            for statement, n in insert_statements(copy, data):
                self.session.run(parse(statement))
                count += n
        except BaseException:
            if own:
                self.session.run(parse("ROLLBACK"))
            raise
        if own:
            self.session.run(parse("COMMIT"))
        return f"COPY {count}"

    def _copy_data(self) -> bytes:
        """The CopyData messages' bytes up to CopyDone (CopyFail: an error)."""
        data = bytearray()
        while True:
            self.wait_readable()
            msg = self.wire.read()
            if msg.kind == b"d":
                data += msg.body
            elif msg.kind == b"c":
                return bytes(data)
            elif msg.kind == b"f":
                reason = W.Reader(msg.body).cstr()
                raise PlanError(f"COPY from stdin failed: {reason}", sqlstate="57014")
            elif msg.kind in (b"H", b"S"):
                continue
            else:
                raise W.ProtocolError(f"unexpected message type {msg.kind!r} during COPY")
