"""What every command shares: one error line, Ctrl-C's exit status, the storage options and
the words that show counts and frontiers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from changeflow.errors import ChangeflowError
from changeflow.time import Antichain

INTERRUPTED = 130  # the exit status shells expect after Ctrl-C (128 + SIGINT)


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn changeflow's errors into one line on stderr and exit status 1; Ctrl-C exits 130."""

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ChangeflowError as e:
            lines = (line.strip() for line in str(e).splitlines())
            click.echo(f"error: {' '.join(line for line in lines if line)}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("stopped (Ctrl-C)", err=True)
            sys.exit(INTERRUPTED)
        except BrokenPipeError:
            sys.exit(0)

    return run


def with_storage(
    fn: Callable[..., Any], with_config: bool = False, create: bool = True
) -> Callable[..., Any]:
    """Add --home, --consensus and --blob-root; pass the opened Storage as the first argument
    (and the Config as the second, ``with_config``). With ``create`` false (commands that only
    read) a missing store is an error and nothing is created."""

    @click.option("--home", help="Data folder (default: $CHANGEFLOW_HOME or ./changeflow-data).")
    @click.option("--consensus", help="sqlite:PATH or postgresql://… (default: under the home).")
    @click.option("--blob-root", help="Where shard data lives (default: a folder in the home).")
    @wraps(fn)
    def run(home: str | None, consensus: str | None, blob_root: str | None, **kwargs: Any) -> Any:
        from changeflow.config import Config
        from changeflow.storage import Storage

        config = Config.load(home=home, consensus=consensus, blob_root=blob_root)
        storage = Storage.open(config, create=create)
        try:
            return fn(storage, config, **kwargs) if with_config else fn(storage, **kwargs)
        finally:
            storage.close()

    return run


def reading_storage(fn: Callable[..., Any]) -> Callable[..., Any]:
    """:func:`with_storage` for a command that only reads: it creates no folder or file."""
    return with_storage(fn, create=False)


def show_frontier(frontier: Antichain) -> str:
    return json.dumps(frontier.to_json())


def show_interval(lower: Antichain, upper: Antichain) -> str:
    """``[lower, upper)`` of int frontiers; the empty frontier shows as ∞."""
    low, high = (json.dumps(f.to_json()[0]) if f else "∞" for f in (lower, upper))
    return f"[{low}, {high})"


def show_utc(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 'es' if noun.endswith('ch') else 's'}"
