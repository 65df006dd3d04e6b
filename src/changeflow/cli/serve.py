"""``changeflow serve``: host a home and answer PostgreSQL clients (psql, psycopg…)."""

from __future__ import annotations

import faulthandler
import gc
import logging
import os
import signal
import ssl
import threading
from types import FrameType
from typing import TYPE_CHECKING

import click

from changeflow.cli.common import friendly

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment

STOP_SECONDS = 90  # the longest a stop may take before it is forced (--stop-seconds)


@click.command("serve")
@click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
@click.option(
    "--listen",
    default="127.0.0.1:6875",
    show_default=True,
    help="HOST:PORT to accept PostgreSQL clients on (port 0: any free port).",
)
@click.option(
    "--http",
    "http",
    default="127.0.0.1:6876",
    show_default=True,
    help="HOST:PORT of the status page (/, /status.json, /metrics, /health); 'off': none.",
)
@click.option(
    "--password-file",
    type=click.Path(dir_okay=False),
    help="A file of user:password lines; clients must then authenticate (else: trust).",
)
@click.option(
    "--auth",
    "auth_method",
    type=click.Choice(["scram", "md5"]),
    default="scram",
    show_default=True,
    help="How clients prove their password (with --password-file).",
)
@click.option("--tls-cert", type=click.Path(dir_okay=False), help="TLS certificate (PEM).")
@click.option("--tls-key", type=click.Path(dir_okay=False), help="TLS private key (PEM).")
@click.option("--require-tls", is_flag=True, help="Refuse clients that do not use TLS.")
@click.option(
    "--max-clients",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Clients served at once; more are refused (SQLSTATE 53300). A connection still in "
    "its startup holds no slot (it must send its first packet within 10 s).",
)
@click.option(
    "--reserved-connections",
    type=click.IntRange(min=0),
    help="Of --max-clients, the slots only a superuser may take (default: 1).",
)
@click.option(
    "--query-memory",
    type=click.IntRange(min=1),
    default=4096,
    show_default=True,
    help="MB a query may grow the server by; past it the query fails (SQLSTATE 53200).",
)
@click.option(
    "--allow-path",
    "allow_paths",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A folder whose files sources may read and sinks may write (repeatable; default: "
    "the home). Clients also need a role for that (see --password-file).",
)
@click.option(
    "--stop-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=STOP_SECONDS,
    show_default=True,
    help="The longest a stop (SIGTERM, Ctrl-C, or the home found deleted) may take to let "
    "running statements finish; then the process exits anyway.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow listening beyond loopback without --password-file, and the status page "
    "(which has no authentication) beyond loopback.",
)
@friendly
def serve(
    home: str | None,
    listen: str,
    http: str,
    password_file: str | None,
    auth_method: str,
    tls_cert: str | None,
    tls_key: str | None,
    require_tls: bool,
    max_clients: int,
    reserved_connections: int | None,
    query_memory: int,
    allow_paths: tuple[str, ...],
    stop_seconds: float,
    insecure: bool,
) -> None:
    """Host a home's views, sources and sinks and speak the PostgreSQL wire protocol.

    One process per home; each client gets its own session. SIGTERM or Ctrl-C stops it
    cleanly: the listener closes, running statements finish, the home is closed.

    Beyond loopback the server needs --password-file (or --insecure). The password file may
    give users roles after a line "[roles]", one "user: role, role" line each: superuser,
    pg_read_server_files (CREATE SOURCE), pg_write_server_files (file sinks). Without a
    password file every client is a superuser. Files are only read and written under
    --allow-path folders.

    \b
    Example:
      changeflow serve --home ./data &
      psql -h 127.0.0.1 -p 6875 -U me -c "SELECT 1"
    """
    from changeflow.adapter.environment import Environment
    from changeflow.config import Config
    from changeflow.errors import InvalidInput
    from changeflow.redact import RedactingFormatter
    from changeflow.server.auth import read_password_file
    from changeflow.server.server import Server, is_loopback, parse_listen

    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    try:
        host, port = parse_listen(listen)
        status_at = None if http.lower() == "off" else parse_listen(http, "--http")
    except ValueError as e:
        raise InvalidInput(str(e)) from None
    if reserved_connections is not None and reserved_connections >= max_clients:
        raise InvalidInput("--reserved-connections must be less than --max-clients")
    passwords, roles = read_password_file(password_file) if password_file else (None, {})
    if not insecure and passwords is None and not is_loopback(host):
        raise InvalidInput(
            f"--listen {listen} accepts clients beyond this machine without passwords: "
            "give --password-file (or --insecure to allow it anyway)"
        )
    if not insecure and status_at is not None and not is_loopback(status_at[0]):
        raise InvalidInput(
            f"--http {http}: the status page has no authentication; keep it on loopback "
            "(or give --insecure to serve it beyond this machine)"
        )
    context = None
    if tls_cert or tls_key:
        if not (tls_cert and tls_key):
            raise InvalidInput("--tls-cert and --tls-key go together")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(tls_cert, tls_key)
        except (OSError, ssl.SSLError) as e:
            raise InvalidInput(f"cannot load the TLS certificate or key: {e}") from None
    elif require_tls:
        raise InvalidInput("--require-tls needs --tls-cert and --tls-key")
    config = Config.load(home=home)
    env = Environment(config, host_seconds=1.0)
    try:
        try:
            server = Server(
                env,
                host,
                port,
                passwords,
                auth_method,
                context,
                require_tls,
                max_clients,
                roles,
                allow_paths or None,
                reserved_connections,
                query_memory << 20,
            )
        except OSError as e:
            raise InvalidInput(f"cannot listen on {listen}: {e.strerror}") from None
        page = None
        if status_at is not None:
            from changeflow.server.http import StatusPage

            try:
                page = StatusPage(env, *status_at, server=server)
            except OSError as e:
                source = click.get_current_context().get_parameter_source("http")
                if source != click.core.ParameterSource.DEFAULT:
                    server.shutdown()
                    raise InvalidInput(
                        f"cannot serve the status page on {http}: {e.strerror}"
                    ) from None
                click.echo(
                    f"changeflow serve: no status page ({http}: {e.strerror}); "
                    "choose one with --http HOST:PORT",
                    err=True,
                )
            else:
                page.start()

        def stop(signum: int, frame: FrameType | None) -> None:
            if server.stopping.is_set():  # a second signal: stop now, without waiting
                os._exit(128 + signum)
            server.stop()
            forced(env, stop_seconds, 128 + signum)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if hasattr(signal, "SIGUSR1"):  # every thread's stack on stderr, to see what waits
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        shown = f"[{server.host}]" if ":" in server.host else server.host
        auth = f"{auth_method} passwords" if passwords is not None else "trust"
        click.echo(
            f"changeflow serve: listening on {shown}:{server.port} for {config.home} "
            f"({auth}{', TLS' if context else ''})"
        )
        click.echo(f"  psql -h {server.host} -p {server.port} -U $USER", err=True)
        if page is not None:
            where = f"[{page.host}]" if ":" in page.host else page.host
            click.echo(f"changeflow serve: status page on http://{where}:{page.port}/")
        gc.collect()  # what startup made stays: the collector no longer walks it (its pauses
        gc.freeze()  # were tens of ms with every module's objects in the oldest generation)
        try:
            server.serve_forever()
        finally:
            if page is not None:
                page.close()
            gone = env.store_gone()
            if gone is not None and not server.stopping.is_set():  # stopped by itself
                forced(env, stop_seconds, 1)
            server.shutdown(timeout=5 if gone is not None else 30)
            click.echo("changeflow serve: stopped", err=True)
        if gone is not None:
            raise gone
    finally:
        env.close()


def forced(env: Environment, seconds: float, code: int) -> None:
    """End the process with ``code`` in ``seconds`` unless it ends before: a stop that cannot
    finish (a statement stuck, holding what closing the home needs) still ends, and says so
    (and that the store is gone, if it is: the exit status is then 1)."""

    def end() -> None:
        gone = env.store_gone()
        click.echo(
            f"changeflow serve: stopped by force: the stop did not finish within {seconds:g} s",
            err=True,
        )
        if gone is not None:
            click.echo(f"error: {gone}", err=True)
        os._exit(1 if gone is not None else code)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()
