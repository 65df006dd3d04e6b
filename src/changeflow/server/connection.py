"""One client connection: startup and authentication, then simple and extended queries on a
:class:`~changeflow.adapter.session.Session` of the server's environment.

Statements the session does not know (cursors, COPY, DISCARD, a few catalog functions) are
answered here (:mod:`~changeflow.server.commands`). A client's mistake is an ErrorResponse with
the adapter's SQLSTATE; the connection stays usable. A broken protocol closes the connection.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import secrets
import select
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from changeflow.adapter.connection import sqlstate
from changeflow.adapter.session import Session
from changeflow.adapter.sql.statements import options, parse, split
from changeflow.adapter.subscribe import Subscribe
from changeflow.compute.types import INT4, TEXT, Column, Schema
from changeflow.errors import ChangeflowError, PlanError
from changeflow.server import commands as C
from changeflow.server import pgwire as W
from changeflow.server.auth import MECHANISM, AuthFailed, Scram, md5_expected
from changeflow.server.copy import copy_header, copy_line, copy_trailer
from changeflow.server.params import placeholders, substitute
from changeflow.server.values import TYPE_NAMES, encoder, from_binary, from_text, oid_of
from changeflow.server.values import sql_literal as param_literal

if TYPE_CHECKING:
    from changeflow.server.server import Server

log = logging.getLogger("changeflow.server")
FLUSH = object()  # in a row stream: send what is buffered now
POLL = 0.25
IDLE_POLL = 0.5


class Interrupted(ChangeflowError):
    """A statement cancelled by the client, or by the server shutting down."""


class Shutdown(Exception):
    """The server is stopping; the connection ends after its current statement."""


@dataclass
class Prepared:
    """A parsed statement of the extended protocol: its text and parameter type OIDs."""

    text: str
    oids: list[int]


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
class Portal:
    """A bound statement of the extended protocol."""

    text: str
    formats: list[int]
    described: bool = False
    columns: Schema | None = None
    outcome: Outcome | None = None
    sent: int = 0


@dataclass
class Cursor:
    """A cursor from DECLARE: a query's rows, or a subscription's as they come."""

    columns: Schema
    rows: Iterator[tuple[Any, ...]] | None = None
    subscribe: Subscribe | None = None
    buffer: list[tuple[Any, ...]] = field(default_factory=list)
    in_transaction: bool = False


class ClientConnection:
    """A client socket served on its own thread (see the module docstring)."""

    def __init__(self, server: Server, sock: socket.socket, peer: Any) -> None:
        self.server, self.sock, self.peer = server, sock, peer
        self.wire = W.Wire(sock)
        self.pid = server.new_pid()
        self.secret = secrets.randbits(31)
        self.session: Session | None = None
        self.params: dict[str, str] = {}
        self.prepared: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.cursors: dict[str, Cursor] = {}
        self.cancel = threading.Event()
        self.busy = False
        self.tls = False

    # -- life cycle --------------------------------------------------------------------------

    def serve(self) -> None:
        try:
            if self.startup():
                self.loop()
        except (W.ClientGone, ssl.SSLError):
            pass
        except W.ProtocolError as e:
            self._fatal(e.sqlstate, str(e))
        except AuthFailed:
            user = self.params.get("user", "")
            self._fatal("28P01", f'password authentication failed for user "{user}"')
        except Shutdown:
            self._fatal("57P01", "terminating connection due to administrator command")
        except Exception as e:  # noqa: BLE001 — the server must outlive any one client
            log.exception("connection %s failed", self.peer)
            self._fatal("XX000", f"internal error: {e}")
        finally:
            self.server.forget(self)
            with contextlib.suppress(OSError):
                self.sock.close()

    def _fatal(self, code: str, message: str) -> None:
        try:
            self.wire.send(*W.error(code, message, severity="FATAL"))
            self.wire.flush()
        except (W.ClientGone, OSError):
            pass

    def request_cancel(self) -> None:
        if self.busy:
            self.cancel.set()

    def wait_readable(self) -> None:
        """Wait for the client's next message; raise :class:`Shutdown` if the server stops."""
        while True:
            if self.server.stopping.is_set():
                raise Shutdown()
            if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
                return
            try:
                ready, _, _ = select.select([self.sock], [], [], IDLE_POLL)
            except (OSError, ValueError):
                raise W.ClientGone("socket closed") from None
            if ready:
                return

    def client_gone(self) -> bool:
        """Whether the client has closed its end (checked while a stream waits for rows)."""
        if isinstance(self.sock, ssl.SSLSocket):
            return False
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
            return bool(ready) and self.sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def check_interrupt(self) -> None:
        if self.cancel.is_set():
            self.cancel.clear()
            raise Interrupted("canceling statement due to user request", sqlstate="57014")
        if self.server.stopping.is_set():
            raise Shutdown()
        if self.client_gone():
            raise W.ClientGone("the client closed the connection")

    # -- startup -----------------------------------------------------------------------------

    def startup(self) -> bool:
        """The startup phase; False if the connection ends with it (a cancel request)."""
        while True:
            self.wait_readable()
            code, body = self.wire.read_startup()
            if code == W.SSL_REQUEST:
                if self.server.ssl_context is not None and not self.tls:
                    self.wire.send_raw(b"S")
                    self.sock = self.server.ssl_context.wrap_socket(self.sock, server_side=True)
                    self.wire.sock = self.sock
                    self.tls = True
                else:
                    self.wire.send_raw(b"N")
                continue
            if code == W.GSSENC_REQUEST:
                self.wire.send_raw(b"N")
                continue
            if code == W.CANCEL_REQUEST:
                if len(body) >= 8:
                    pid, secret = struct.unpack("!ii", body[:8])
                    self.server.cancel(pid, secret)
                return False
            if code >> 16 != 3:
                self._fatal(
                    "0A000",
                    f"unsupported frontend protocol {code >> 16}.{code & 0xFFFF}: "
                    "the server supports 3.0",
                )
                return False
            self.params = _startup_params(body)
            break
        user = self.params.get("user")
        if not user:
            self._fatal("28000", "no user name specified in startup packet")
            return False
        if self.server.ssl_required and not self.tls:
            self._fatal("28000", "the server requires TLS (sslmode=require)")
            return False
        self.authenticate(user)
        self.session = Session(self.server.env)
        app = self.params.get("application_name", "")
        self.session.settings["application_name"] = app
        self.wire.send(*W.auth(0))
        for key, value in self.server.parameters(app).items():
            self.wire.send(*W.parameter_status(key, value))
        self.wire.send(*W.backend_key(self.pid, self.secret))
        self.wire.send(*W.ready("I"))
        self.wire.flush()
        return True

    def authenticate(self, user: str) -> None:
        passwords = self.server.passwords
        if passwords is None:
            return
        if self.server.auth_method == "md5":
            salt = secrets.token_bytes(4)
            self.wire.send(*W.auth(5, salt))
            self.wire.flush()
            sent = self._password_message().rstrip(b"\0").decode("utf-8", "replace")
            password = passwords.get(user)
            if password is None or not secrets.compare_digest(
                sent, md5_expected(user, password, salt)
            ):
                raise AuthFailed(user)
            return
        self.wire.send(*W.auth(10, W.cstr(MECHANISM) + b"\0"))
        self.wire.flush()
        r = W.Reader(self._password_message())
        mechanism, length = r.cstr(), r.int32()
        if mechanism != MECHANISM or length < 0:
            raise AuthFailed(user)
        scram = Scram(self.server.scram_secrets.get(user))
        first = scram.first(r.bytes(length).decode("utf-8", "replace"))
        self.wire.send(*W.auth(11, first.encode()))
        self.wire.flush()
        final = scram.final(self._password_message().decode("utf-8", "replace"))
        self.wire.send(*W.auth(12, final.encode()))

    def _password_message(self) -> bytes:
        self.wait_readable()
        msg = self.wire.read()
        if msg.kind != b"p":
            raise W.ProtocolError(f"expected a password message, got {msg.kind!r}")
        return msg.body

    # -- the message loop --------------------------------------------------------------------

    @property
    def status(self) -> str:
        txn = self.session.txn if self.session else None
        if txn is None or not txn.explicit:
            return "I"
        return "E" if txn.failed else "T"

    def loop(self) -> None:
        skipping = False  # after an error in the extended protocol, until Sync
        while True:
            self.wait_readable()
            msg = self.wire.read()
            kind = msg.kind
            if kind == b"X":
                return
            if kind == b"Q":
                skipping = False
                self.simple_query(W.Reader(msg.body).cstr())
                continue
            if kind == b"S":
                skipping = False
                self.wire.send(*W.ready(self.status))
                self.wire.flush()
                continue
            if kind == b"H":
                self.wire.flush()
                continue
            if kind in (b"d", b"c", b"f"):  # copy data outside COPY FROM: ignored
                continue
            if skipping:
                continue
            handler = {
                b"P": self.parse,
                b"B": self.bind,
                b"D": self.describe,
                b"E": self.execute,
                b"C": self.close,
                b"F": self.function_call,
            }.get(kind)
            if handler is None:
                raise W.ProtocolError(f"invalid frontend message type {kind!r}")
            try:
                handler(W.Reader(msg.body))
            except W.ProtocolError:
                raise
            except ChangeflowError as e:
                self._error(e)
                skipping = True

    def _error(self, e: BaseException) -> None:
        """An ErrorResponse for a statement's error; an open transaction is then failed."""
        if self.session is not None and self.session.txn is not None:
            if self.session.txn.explicit:
                self.session.txn.failed = True
            else:
                self.session.txn = None
        message = str(e).strip() or type(e).__name__
        self.wire.send(*W.error(sqlstate(e), message))

    # -- simple query ------------------------------------------------------------------------

    def simple_query(self, text: str) -> None:
        try:
            statements = split(text)
        except ChangeflowError as e:
            statements = None
            self._error(e)
        if statements is not None and not statements:
            self.wire.send(b"I")
        for statement in statements or ():
            try:
                outcome = self.run(statement)
                if outcome.stream is None and outcome.columns is not None:
                    self._row_description(outcome.columns, [])
                self._send_outcome(outcome, [], 0)
            except ChangeflowError as e:
                self._error(e)
                break
            except Exception as e:  # noqa: BLE001 — a bug answers this query, not the server
                if isinstance(e, W.ClientGone | Shutdown):
                    raise
                log.exception("statement %r failed", statement)
                self._error(PlanError(f"internal error: {e}", sqlstate="XX000"))
                break
            finally:
                self.busy = False
        self.wire.send(*W.ready(self.status))
        self.wire.flush()

    def _row_description(self, columns: Schema, formats: list[int]) -> None:
        fields = []
        for i, c in enumerate(columns):
            oid, size = oid_of(c.type)
            fields.append((c.name, oid, size, _format(formats, i)))
        self.wire.send(*W.row_description(fields))

    def _send_outcome(self, outcome: Outcome, formats: list[int], limit: int) -> bool:
        """Send the outcome's rows (at most ``limit``, 0 for all) and its CommandComplete;
        False if the row limit stopped it first (PortalSuspended sent)."""
        if outcome.stream is not None:
            self.wire.send(*W.command_complete(outcome.stream()))
            return True
        encoders = [
            encoder(c.type, _format(formats, i)) for i, c in enumerate(outcome.columns or ())
        ]
        sent = 0
        while not limit or sent < limit:
            row = next(outcome.rows, None)
            if row is None:
                break
            if row is FLUSH:
                self.wire.flush()
                continue
            self.wire.send(*W.data_row([enc(v) for enc, v in zip(encoders, row, strict=True)]))
            sent += 1
        if limit and sent >= limit:
            self.wire.send(b"s")
            return False
        tag = f"{outcome.counted} {sent}" if outcome.counted else outcome.tag
        self.wire.send(*W.command_complete(tag))
        return True

    # -- running one statement ---------------------------------------------------------------

    def run(self, text: str) -> Outcome:
        """Run one statement; its outcome (rows may still be streaming)."""
        assert self.session is not None
        self.cancel.clear()
        self.busy = True
        text = C.strip(text)
        special = self._special(text, describe=False)
        if special is not None:
            return special
        stmt = parse(text)
        if stmt.kind == "subscribe":
            sub = self.session.subscribe(stmt)
            return Outcome(columns=sub.columns, rows=self._follow(sub), counted="SUBSCRIBE")
        if stmt.kind == "begin" and self.session.in_transaction:
            self.wire.send(
                *W.notice("25001", "there is already a transaction in progress", "WARNING")
            )
        if stmt.kind in ("commit", "rollback") and self.session.txn is None:
            self.wire.send(*W.notice("25P01", "there is no transaction in progress", "WARNING"))
        try:
            result = self.session.run(stmt)
        finally:
            self._end_cursors()
        if result.columns or result.status.startswith("SELECT"):
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
        if m := C.DECLARE.fullmatch(text):
            if not describe:
                self._failed_check()
                self.declare(C.cursor_name(m["name"]), m["query"], m["hold"])
            return Outcome("DECLARE CURSOR")
        if m := C.FETCH.fullmatch(text):
            cursor = self._cursor(m["name"])
            if describe:
                return Outcome(columns=cursor.columns)
            self._failed_check()
            count = None if (m["count"] or "").upper() == "ALL" else int(m["count"] or 1)
            opts = options(m["with"])
            timeout = C.timeout_seconds(opts["timeout"]) if "timeout" in opts else None
            rows = self.fetch(cursor, count, timeout)
            return Outcome(columns=cursor.columns, rows=iter(rows), counted="FETCH")
        if m := C.CLOSE.fullmatch(text):
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
            return Outcome(text.upper())
        if C.MOVE.fullmatch(text):
            raise PlanError("MOVE is not supported: cursors only go forward", sqlstate="0A000")
        if m := C.FUNCTION.fullmatch(text):
            return self._function(m["fn"].lower(), m["alias"])
        if m := C.PG_CURSORS.fullmatch(text):
            found = m["name"].replace("''", "'") in self.cursors
            column = (Column("?column?", INT4, False),)
            return Outcome(columns=column, rows=iter([(1,)] if found else []), counted="SELECT")
        if C.CATALOG.search(text) and re.match(r"\s*(SELECT|WITH)\b", text, re.I):
            raise PlanError(
                "the PostgreSQL system catalogs (pg_catalog, information_schema, and so psql's "
                "\\d commands) are not available: use SHOW TABLES, SHOW VIEWS, SHOW SOURCES or "
                "SHOW COLUMNS FROM name",
                sqlstate="0A000",
            )
        return None

    def _function(self, fn: str, alias: str | None) -> Outcome:
        database = self.params.get("database") or self.params.get("user", "")
        values = {
            "version": f"PostgreSQL 15.0 on changeflow {self.server.version}",
            "current_database": database,
            "current_schema": "public",
            "current_user": self.params.get("user", ""),
            "session_user": self.params.get("user", ""),
            "current_role": self.params.get("user", ""),
            "user": self.params.get("user", ""),
        }
        label = (alias or fn).strip('"')
        return Outcome(
            columns=(Column(label, TEXT, False),), rows=iter([(values[fn],)]), counted="SELECT"
        )

    # -- cursors -----------------------------------------------------------------------------

    def declare(self, key: str, query: str, hold: str | None) -> None:
        assert self.session is not None
        if key in self.cursors:
            raise PlanError(f'cursor "{key}" already exists', sqlstate="42P03")
        in_txn = self.session.in_transaction and (hold or "").upper() != "WITH"
        stmt = parse(C.strip(query))
        if stmt.kind == "subscribe":
            sub = self.session.subscribe(stmt)
            self.cursors[key] = Cursor(sub.columns, subscribe=sub, in_transaction=in_txn)
            return
        if stmt.kind not in ("select", "show_items", "show_columns", "show_create", "show_var"):
            raise PlanError("DECLARE takes a query or a SUBSCRIBE", sqlstate="42601")
        result = self.session.run(stmt)
        self.cursors[key] = Cursor(result.columns, rows=iter(result.rows), in_transaction=in_txn)

    def _cursor(self, raw: str) -> Cursor:
        key = C.cursor_name(raw)
        cursor = self.cursors.get(key)
        if cursor is None:
            raise PlanError(f'cursor "{key}" does not exist', sqlstate="34000")
        return cursor

    def fetch(self, cursor: Cursor, count: int | None, timeout: float | None) -> list[Any]:
        """Up to ``count`` rows (None: all there are); a subscription's FETCH waits for its
        first rows up to ``timeout`` seconds (None: until some come or it ends)."""
        if cursor.subscribe is None:
            assert cursor.rows is not None
            return list(itertools.islice(cursor.rows, count))
        sub = cursor.subscribe
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
        from changeflow.server.copy import insert_statements

        assert self.session is not None and copy.table is not None
        if copy.format == "binary":
            raise PlanError("COPY FROM STDIN in binary format is not supported", sqlstate="0A000")
        self.wire.send(*W.copy_in_response(0, len(copy.columns or ())))
        self.wire.flush()
        data = bytearray()
        while True:
            self.wait_readable()
            msg = self.wire.read()
            if msg.kind == b"d":
                data += msg.body
            elif msg.kind == b"c":
                break
            elif msg.kind == b"f":
                reason = W.Reader(msg.body).cstr()
                raise PlanError(f"COPY from stdin failed: {reason}", sqlstate="57014")
            elif msg.kind in (b"H", b"S"):
                continue
            else:
                raise W.ProtocolError(f"unexpected message type {msg.kind!r} during COPY")
        own = not self.session.in_transaction
        if own:
            self.session.run(parse("BEGIN"))
        count = 0
        try:
            for statement, n in insert_statements(copy, bytes(data)):
                self.session.run(parse(statement))
                count += n
        except BaseException:
            if own:
                self.session.run(parse("ROLLBACK"))
            raise
        if own:
            self.session.run(parse("COMMIT"))
        return f"COPY {count}"

    # -- extended query ----------------------------------------------------------------------

    def parse(self, r: W.Reader) -> None:
        name, text = r.cstr(), r.cstr()
        oids = [r.int32() for _ in range(r.int16())]
        statements = split(text)
        if len(statements) > 1:
            raise PlanError(
                "cannot insert multiple commands into a prepared statement", sqlstate="42601"
            )
        if name and name in self.prepared:
            raise PlanError(f'prepared statement "{name}" already exists', sqlstate="42P05")
        needed = placeholders(text)
        oids += [0] * (needed - len(oids))
        self.prepared[name] = Prepared(statements[0] if statements else "", oids)
        self.wire.send(b"1")

    def bind(self, r: W.Reader) -> None:
        portal, name = r.cstr(), r.cstr()
        param_formats = [r.int16() for _ in range(r.int16())]
        raw: list[bytes | None] = []
        for _ in range(r.int16()):
            n = r.int32()
            raw.append(None if n < 0 else r.bytes(n))
        result_formats = [r.int16() for _ in range(r.int16())]
        prepared = self.prepared.get(name)
        if prepared is None:
            raise PlanError(f'prepared statement "{name}" does not exist', sqlstate="26000")
        if len(raw) != len(prepared.oids):
            raise W.ProtocolError(
                f"bind message supplies {len(raw)} parameters, but prepared statement "
                f'"{name}" requires {len(prepared.oids)}'
            )
        literals = []
        for i, (value, oid) in enumerate(zip(raw, prepared.oids, strict=True), 1):
            if value is None:
                type_name = TYPE_NAMES.get(oid)
                literals.append(f"NULL::{type_name}" if type_name else "NULL")
            elif _format(param_formats, i - 1) == 1:
                literals.append(param_literal(from_binary(value, oid, i)))
            else:
                try:
                    decoded = value.decode("utf-8")
                except UnicodeDecodeError:
                    raise PlanError(f"invalid UTF-8 in parameter ${i}", sqlstate="22021") from None
                literals.append(param_literal(from_text(decoded, oid, i)))
        text = substitute(prepared.text, literals) if literals else prepared.text
        self.portals[portal] = Portal(text, result_formats)
        self.wire.send(b"2")

    def describe(self, r: W.Reader) -> None:
        what, name = r.byte(), r.cstr()
        if what == b"S":
            prepared = self.prepared.get(name)
            if prepared is None:
                raise PlanError(f'prepared statement "{name}" does not exist', sqlstate="26000")
            self.wire.send(*W.parameter_description([o or 25 for o in prepared.oids]))
            nulls = [f"NULL::{TYPE_NAMES[o]}" if o in TYPE_NAMES else "NULL" for o in prepared.oids]
            columns = self._describe_text(substitute(prepared.text, nulls), None)
            formats: list[int] = []
        elif what == b"P":
            portal = self._portal(name)
            if not portal.described:
                portal.columns = self._describe_text(portal.text, portal)
                portal.described = True
            columns, formats = portal.columns, portal.formats
        else:
            raise W.ProtocolError(f"invalid Describe target {what!r}")
        if columns is None:
            self.wire.send(b"n")
        else:
            self._row_description(columns, formats)

    def _describe_text(self, text: str, portal: Portal | None) -> Schema | None:
        """The columns a statement will return, found without running it."""
        assert self.session is not None
        text = C.strip(text)
        if not text:
            return None
        special = self._special(text, describe=True)
        if special is not None:
            return special.columns
        stmt = parse(text)
        if stmt.kind == "subscribe":
            if portal is None:
                return self.session.describe(stmt)
            portal.outcome = self.run(text)
            self.busy = False
            return portal.outcome.columns
        return self.session.describe(stmt)

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            cursor = self.cursors.get(name)
            if cursor is not None:  # a DECLAREd cursor is a portal too
                return Portal("", [], described=True, columns=cursor.columns)
            raise PlanError(f'portal "{name}" does not exist', sqlstate="34000")
        return portal

    def execute(self, r: W.Reader) -> None:
        name, limit = r.cstr(), r.int32()
        portal = self.portals.get(name)
        if portal is None:
            raise PlanError(f'portal "{name}" does not exist', sqlstate="34000")
        if not portal.text.strip():
            self.wire.send(b"I")
            return
        try:
            if portal.outcome is None:
                portal.outcome = self.run(portal.text)
            self._send_outcome(portal.outcome, portal.formats, max(limit, 0))
        except Exception:
            if portal.outcome is not None:
                portal.outcome = Outcome(portal.outcome.tag)
            raise
        finally:
            self.busy = False

    def close(self, r: W.Reader) -> None:
        what, name = r.byte(), r.cstr()
        if what == b"S":
            self.prepared.pop(name, None)
        elif what == b"P":
            self.portals.pop(name, None)
            self.cursors.pop(name, None)
        else:
            raise W.ProtocolError(f"invalid Close target {what!r}")
        self.wire.send(b"3")

    def function_call(self, r: W.Reader) -> None:
        raise PlanError("the function call protocol is not supported", sqlstate="0A000")


def _format(formats: list[int], i: int) -> int:
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i] if i < len(formats) else 0


def _startup_params(body: bytes) -> dict[str, str]:
    parts = body.split(b"\0")
    out = {}
    for key, value in zip(parts[0::2], parts[1::2], strict=False):
        if not key:
            break
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out
