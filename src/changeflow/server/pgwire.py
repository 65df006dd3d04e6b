"""PostgreSQL protocol 3.0 framing: reading frontend messages and encoding backend ones.

A frontend message is a type byte, a big-endian int32 length (itself included) and a payload;
the startup packet has no type byte. :class:`Wire` reads them from a socket and buffers what
the backend sends, flushing once the buffer passes a threshold so that a huge result is
streamed rather than built whole.
"""

from __future__ import annotations

import select
import socket
import ssl
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from changeflow.redact import redact

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
MAX_MESSAGE = 256 * 1024 * 1024  # longer is garbage, not a message
MAX_STARTUP = 10_000
FLUSH_AT = 64 * 1024
READ_AHEAD = 8192  # bytes a message read takes beyond it, of the client's next ones
SOCKET_TIMEOUT = 120.0  # a client that stops mid-message or stops reading for this long is gone


class ProtocolError(Exception):
    """The client broke the protocol (SQLSTATE 08P01); the connection is closed."""

    sqlstate = "08P01"


class ClientGone(Exception):
    """The client closed the connection."""


def readable(sock: socket.socket, timeout: float) -> bool:
    """Has ``sock`` something to read (or been closed by its peer) within ``timeout``
    seconds? By ``poll``, which takes any descriptor (``select`` refuses those past 1023,
    which a process with many open files reaches). A socket closed here is an ``OSError``."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    events = poller.poll(timeout * 1000)
    if any(e & select.POLLNVAL for _, e in events):
        raise OSError("the socket is closed")
    return bool(events)


@dataclass(frozen=True)
class Message:
    """One frontend message: its type byte (``b"Q"``…) and payload."""

    kind: bytes
    body: bytes


class Reader:
    """Reads the fields of a message's payload in order."""

    def __init__(self, body: bytes) -> None:
        self.body, self.pos = body, 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.body):
            raise ProtocolError("message is shorter than its fields")
        out = self.body[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack("!h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack("!i", self._take(4))[0]

    def byte(self) -> bytes:
        return self._take(1)

    def bytes(self, n: int) -> bytes:
        return self._take(n)

    def cstr(self) -> str:
        end = self.body.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolError("string field is not terminated")
        raw = self.body[self.pos : end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("string field is not valid UTF-8") from None

    def rest(self) -> bytes:
        out = self.body[self.pos :]
        self.pos = len(self.body)
        return out


class Wire:
    """A client socket: frontend messages in, buffered backend messages out."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.out = bytearray()
        self.pending = b""  # read ahead while checking that a TLS client is still there

    def _recv_exact(self, n: int, ahead: int = 0) -> bytes:
        """``n`` bytes from the client; with ``ahead``, up to that many more that it has
        sent already are read with them and kept for the next read (a driver sends Bind,
        Describe, Execute and Sync at once: one system call, not eight)."""
        chunks, got = [], 0
        if self.pending:
            chunks.append(self.pending[:n])
            got = len(chunks[0])
            self.pending = self.pending[n:]
        while got < n:
            try:
                chunk = self.sock.recv(min(max(n - got, ahead), 1 << 20))
            except (ConnectionError, OSError) as e:
                raise ClientGone(str(e)) from None
            if not chunk:
                raise ClientGone("the client closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if got > n:  # (read only once ``pending`` was used up)
            self.pending = data[n:]
            return data[:n]
        return data

    def read_startup(self) -> tuple[int, bytes]:
        """A startup-phase packet: its code (protocol version or request) and the rest."""
        length = struct.unpack("!i", self._recv_exact(4))[0]
        if length < 8 or length > MAX_STARTUP:
            raise ProtocolError(f"invalid startup packet length {length}")
        body = self._recv_exact(length - 4)
        return struct.unpack("!i", body[:4])[0], body[4:]

    def read(self) -> Message:
        head = self._recv_exact(5, READ_AHEAD)
        kind, length = head[:1], struct.unpack("!i", head[1:])[0]
        if length < 4 or length > MAX_MESSAGE:
            raise ProtocolError(f"invalid message length {length} for message type {kind!r}")
        return Message(kind, self._recv_exact(length - 4, READ_AHEAD))

    def closed_by_peer(self) -> bool:
        """Whether the client closed its end, without losing anything it sent: a plain socket
        is peeked at; a TLS one is read without blocking, its data kept for the next read."""
        try:
            if not readable(self.sock, 0):
                return False
            if not isinstance(self.sock, ssl.SSLSocket):
                return self.sock.recv(1, socket.MSG_PEEK) == b""
            self.sock.setblocking(False)
            try:
                data = self.sock.recv(1 << 16)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                return False
            finally:
                self.sock.settimeout(SOCKET_TIMEOUT)
            self.pending += data
            return data == b""
        except (OSError, ValueError):
            return True

    def send(self, kind: bytes, body: bytes = b"") -> None:
        self.out += kind + struct.pack("!i", len(body) + 4) + body
        if len(self.out) >= FLUSH_AT:
            self.flush()

    def send_raw(self, data: bytes) -> None:
        self.out += data
        self.flush()

    def flush(self) -> None:
        if not self.out:
            return
        data, self.out = bytes(self.out), bytearray()
        try:
            self.sock.sendall(data)
        except (ConnectionError, OSError) as e:
            raise ClientGone(str(e)) from None


# -- encoding -----------------------------------------------------------------------------------


def cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\0"


def int16(n: int) -> bytes:
    return struct.pack("!h", n)


def int32(n: int) -> bytes:
    return struct.pack("!i", n)


def auth(code: int, data: bytes = b"") -> tuple[bytes, bytes]:
    return b"R", int32(code) + data


def parameter_status(name: str, value: str) -> tuple[bytes, bytes]:
    return b"S", cstr(name) + cstr(value)


def backend_key(pid: int, secret: int) -> tuple[bytes, bytes]:
    return b"K", int32(pid) + int32(secret)


def ready(status: str) -> tuple[bytes, bytes]:
    return b"Z", status.encode()


def command_complete(tag: str) -> tuple[bytes, bytes]:
    return b"C", cstr(tag)


def row_description(fields: Sequence[tuple[str, int, int, int, int]]) -> tuple[bytes, bytes]:
    """Fields as (name, type OID, type size, format code, type modifier)."""
    body = bytearray(int16(len(fields)))
    for name, oid, size, fmt, typmod in fields:
        body += cstr(name) + int32(0) + int16(0) + int32(oid) + int16(size) + int32(typmod)
        body += int16(fmt)
    return b"T", bytes(body)


_NULL = struct.pack("!i", -1)
_INT32 = struct.Struct("!i").pack


def data_row(values: Sequence[bytes | None]) -> tuple[bytes, bytes]:
    parts = [int16(len(values))]
    for v in values:
        if v is None:
            parts.append(_NULL)
        else:
            parts.append(_INT32(len(v)))
            parts.append(v)
    return b"D", b"".join(parts)


def parameter_description(oids: Sequence[int]) -> tuple[bytes, bytes]:
    return b"t", int16(len(oids)) + b"".join(int32(o) for o in oids)


def copy_out_response(overall: int, columns: int) -> tuple[bytes, bytes]:
    return b"H", bytes([overall]) + int16(columns) + int16(overall) * columns


def copy_in_response(overall: int, columns: int) -> tuple[bytes, bytes]:
    return b"G", bytes([overall]) + int16(columns) + int16(overall) * columns


def notice_fields(
    severity: str,
    code: str,
    message: str,
    detail: str = "",
    hint: str = "",
    objects: dict[bytes, str] | None = None,
) -> bytes:
    message, detail = redact(message), redact(detail)  # no password reaches a client
    body = b"S" + cstr(severity) + b"V" + cstr(severity) + b"C" + cstr(code)
    body += b"M" + cstr(message)
    if detail:
        body += b"D" + cstr(detail)
    if hint:
        body += b"H" + cstr(redact(hint))
    for kind, value in (objects or {}).items():
        body += kind + cstr(value)
    return body + b"\0"


def error(
    code: str,
    message: str,
    severity: str = "ERROR",
    detail: str = "",
    hint: str = "",
    objects: dict[bytes, str] | None = None,
) -> tuple[bytes, bytes]:
    return b"E", notice_fields(severity, code, message, detail, hint, objects)


def object_fields(e: BaseException) -> dict[bytes, str]:
    """The schema (``s``), table (``t``), column (``c``) and constraint (``n``) fields of an
    error that names them, as PostgreSQL's constraint violations do (a table name ``s.t``
    gives both)."""
    table = getattr(e, "table", None)
    schema = getattr(e, "schema", None)
    if not isinstance(table, str):
        return {}
    if schema is None:
        schema, dot, rest = table.partition(".")
        schema, table = (schema, rest) if dot else ("public", table)
    out = {b"s": str(schema), b"t": table}
    for kind, name in ((b"c", "column"), (b"n", "constraint")):
        if isinstance(value := getattr(e, name, None), str):
            out[kind] = value
    return out


def notice(
    code: str, message: str, severity: str = "NOTICE", detail: str = ""
) -> tuple[bytes, bytes]:
    return b"N", notice_fields(severity, code, message, detail)
