"""The listener: accepts clients, one thread each, on one :class:`Environment`; answers cancel
requests; stops cleanly (listener closed, running statements finished, clients told why)."""

from __future__ import annotations

import ipaddress
import logging
import secrets
import socket
import ssl
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from changeflow.adapter.access import SUPERUSER, Access
from changeflow.adapter.budget import DEFAULT_BUDGET
from changeflow.adapter.environment import Environment
from changeflow.adapter.roles import file_roles
from changeflow.adapter.scram import ScramSecret
from changeflow.server import pgwire as W
from changeflow.server.connection import ClientConnection
from changeflow.server.pgwire import SOCKET_TIMEOUT

log = logging.getLogger("changeflow.server")


def package_version() -> str:
    try:
        return version("changeflow")
    except PackageNotFoundError:
        return "dev"


def parse_listen(text: str, option: str = "--listen") -> tuple[str, int]:
    """``host:port`` (``[::1]:6875`` for IPv6) as a host and a port."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host or int(port) > 65535:
        raise ValueError(f"{option} takes HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos
    )


class Server:
    """A PostgreSQL wire protocol server over one environment (see the module docstring)."""

    def __init__(
        self,
        env: Environment,
        host: str = "127.0.0.1",
        port: int = 6875,
        passwords: dict[str, str] | None = None,
        auth_method: str = "scram",
        ssl_context: ssl.SSLContext | None = None,
        ssl_required: bool = False,
        max_clients: int = 100,
        roles: dict[str, frozenset[str]] | None = None,
        allow_paths: tuple[str | Path, ...] | None = None,
        reserved: int | None = None,
        query_memory: int | None = DEFAULT_BUDGET,
    ) -> None:
        self.env = env
        self.passwords = passwords
        self.roles = roles or {}
        self.allow_paths = (env.config.home,) if allow_paths is None else allow_paths
        self.auth_method = auth_method
        self.scram_secrets = {u: ScramSecret.of(p) for u, p in (passwords or {}).items()}
        self.ssl_context = ssl_context
        self.ssl_required = ssl_required and ssl_context is not None
        self.max_clients = max_clients
        self.query_memory = query_memory  # bytes a query may grow the process by
        #: slots only a superuser may take, as PostgreSQL's superuser_reserved_connections
        self.reserved = min(1, max_clients - 1) if reserved is None else reserved
        self.version = package_version()
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.clients: dict[int, ClientConnection] = {}
        self.threads: list[threading.Thread] = []
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server((host, port), family=family, backlog=64)
        self.host, self.port = self.listener.getsockname()[:2]

    def access(self, user: str) -> Access:
        """What ``user`` may do with the server's files: a created role's attributes and
        memberships, else its roles from the password file (in trust mode every other client
        is a superuser, as anyone may then claim any user name), within the allowed folders."""
        created = file_roles(self.env.catalog.load(), user)  # a created role's own
        if created is not None:
            return Access.of(user, created, self.allow_paths)
        roles = {SUPERUSER} if self.passwords is None else self.roles.get(user, frozenset())
        return Access.of(user, roles, self.allow_paths)

    def parameters(self, application_name: str, superuser: bool = False) -> dict[str, str]:
        """The ParameterStatus values every client gets after startup."""
        return {
            "server_version": "15.0",
            "server_encoding": "UTF8",
            "client_encoding": "UTF8",
            "DateStyle": "ISO, MDY",
            "IntervalStyle": "postgres",
            "integer_datetimes": "on",
            "standard_conforming_strings": "on",
            "TimeZone": "UTC",
            "is_superuser": "on" if superuser else "off",
            "application_name": application_name,
        }

    def new_pid(self) -> int:
        with self.lock:
            while True:
                pid = secrets.randbits(30) + 1
                if pid not in self.clients:
                    return pid

    def admit(self, client: ClientConnection, superuser: bool, limit: int = -1) -> str | None:
        """Give an authenticated client a slot; else why not. The last ``reserved`` of the
        ``max_clients`` slots are a superuser's; ``limit``: its role's CONNECTION LIMIT.
        Connections still in their startup hold none (they are bounded apart, see
        :meth:`serve_forever`)."""
        with self.lock:
            user = client.params.get("user")
            mine = sum(c.admitted and c.params.get("user") == user for c in self.clients.values())
            if 0 <= limit <= mine and not superuser:
                return f'too many connections for role "{user}"'
            taken = sum(c.admitted for c in self.clients.values())
            if taken >= self.max_clients:
                return f"sorry, too many clients already ({self.max_clients})"
            if not superuser and taken >= self.max_clients - self.reserved:
                return (
                    "remaining connection slots are reserved for roles with the SUPERUSER attribute"
                )
            client.admitted = True
            return None

    def starting(self) -> int:
        """How many connections are still in their startup."""
        with self.lock:
            return sum(not c.admitted for c in self.clients.values())

    def forget(self, client: ClientConnection) -> None:
        with self.lock:
            if self.clients.get(client.pid) is client:
                del self.clients[client.pid]

    def cancel(self, pid: int, secret: int) -> None:
        """A CancelRequest: the matching client's running statement is interrupted."""
        with self.lock:
            client = self.clients.get(pid)
        if client is not None and secrets.compare_digest(
            secret.to_bytes(4, "big", signed=True), client.secret.to_bytes(4, "big", signed=True)
        ):
            client.request_cancel()

    def serve_forever(self) -> None:
        """Accept clients until :meth:`stop`, or until the host finds the store gone
        (:attr:`Environment.gone`, which the caller reports)."""
        while not self.stopping.is_set() and self.env.gone is None:
            try:
                if not W.readable(self.listener, 0.5):
                    continue
            except (OSError, ValueError):
                break
            try:
                sock, peer = self.listener.accept()
            except OSError:
                continue
            if self.starting() >= 2 * self.max_clients:  # as PostgreSQL's postmaster
                log.warning("too many connections in startup; closing one from %s", peer)
                sock.close()
                continue
            sock.settimeout(SOCKET_TIMEOUT)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client = ClientConnection(self, sock, peer)
            with self.lock:
                self.clients[client.pid] = client
            thread = threading.Thread(
                target=client.serve, name=f"pg-client-{client.pid}", daemon=True
            )
            self.threads = [t for t in self.threads if t.is_alive()]
            self.threads.append(thread)
            thread.start()

    def stop(self) -> None:
        """Ask the server to stop (safe from a signal handler)."""
        self.stopping.set()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Close the listener and wait for the clients' running statements to finish."""
        self.stopping.set()
        self.listener.close()
        for thread in list(self.threads):
            thread.join(timeout)
            if thread.is_alive():
                log.warning("a client thread did not stop within %.0f s", timeout)
