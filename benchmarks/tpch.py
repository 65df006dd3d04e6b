"""The TPC-H data the benchmarks share: generated once by ``tpchgen-cli`` (the ``bench`` extra)
as Parquet under a cache folder, the columns the views read kept as memory-mapped Arrow files
beside it (the tables need not fit in this process's memory: at SF 10 they are 7 GB), the
refresh steps, the shards that hold the tables at ``T0``, and DuckDB kept equal to them.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from changeflow.compute import plan as P
from changeflow.compute.expr import Arith, Cmp, Lit, lit
from changeflow.compute.spark_eval import evaluate_spark
from changeflow.compute.types import INT8, from_arrow_schema
from changeflow.storage import ReadCapability, Storage, WriteCapability
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.updates import DIFF, TIME

LEASE = 24 * 3600.0


DAY_MS = 86_400_000


EPOCH = date(1970, 1, 1)


T0 = (date(1998, 8, 3) - EPOCH).days * DAY_MS


Q1_SHIPPED_BY = date(1998, 9, 2)  # DATE '1998-12-01' - 90 days
Q3_SEGMENT, Q3_DATE = "BUILDING", date(1995, 3, 15)
WINDOW_DAYS = 90
REFRESH_SHARE = 0.001


TABLES = {
    "customer": ["c_custkey", "c_mktsegment"],
    "orders": ["o_orderkey", "o_custkey", "o_orderdate", "o_shippriority"],
    "lineitem": [
        "l_orderkey",
        "l_linenumber",
        "l_quantity",
        "l_extendedprice",
        "l_discount",
        "l_tax",
        "l_returnflag",
        "l_linestatus",
        "l_shipdate",
    ],
}


_START = time.perf_counter()


def elapsed() -> float:
    """Seconds since this run started."""
    return time.perf_counter() - _START


def say(text: str) -> None:
    print(f"[{elapsed():7.1f} s] {text}", file=sys.stderr, flush=True)


def generate(scale: float, cache: Path) -> Path:
    """The folder of the TPC-H Parquet files at ``scale``, generated once into ``cache``."""
    folder = cache / f"tpch-sf{scale:g}"
    if all((folder / f"{t}.parquet").exists() for t in TABLES):
        return folder
    tool = shutil.which("tpchgen-cli") or str(Path(sys.executable).with_name("tpchgen-cli"))
    if not Path(tool).exists():
        raise SystemExit("tpchgen-cli is missing: pip install -e '.[bench]' (make bench does)")
    partial = Path(tempfile.mkdtemp(prefix=folder.name, dir=cache))
    say(f"generating TPC-H at scale {scale:g} into {folder}…")
    subprocess.run(
        [tool, "parquet", "-s", f"{scale:g}", "--tables", ",".join(TABLES), "-o", str(partial)],
        check=True,
    )
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def load(folder: Path) -> dict[str, pa.Table]:
    """The columns the views read, strings as plain strings, lineitem ordered by orderkey:
    Arrow files made once from the Parquet, memory-mapped (pages are read as they are used
    and the system may drop them again)."""
    tables = {}
    for name, columns in TABLES.items():
        path = folder / f"{name}.arrow"
        if not path.exists() or pa.ipc.open_file(str(path)).schema.names != columns:
            _write_arrow(folder / f"{name}.parquet", columns, path)
        tables[name] = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    return tables


def _write_arrow(parquet: Path, columns: list[str], path: Path) -> None:
    table = pq.read_table(parquet, columns=columns)
    fields = [
        f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in table.schema
    ]
    table = table.cast(pa.schema(fields))
    if "l_orderkey" in columns:
        keys = table.column("l_orderkey").to_numpy()
        if np.any(keys[1:] < keys[:-1]):
            table = table.sort_by("l_orderkey")
    partial = path.with_suffix(".partial")
    with pa.OSFile(str(partial), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table, max_chunksize=1 << 20)
    partial.rename(path)


def stamped(table: pa.Table, t: int, diff: int) -> pa.Table:
    """``table`` as updates at ``t`` with count ``diff``."""
    n = table.num_rows
    table = table.append_column(TIME, pa.array(np.full(n, t, np.int64)))
    return table.append_column(DIFF, pa.array(np.full(n, diff, np.int64)))


@dataclass
class Refresh:
    """One refresh step: the orders and lineitems inserted and deleted at ``time``."""

    time: int
    inserted: dict[str, pa.Table]
    deleted: dict[str, pa.Table]
    deleted_keys: np.ndarray

    def frame(self, name: str, schema: pa.Schema) -> pa.Table:
        """The step's updates to ``name`` (empty for customer)."""
        parts = [stamped(self.inserted[name], self.time, 1)] if name in self.inserted else []
        parts += [stamped(self.deleted[name], self.time, -1)] if name in self.deleted else []
        if not parts:
            return stamped(schema.empty_table(), self.time, 1)
        return pa.concat_tables(parts)

    def changes(self) -> int:
        return sum(t.num_rows for t in (*self.inserted.values(), *self.deleted.values()))


def refreshes(tables: dict[str, pa.Table], steps: int, seed: int) -> list[Refresh]:
    """``steps`` refresh steps, one day apart after ``T0``: each inserts 0.1% new orders (copies
    of random orders with new keys) with their lineitems and deletes 0.1% of the original
    orders (each at most once) with theirs."""
    rng = np.random.default_rng(seed)
    orders, lineitem = tables["orders"], tables["lineitem"]
    keys = orders.column("o_orderkey").to_numpy()
    line_keys = lineitem.column("l_orderkey").to_numpy()
    k = max(1, round(REFRESH_SHARE * orders.num_rows))
    picked = rng.choice(orders.num_rows, size=2 * k * steps, replace=False)
    next_key = int(keys.max()) + 1
    out = []
    for i in range(steps):
        deleted = picked[2 * i * k : (2 * i + 1) * k]
        templates = picked[(2 * i + 1) * k : (2 * i + 2) * k]
        new_keys = np.arange(next_key, next_key + k, dtype=np.int64)
        next_key += k
        lines, counts = _lines_of(line_keys, keys[templates])
        new_lines = lineitem.take(lines).set_column(
            0, lineitem.schema.field(0), pa.array(np.repeat(new_keys, counts))
        )
        new_orders = orders.take(templates).set_column(
            0, orders.schema.field(0), pa.array(new_keys)
        )
        old_lines, _ = _lines_of(line_keys, keys[deleted])
        out.append(
            Refresh(
                time=T0 + (i + 1) * DAY_MS,
                inserted={"orders": new_orders, "lineitem": new_lines},
                deleted={"orders": orders.take(deleted), "lineitem": lineitem.take(old_lines)},
                deleted_keys=keys[deleted],
            )
        )
    return out


def _lines_of(line_keys: np.ndarray, order_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the lineitems of ``order_keys`` (``line_keys`` sorted), and how many
    each order has."""
    starts = np.searchsorted(line_keys, order_keys, "left")
    ends = np.searchsorted(line_keys, order_keys, "right")
    positions = [np.arange(s, e) for s, e in zip(starts, ends, strict=True)]
    return np.concatenate(positions), ends - starts


@dataclass
class Shards:
    """The benchmark's storage and its capabilities on the three input shards."""

    storage: Storage
    reads: dict[str, ReadCapability]
    writes: dict[str, WriteCapability]
    schemas: dict[str, pa.Schema]

    def append(self, refresh: Refresh) -> None:
        for name, write in self.writes.items():
            self.storage.append(write, refresh.frame(name, self.schemas[name]), refresh.time + 1)

    def recompute(self, plan: P.Plan, t: int, spark: Any) -> list[tuple]:
        """The plan at ``t`` evaluated on Spark from the shards' snapshots (read as they are
        where no diff is negative, as a view's hydration reads them)."""
        reads = self.reads
        frames = {
            n: self.storage.snapshot(reads[n], t, spark, summed=False) for n in plan.collections()
        }
        return evaluate_spark(plan, frames, t).collect()


def load_shards(home: Path, tables: dict[str, pa.Table], master: str) -> Shards:
    """The tables in shards at ``T0``, their since held at ``T0`` (a new view hydrates there)."""
    storage = Storage(
        open_consensus(f"sqlite:{home / 'consensus.sqlite'}"),
        Blob(str(home / "blob")),
        LEASE,
        master,
    )
    reads, writes = {}, {}
    for name, table in tables.items():
        reads[name], writes[name] = storage.create(name, table.schema)
        storage.append(writes[name], stamped(table, T0, 1), T0 + 1)
        storage.downgrade(reads[name], T0)
    return Shards(storage, reads, writes, {n: t.schema for n, t in tables.items()})


def duck_tables(tables: dict[str, pa.Table], path: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB with the same tables (:func:`duck_apply` keeps them equal): in memory, or in
    the database file ``path`` with at most 4 GB of memory (for tables larger than that)."""
    con = duckdb.connect(":memory:" if path is None else str(path))
    con.execute("SET threads TO 2")
    if path is not None:
        con.execute("SET memory_limit = '4GB'")
    for name, table in tables.items():
        con.register("incoming", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM incoming")
        con.unregister("incoming")
    return con


def duck_apply(con: duckdb.DuckDBPyConnection, refresh: Refresh) -> None:
    keys = pa.table({"k": refresh.deleted_keys})
    con.register("gone", keys)
    con.execute("DELETE FROM lineitem WHERE l_orderkey IN (SELECT k FROM gone)")
    con.execute("DELETE FROM orders WHERE o_orderkey IN (SELECT k FROM gone)")
    con.unregister("gone")
    for name, table in refresh.inserted.items():
        con.register("incoming", table)
        con.execute(f"INSERT INTO {name} SELECT * FROM incoming")
        con.unregister("incoming")


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def _plain(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal | float) else value


def same_rows(got: list[tuple], want: list[tuple]) -> str | None:
    """None when the two multisets of rows agree (floats within 1e-9), else what differs."""
    a = sorted((tuple(map(_plain, r)) for r in got), key=repr)
    b = sorted((tuple(map(_plain, r)) for r in want), key=repr)
    if len(a) != len(b):
        return f"{len(a)} rows, DuckDB has {len(b)}"
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            close = (
                math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9)
                if isinstance(u, float) and isinstance(v, float)
                else u == v
            )
            if not close:
                return f"row {x} differs from DuckDB's {y}"
    return None


def output_version(storage: Storage, output: str, t: int) -> dict[tuple, int]:
    """The rows of the output shard at ``t`` with their counts."""
    read, write = storage.acquire_capabilities(output)
    try:
        table = storage.snapshot_table(read, t)
    finally:
        storage.drop(read)
        storage.drop(write)
    data = [table.column(n).to_pylist() for n in table.column_names if not n.startswith("_")]
    counts = table.column(DIFF).to_pylist()
    return dict(zip(zip(*data, strict=True), counts, strict=True))


def output_rows(storage: Storage, output: str, t: int) -> list[tuple]:
    """The rows of the output shard at ``t``, each repeated by its count."""
    return [row for row, c in output_version(storage, output, t).items() for _ in range(c)]


# -- views --------------------------------------------------------------------------------------


def plans(schemas: dict[str, pa.Schema]) -> dict[str, P.Plan]:
    """The three views as plans over the shards' schemas."""
    c = P.Get("customer", from_arrow_schema(schemas["customer"]))
    o = P.Get("orders", from_arrow_schema(schemas["orders"]))
    li = P.Get("lineitem", from_arrow_schema(schemas["lineitem"]))

    def at(plan: P.Plan, i: int):
        return P.col(plan.schema, i)

    shipped = P.Filter(li, (Cmp("<=", at(li, 8), lit(Q1_SHIPPED_BY)),))
    price, disc, tax = at(shipped, 3), at(shipped, 4), at(shipped, 5)
    disc_price = Arith("*", price, Arith("-", lit(1), disc))
    charged = P.Map(
        shipped,
        (("disc_price", disc_price), ("charge", Arith("*", disc_price, Arith("+", lit(1), tax)))),
    )
    q1 = P.Reduce(
        charged,
        (6, 7),
        tuple(
            P.Aggregate(func, None if i is None else at(charged, i))
            for func, i in (
                ("sum", 2),
                ("sum", 3),
                ("sum", 9),
                ("sum", 10),
                ("avg", 2),
                ("avg", 3),
                ("avg", 4),
                ("count", None),
            )
        ),
        (
            "sum_qty",
            "sum_base_price",
            "sum_disc_price",
            "sum_charge",
            "avg_qty",
            "avg_price",
            "avg_disc",
            "count_order",
        ),
    )

    customers = P.Project(P.Filter(c, (Cmp("=", at(c, 1), lit(Q3_SEGMENT)),)), (0,))
    early = P.Filter(o, (Cmp("<", at(o, 2), lit(Q3_DATE)),))
    late = P.Filter(li, (Cmp(">", at(li, 8), lit(Q3_DATE)),))
    lines = P.Project(late, (0, 3, 4))  # l_orderkey, l_extendedprice, l_discount
    # c_custkey 0 | o_orderkey 1, o_custkey 2, o_orderdate 3, o_shippriority 4 | l_orderkey 5…
    joined = P.Join((customers, early, lines), ((0, 2), (1, 5)))
    revenue = P.Map(
        joined, (("revenue", Arith("*", at(joined, 6), Arith("-", lit(1), at(joined, 7)))),)
    )
    per_order = P.Reduce(revenue, (5, 3, 4), (P.Aggregate("sum", at(revenue, 8)),), ("revenue",))
    q3 = P.TopK(per_order, (), (P.Order(3, desc=True), P.Order(1), P.Order(0)), limit=10)

    rows = P.Project(li, (0, 1, 8, 3))  # l_orderkey, l_linenumber, l_shipdate, l_extendedprice
    ship_ms = Arith("*", Arith("-", at(rows, 2), lit(EPOCH)), Lit(DAY_MS, INT8))
    window = P.TemporalFilter(
        rows, (ship_ms,), (Arith("+", ship_ms, Lit(WINDOW_DAYS * DAY_MS, INT8)),)
    )
    return {"q1": q1, "q3": q3, "window": window}


def sql(view: str, tables: dict[str, str], now: int) -> str:
    """The view in DuckDB's SQL over ``tables`` (table expressions by name) at time ``now``."""
    li, o, c = tables["lineitem"], tables["orders"], tables["customer"]
    if view == "q1":
        return f"""
            SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
                sum(l_extendedprice * (1 - l_discount)),
                sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
                avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
            FROM {li} WHERE l_shipdate <= DATE '{Q1_SHIPPED_BY}'
            GROUP BY l_returnflag, l_linestatus"""
    if view == "q3":
        return f"""
            SELECT l_orderkey, o_orderdate, o_shippriority,
                sum(l_extendedprice * (1 - l_discount)) AS revenue
            FROM {c}, {o}, {li}
            WHERE c_mktsegment = '{Q3_SEGMENT}' AND c_custkey = o_custkey
                AND l_orderkey = o_orderkey AND o_orderdate < DATE '{Q3_DATE}'
                AND l_shipdate > DATE '{Q3_DATE}'
            GROUP BY l_orderkey, o_orderdate, o_shippriority
            ORDER BY revenue DESC, o_orderdate, l_orderkey LIMIT 10"""
    ship_ms = f"(l_shipdate - DATE '{EPOCH}') * {DAY_MS}::BIGINT"
    return f"""
        SELECT l_orderkey, l_linenumber, l_shipdate, l_extendedprice FROM {li}
        WHERE {ship_ms} <= {now} AND {now} < {ship_ms} + {WINDOW_DAYS * DAY_MS}"""


# -- the contenders ------------------------------------------------------------------------------
