"""Peers the benchmarks run beside changeflow: a throwaway PostgreSQL 15 server from the
machine's binaries (the test suite's ``tests/postgres_server.py``), and Pathway maintaining the
TPC-H views (``pathway_peer.py``, in its own environment) over the same snapshot and steps."""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tpch import EPOCH, Refresh

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def postgres_server(say) -> Iterator[str | None]:  # noqa: ANN001
    """The URL of a throwaway PostgreSQL server; None (said with ``say``) if none starts here."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    try:
        from postgres_server import throwaway_postgres

        say("starting a throwaway PostgreSQL server…")
        server = throwaway_postgres()
        url = server.__enter__()
    except (ImportError, RuntimeError) as e:
        say(f"PostgreSQL skipped: {str(e).splitlines()[0]}")
        yield None
        return
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


# -- the peer ------------------------------------------------------------------------------------


def peer_table(table: pa.Table) -> pa.Table:
    """``table`` as the peer reads it: decimals (two places) as integer hundredths, dates as days
    since 1970-01-01."""
    columns = []
    for column in table.columns:
        if pa.types.is_decimal(column.type):
            column = pc.multiply(column, 100).cast(pa.int64())
        elif pa.types.is_date32(column.type):
            column = column.cast(pa.int32())
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def write_peer_inputs(folder: Path, tables: dict[str, pa.Table], steps: list[Refresh]) -> None:
    """The snapshot and the refresh steps as Parquet files for ``pathway_peer.py``."""
    for name, table in tables.items():
        pq.write_table(peer_table(table), folder / f"{name}.parquet")
    for i, refresh in enumerate(steps, start=1):
        directory = folder / "steps" / str(i)
        directory.mkdir(parents=True)
        for change, parts in (("inserted", refresh.inserted), ("deleted", refresh.deleted)):
            for name, table in parts.items():
                pq.write_table(peer_table(table), directory / f"{name}-{change}.parquet")


def run_peer(python: Path, folder: Path, view: str, budget: float) -> dict:
    """Pathway maintaining ``view`` over the peer inputs: hydration, step times and its rows (or
    why not)."""
    out = folder / f"{view}.json"
    command = [str(python), str(HERE / "pathway_peer.py"), str(folder), view, str(out)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {budget:.0f} s"}
    if done.returncode:
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        return {"error": (errors or done.stderr.strip().splitlines() or ["failed"])[-1]}
    result = json.loads(out.read_text())
    result["step_s"] = statistics.median(result["steps_s"])
    return result


def peer_rows(view: str, rows: list[dict]) -> list[tuple]:
    """The peer's rows as the view's rows: integer sums scaled back, averages divided out of
    them; Q3 its top 10, dates back as dates."""
    if view == "q1":
        out = []
        for r in rows:
            n = r["count_order"]
            qty, price = r["sum_qty"] / 100, r["sum_base_price"] / 100
            disc_price, charge = r["sum_disc_price"] / 10**4, r["sum_charge"] / 10**6
            key = (r["l_returnflag"], r["l_linestatus"])
            averages = (qty / n, price / n, r["sum_disc"] / 100 / n)
            out.append((*key, qty, price, disc_price, charge, *averages, n))
        return out
    ranked = sorted(rows, key=lambda r: (-r["revenue"], r["o_orderdate"], r["l_orderkey"]))[:10]
    return [
        (
            r["l_orderkey"],
            date.fromordinal(EPOCH.toordinal() + r["o_orderdate"]),
            r["o_shippriority"],
            r["revenue"] / 10**4,
        )
        for r in ranked
    ]
