"""The one output layer of the CLI: rows as a table (rich on a terminal), JSON lines or CSV."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import click

FORMATS = ("table", "json", "csv")


def format_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--format table|json|csv`` (passed as ``fmt``)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="table for people; json (one object a line) or csv for scripts.",
    )(fn)


def emit(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    fmt: str,
    title: str | None = None,
    right: Iterable[str] = (),
) -> None:
    """Print ``rows`` of ``columns`` in ``fmt``; ``title`` heads a table (json and csv carry
    data only); columns in ``right`` are right-aligned in a table."""
    if fmt == "json":
        for row in rows:
            click.echo(
                json.dumps(dict(zip(columns, row, strict=True)), default=str, ensure_ascii=False)
            )
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([cell(v, csv_null="") for v in row] for row in rows)
    else:
        from rich.markup import escape

        aligned = set(right)
        shown = new_table(title, *(f">{c}" if c in aligned else c for c in columns))
        for row in rows:
            shown.add_row(*(escape(cell(v)) for v in row))
        print_all(shown)


def cell(value: Any, csv_null: str = "null") -> str:
    """A value as text: strings as they are, NULL as ``null``, others as JSON."""
    if value is None:
        return csv_null
    if isinstance(value, str | Decimal):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}" if csv_null == "null" else str(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def new_table(title: str | None, *columns: str) -> Any:
    """A rich table; columns named ``>name`` are right-aligned."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c.lstrip(">"), justify="right" if c.startswith(">") else "left")
    return table


def print_all(*renderables: Any) -> None:
    from rich.console import Console

    console = Console()
    for r in renderables:
        console.print(r)
