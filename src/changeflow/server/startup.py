"""The startup phase of a client: SSL and GSSENC requests, cancel requests, protocol 3.0
startup parameters and password authentication."""

from __future__ import annotations

import secrets
import socket
import struct
import time
from typing import TYPE_CHECKING

from changeflow.adapter.privilege_checks import login_refusal
from changeflow.adapter.roles import role_secret, role_settings, roles
from changeflow.adapter.session import Session
from changeflow.adapter.settings import start_with
from changeflow.adapter.sql.session_values import SESSION_NAMES, SessionNames
from changeflow.server import pgwire as W
from changeflow.server.auth import MECHANISM, AuthFailed, Scram, md5_expected

if TYPE_CHECKING:
    from changeflow.server.server import Server

STARTUP_SECONDS = 60.0
#: a connection that sends no startup packet within this is closed (it holds no client slot
#: meanwhile, but a thread and a socket)
FIRST_PACKET_SECONDS = 10.0


class Startup:
    """The startup part of a client connection."""

    sock: socket.socket
    wire: W.Wire
    server: Server
    params: dict[str, str]
    session: Session | None
    pid: int
    secret: int
    tls: bool
    startup_deadline: float | None = None
    admitted = False  # holds one of the server's client slots (after authentication)

    def wait_readable(self, deadline: float | None = None) -> None:
        raise NotImplementedError

    def _fatal(self, code: str, message: str) -> None:
        raise NotImplementedError

    # -- startup -----------------------------------------------------------------------------

    def startup(self) -> bool:
        """The startup phase; False if the connection ends with it (a cancel request). A client
        gets :data:`STARTUP_SECONDS` to finish it, as PostgreSQL's authentication_timeout, and
        :data:`FIRST_PACKET_SECONDS` to send its first packet."""
        start = time.monotonic()
        self.startup_deadline = start + STARTUP_SECONDS
        first: float | None = start + FIRST_PACKET_SECONDS
        while True:
            self.wait_readable(first or self.startup_deadline)
            first = None
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
        database = self.params.get("database") or user
        refused = login_refusal(self.server.env.catalog.load(), user, database)
        if refused is not None:
            self._fatal(*refused)
            return False
        access = self.server.access(user)
        limit = (roles(self.server.env.catalog.load()).get(user) or {}).get("connlimit", -1)
        refused = self.server.admit(self, access.superuser, limit)
        if refused is not None:
            self._fatal("53300", refused)
            return False
        self.session = Session(
            self.server.env, access=access, memory_budget=self.server.query_memory
        )
        SESSION_NAMES.set(SessionNames(user, database, self.pid))
        app = self.params.get("application_name", "")
        start_with(self.session, "application_name", app)
        for key, value in role_settings(self.server.env.catalog.load(), user):  # ALTER ROLE SET
            start_with(self.session, key, value)
        self.wire.send(*W.auth(0))
        for key, value in self.server.parameters(app, access.superuser).items():
            self.wire.send(*W.parameter_status(key, value))
        self.wire.send(*W.backend_key(self.pid, self.secret))
        self.wire.send(*W.ready("I"))
        self.wire.flush()
        return True

    def authenticate(self, user: str) -> None:
        passwords = self.server.passwords
        if passwords is None:
            return
        role = None if user in passwords else role_secret(self.server.env.catalog.load(), user)
        if self.server.auth_method == "md5" and role is None:  # (a role's secret: SCRAM)
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
        scram = Scram(self.server.scram_secrets.get(user) or role)  # the file's, or a role's
        first = scram.first(r.bytes(length).decode("utf-8", "replace"))
        self.wire.send(*W.auth(11, first.encode()))
        self.wire.flush()
        final = scram.final(self._password_message().decode("utf-8", "replace"))
        self.wire.send(*W.auth(12, final.encode()))

    def _password_message(self) -> bytes:
        self.wait_readable(self.startup_deadline)
        msg = self.wire.read()
        if msg.kind != b"p":
            raise W.ProtocolError(f"expected a password message, got {msg.kind!r}")
        return msg.body


def _startup_params(body: bytes) -> dict[str, str]:
    parts = body.split(b"\0")
    out = {}
    for key, value in zip(parts[0::2], parts[1::2], strict=False):
        if not key:
            break
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out
