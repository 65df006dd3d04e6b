"""One client connection: startup and authentication, then simple and extended queries on a
:class:`~changeflow.adapter.session.Session` of the server's environment.

Statements the session does not know (cursors, COPY, DISCARD, a few catalog functions) are
answered here (:mod:`~changeflow.server.commands`). A client's mistake is an ErrorResponse with
the adapter's SQLSTATE; the connection stays usable. A broken protocol closes the connection.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import ssl
import threading
import time
from typing import TYPE_CHECKING, Any

from changeflow.adapter.batches import one_transaction
from changeflow.adapter.connection import sqlstate
from changeflow.adapter.session import Session
from changeflow.adapter.sql.statements import parse, split
from changeflow.compute.types import Schema
from changeflow.errors import ChangeflowError, PlanError
from changeflow.server import pgwire as W
from changeflow.server.auth import AuthFailed
from changeflow.server.batch import Batch, format_code
from changeflow.server.extended import Extended, Portal, Prepared
from changeflow.server.runner import FLUSH, Cursor, Interrupted, Outcome, Runner, Shutdown
from changeflow.server.startup import Startup
from changeflow.server.values import TEXT, TEXT_OIDS, encoder, oid_of

if TYPE_CHECKING:
    from changeflow.server.server import Server

log = logging.getLogger("changeflow.server")
IDLE_POLL = 0.5
PASS_THROUGH = (W.ClientGone, W.ProtocolError, Shutdown, ssl.SSLError, OSError)


class ClientConnection(Startup, Extended, Runner):
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
        self.batch: Batch | None = None  # rows of prepared INSERTs not inserted yet
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
            if self.session is not None:  # its temporary tables go with it
                try:
                    self.session.close()
                except Exception:  # noqa: BLE001 — a process restart sweeps what is left
                    log.exception("connection %s: dropping its temporary tables", self.peer)

    def _fatal(self, code: str, message: str) -> None:
        """End the connection with an error, its slot given back first: a client told it
        was refused may connect again at once (and find the slot free)."""
        self.server.forget(self)
        try:
            self.wire.send(*W.error(code, message, severity="FATAL"))
            self.wire.flush()
        except (W.ClientGone, OSError):
            pass

    def request_cancel(self) -> None:
        if self.busy:
            self.cancel.set()

    def wait_readable(self, deadline: float | None = None) -> None:
        """Wait for the client's next message; raise :class:`Shutdown` if the server stops,
        :class:`~changeflow.server.pgwire.ClientGone` past ``deadline`` (monotonic)."""
        while True:
            if self.server.stopping.is_set():
                raise Shutdown()
            if deadline is not None and time.monotonic() > deadline:
                raise W.ClientGone("the client did not finish its startup in time")
            if self.wire.pending or (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
                return
            try:
                if W.readable(self.sock, IDLE_POLL):
                    return
            except (OSError, ValueError):
                raise W.ClientGone("socket closed") from None

    def client_gone(self) -> bool:
        """Whether the client has closed its end (checked while a stream waits for rows)."""
        return self.wire.closed_by_peer()

    def check_interrupt(self) -> None:
        if self.cancel.is_set():
            self.cancel.clear()
            raise Interrupted("canceling statement due to user request", sqlstate="57014")
        if self.server.stopping.is_set():
            raise Shutdown()
        if self.client_gone():
            raise W.ClientGone("the client closed the connection")

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
            if kind in (b"Q", b"S"):  # collected INSERT rows go in, then the writes commit
                skipping = False
                try:
                    self.flush_batch()
                    failed = False
                except ChangeflowError as e:
                    self._error(e)
                    failed = True
                try:
                    self.end_writes()
                except ChangeflowError as e:
                    self._error(e)
                    failed = True
                if failed and kind == b"Q":
                    self.wire.send(*W.ready(self.status))
                    continue
            if kind == b"Q":
                self.simple_query(W.Reader(msg.body).cstr())
                continue
            if kind == b"S":
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
            except ChangeflowError as e:
                self.batch = None  # the implicit transaction until Sync fails as a whole
                self._error(e)
                skipping = True
            except PASS_THROUGH:
                raise
            except Exception as e:  # noqa: BLE001 — a bug answers this message, not the server
                log.exception("%r message failed", kind)
                self.batch = None
                self._error(PlanError(f"internal error: {e}", sqlstate="XX000"))
                skipping = True

    def _error(self, e: BaseException) -> None:
        """An ErrorResponse for a statement's error; an open transaction is then failed."""
        if self.session is not None:
            self.session.fail()
        message = str(e).strip() or type(e).__name__
        detail, hint = (str(getattr(e, f, None) or "") for f in ("detail", "hint"))
        objects = W.object_fields(e)
        if isinstance(where := getattr(e, "where", None), str):  # the error's context
            objects[b"W"] = where
        self.wire.send(*W.error(sqlstate(e), message, detail=detail, hint=hint, objects=objects))

    # -- simple query ------------------------------------------------------------------------

    def simple_query(self, text: str) -> None:
        try:
            statements = split(text)
        except ChangeflowError as e:
            statements = None
            self._error(e)
        if statements is not None and not statements:
            self.wire.send(b"I")
        block = (
            self.session is not None
            and bool(statements)
            and one_transaction(self.session, statements or [])
        )
        if block:  # several writes in one message: one implicit transaction
            self.session.run(parse("BEGIN"))
        for statement in statements or ():
            try:
                outcome = self.run(statement)
                if outcome.stream is None and outcome.columns is not None:
                    self._row_description(outcome.columns, [])
                self._send_outcome(outcome, [], 0)
            except ChangeflowError as e:
                if block:
                    block = False
                    self.session.run(parse("ROLLBACK"))
                self._error(e)
                break
            except PASS_THROUGH:
                raise
            except Exception as e:  # noqa: BLE001 — a bug answers this query, not the server
                log.exception("statement %r failed", statement)
                if block:
                    block = False
                    self.session.run(parse("ROLLBACK"))
                self._error(PlanError(f"internal error: {e}", sqlstate="XX000"))
                break
            finally:
                self.busy = False
        if block:
            try:
                self.session.run(parse("COMMIT"))
            except ChangeflowError as e:
                self._error(e)
        self.wire.send(*W.ready(self.status))
        self.wire.flush()

    def _row_description(self, columns: Schema, formats: list[int]) -> None:
        fields = []
        for i, c in enumerate(columns):
            oid, size = oid_of(c.type)
            if oid == TEXT and c.text_type:  # char(n), varchar(n) or name held as text
                oid = TEXT_OIDS[c.text_type]
            fields.append((c.name, oid, size, format_code(formats, i), c.typmod))
        self.wire.send(*W.row_description(fields))

    def _send_outcome(self, outcome: Outcome, formats: list[int], limit: int) -> bool:
        """Send the outcome's rows (at most ``limit``, 0 for all) and its CommandComplete;
        False if the row limit stopped it first (PortalSuspended sent)."""
        if outcome.stream is not None:
            self.wire.send(*W.command_complete(outcome.stream()))
            return True
        encoders = [
            encoder(c.type, format_code(formats, i)) for i, c in enumerate(outcome.columns or ())
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
