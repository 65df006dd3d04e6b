"""``changeflow sql``: run SQL against a home, from -c/-f, standard input, or a shell."""

from __future__ import annotations

import contextlib
import csv
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from changeflow.cli.common import friendly
from changeflow.cli.output import cell, emit, format_option

HELP = """\
  \\d [NAME]   list every item, or the columns of NAME
  \\dt \\dv \\dm \\di \\ds  tables, views, materialized views, indexes, sources
  \\q          quit
  \\?          this help
Statements end with ';' and may span lines. SUBSCRIBE streams until UP TO or Ctrl-C."""
LISTS = {
    "dt": "TABLES",
    "dv": "VIEWS",
    "dm": "MATERIALIZED VIEWS",
    "di": "INDEXES",
    "ds": "SOURCES",
}


class _InOrder(click.Command):
    """A command that remembers the order its options were given in (``ctx.meta["order"]``),
    so -c and -f run interleaved as written."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        ctx.meta["order"] = [p.name for p in order]
        return super().parse_args(ctx, args)


def _scripts(commands: tuple[str, ...], files: tuple[str, ...]) -> list[str]:
    """The -c statements and -f files' contents in the order they were given."""
    order = click.get_current_context().meta.get("order", [])
    pending = {"commands": iter(commands), "files": (_read(f) for f in files)}
    out = [next(pending[name]) for name in order if name in pending]
    return out + list(pending["commands"]) + list(pending["files"])


@click.command("sql", cls=_InOrder)
@click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
@click.option("--url", help="A changeflow serve to talk to (postgresql://host:6875/…).")
@click.option("-c", "--command", "commands", multiple=True, help="A statement to run (repeatable).")
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A file of statements to run (repeatable; - is standard input).",
)
@format_option
@friendly
def sql_command(
    home: str | None, url: str | None, commands: tuple[str, ...], files: tuple[str, ...], fmt: str
) -> None:
    """Run SQL statements against a home, in order, in one session.

    Query rows go to standard output (with --format json, one JSON object per line); status
    lines such as CREATE TABLE go to standard error. With no -c or -f, statements are read
    from standard input, or on a terminal an interactive shell starts (\\? for help).

    \b
    Example:
      changeflow sql -c "CREATE TABLE t (id int NOT NULL, name text)" \\
          -c "INSERT INTO t VALUES (1, 'one')" -c "SELECT * FROM t" --format json
    """
    from changeflow.adapter.connection import connect

    scripts = _scripts(commands, files)
    interactive = not scripts and sys.stdin.isatty()
    if not scripts and not interactive:
        scripts = [sys.stdin.read()]
    conn = _connect(connect, home, url, interactive)
    try:
        if interactive:
            _shell(conn, fmt)
            return
        for script in scripts:
            with _remote_errors():
                _run(conn, script, fmt)
    finally:
        conn.close()


def _connect(connect: Any, home: str | None, url: str | None, interactive: bool) -> Any:
    if url is None:
        return connect(home, host_seconds=1.0 if interactive else 0)
    with _remote_errors():
        return connect(home, url=url)


@contextlib.contextmanager
def _remote_errors() -> Iterator[None]:
    """A server's errors (psycopg's) as changeflow's, so they print as one line."""
    import psycopg

    from changeflow.errors import ChangeflowError

    try:
        yield
    except psycopg.Error as e:
        raise ChangeflowError(str(e).strip(), sqlstate=e.sqlstate) from None


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        from changeflow.errors import InvalidInput

        raise InvalidInput(f"cannot read {path}: {e.strerror}") from None


def _run(conn: Any, script: str, fmt: str) -> None:
    """Run each statement of ``script``, printing rows and status lines."""
    from changeflow.adapter.sql.statements import split

    for text in split(script):
        cur = conn.cursor()
        if text.split(None, 1)[0].upper() == "SUBSCRIBE":
            _stream(conn, text, fmt)
            continue
        heard = len(conn.notices)
        try:
            cur.execute(text)
        finally:  # as psql shows them, also those of a statement that then fails
            for line in conn.notices[heard:]:
                click.echo(line, err=True, nl=False)
        if cur.description is not None:
            emit([d[0] for d in cur.description], cur.fetchall(), fmt)
        click.echo(cur.statusmessage, err=True)


def _stream(conn: Any, text: str, fmt: str) -> None:
    """Print a subscription's rows as they come (a table prints one per poll)."""
    sub = conn.subscribe(text)
    rows = sub.poll(1.0)
    names = [c.name for c in sub.columns]
    writer = csv.writer(sys.stdout, lineterminator="\n") if fmt == "csv" else None
    if writer is not None:
        writer.writerow(names)
    while rows or not sub.done:
        if writer is not None:
            writer.writerows([cell(v, csv_null="") for v in row] for row in rows)
        elif rows:
            emit(names, rows, fmt)
        sys.stdout.flush()
        rows = sub.poll(1.0)


def _shell(conn: Any, fmt: str) -> None:
    """A read-eval-print loop with history, multi-line statements and \\ commands."""
    import readline

    from changeflow.adapter.connection import Error
    from changeflow.errors import ChangeflowError

    history = Path(os.path.expanduser("~/.changeflow_history"))
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    where = getattr(conn, "url", None) or conn.env.config.home
    click.echo(f"changeflow sql on {where} — \\? for help, \\q to quit", err=True)
    buffer = ""
    while True:
        try:
            line = input("changeflow=> " if not buffer else "changeflow-> ")
        except EOFError:
            break
        except KeyboardInterrupt:
            buffer = ""
            click.echo("", err=True)
            continue
        stripped = line.strip()
        if not buffer and stripped.startswith("\\"):
            if stripped in ("\\q", "\\quit"):
                break
            try:
                _meta(conn, stripped, fmt)
            except (Error, ChangeflowError) as e:
                click.echo(f"error: {e}", err=True)
            continue
        buffer += line + "\n"
        if not stripped.endswith(";"):
            continue
        script, buffer = buffer, ""
        try:
            _run(conn, script, fmt)
        except (Error, ChangeflowError) as e:
            click.echo(f"error: {e}", err=True)
        except KeyboardInterrupt:
            click.echo("cancelled", err=True)
    with contextlib.suppress(OSError):
        readline.write_history_file(history)


def _meta(conn: Any, command: str, fmt: str) -> None:
    word, _, arg = command[1:].partition(" ")
    if word == "?":
        click.echo(HELP)
    elif word == "d" and arg.strip():
        _run(conn, f"SHOW COLUMNS FROM {arg.strip()}", fmt)
    elif word == "d":
        for kind in LISTS.values():
            _run(conn, f"SHOW {kind}", fmt)
    elif word in LISTS:
        _run(conn, f"SHOW {LISTS[word]}", fmt)
    else:
        click.echo(f"unknown command \\{word}; \\? lists them", err=True)
