"""The compute benchmark's peer: the same TPC-H views and refresh steps maintained by Pathway.

Runs in its own environment (``.venv-pathway``, from ``pathway-requirements.txt``: Pathway pins
an older pyarrow than changeflow), started by ``compute.py`` with a folder it wrote:

- ``lineitem.parquet``, ``orders.parquet``, ``customer.parquet``: the snapshot at T0, decimals
  as unscaled integers (hundredths) and dates as days since 1970-01-01;
- ``steps/<i>/<table>-<inserted|deleted>.parquet``: each refresh step's changes.

Rows go in through Pathway's Python connector (one subject per view, all tables through it with a
``kind`` column, so that a step's changes are one commit). Pathway's end-of-time callback alone
does not say which commit a time holds, so each commit also adds one marker row that reaches the
view's output (a group of its own): a step is done at the end of the time whose output holds that
step's marker. Timed from the first row pushed until then (for the snapshot, converting its rows
to the connector's dicts is in the time: they are converted as they are pushed, since all at once
they would not fit in memory at SF 1; a step's rows are converted before); the markers are left
out of the rows reported. Sums are of integers (Pathway's sum of doubles drifts from the exact
answer after retractions: its Q1 over doubles came out a whole row's quantity off), so they are
exact, and the averages are divided out of them afterwards. Q3 stops at the revenue per order:
Pathway has no incremental top-k, so the top 10 is taken from the maintained rows after the run
(not timed).

    python pathway_peer.py FOLDER VIEW OUT.json
"""

import json
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pathway as pw
import pyarrow as pa
import pyarrow.parquet as pq

Q1_SHIPPED_BY = 10471  # 1998-09-02 in days since 1970-01-01
Q3_SEGMENT, Q3_DATE = "BUILDING", 9204  # 1995-03-15
MARKER = "~"  # the marker rows' returnflag (Q1) and segment (Q3)
MARKER_KEY = -1  # the marker customer's and order's key (Q3)


TYPES = {
    "l_orderkey": int,
    "l_quantity": int,
    "l_extendedprice": int,
    "l_discount": int,
    "l_tax": int,
    "l_returnflag": str,
    "l_linestatus": str,
    "l_shipdate": int,
    "o_orderkey": int,
    "o_custkey": int,
    "o_orderdate": int,
    "o_shippriority": int,
    "c_custkey": int,
    "c_mktsegment": str,
}
COLUMNS = {  # what each view reads, of every table
    "q1": [c for c in TYPES if c.startswith("l_")],
    "q3": ["c_custkey", "c_mktsegment", "o_orderkey", "o_custkey", "o_orderdate"]
    + ["o_shippriority", "l_orderkey", "l_extendedprice", "l_discount", "l_shipdate"],
}
KEYS = {
    "lineitem": ("l_orderkey", "l_linenumber"),
    "orders": ("o_orderkey",),
    "customer": ("c_custkey",),
}
BATCH = 65_536


def event_schema(view: str) -> type[pw.Schema]:
    """One row of any table the view reads: ``kind`` names the table, ``pk`` is the row's key
    within it (so a deletion retracts exactly the row it names); columns of other tables are
    zero or empty."""
    columns = {"pk": pw.column_definition(dtype=str, primary_key=True)}
    columns["kind"] = pw.column_definition(dtype=str)
    columns |= {c: pw.column_definition(dtype=TYPES[c]) for c in COLUMNS[view]}
    return pw.schema_builder(columns, name=f"{view}_events")


def events(view: str, kind: str, table: pa.Table) -> Iterator[dict]:
    """The rows of ``table`` as the view's events of ``kind``, converted a batch at a time."""
    blank = {c: TYPES[c]() for c in COLUMNS[view]}
    mine = [c for c in COLUMNS[view] if c in table.column_names]
    key = KEYS[kind]
    for batch in table.select(sorted({*mine, *key})).to_batches(BATCH):
        for row in batch.to_pylist():
            pk = f"{kind}:{':'.join(str(row[k]) for k in key)}"
            yield {**blank, **{c: row[c] for c in mine}, "kind": kind, "pk": pk}


def marker_rows(view: str, step: int) -> list[dict]:
    """What each commit adds so that its end shows in the output; the first also adds the
    marker customer and order of Q3."""
    blank = {c: TYPES[c]() for c in COLUMNS[view]}
    line = {**blank, "kind": "lineitem", "pk": f"marker:{step}"}
    if view == "q1":
        return [{**line, "l_returnflag": MARKER, "l_linestatus": MARKER}]
    line.update(l_orderkey=MARKER_KEY, l_shipdate=Q3_DATE + 1)
    rows = [line]
    if step == 0:
        customer = {"c_custkey": MARKER_KEY, "c_mktsegment": Q3_SEGMENT}
        order = {"o_orderkey": MARKER_KEY, "o_custkey": MARKER_KEY}
        rows.append({**blank, "kind": "customer", "pk": "marker:customer", **customer})
        rows.append({**blank, "kind": "orders", "pk": "marker:order", **order})
    return rows


def view_table(view: str, source: pw.Table) -> pw.Table:
    """The view over the events, with a ``marks`` column that counts the marker rows in the
    marker's group (zero elsewhere)."""
    if view == "q1":
        li = source.filter((pw.this.kind == "lineitem") & (pw.this.l_shipdate <= Q1_SHIPPED_BY))
        disc_price = pw.this.l_extendedprice * (100 - pw.this.l_discount)
        return li.groupby(pw.this.l_returnflag, pw.this.l_linestatus).reduce(
            pw.this.l_returnflag,
            pw.this.l_linestatus,
            sum_qty=pw.reducers.sum(pw.this.l_quantity),
            sum_base_price=pw.reducers.sum(pw.this.l_extendedprice),
            sum_disc_price=pw.reducers.sum(disc_price),
            sum_charge=pw.reducers.sum(disc_price * (100 + pw.this.l_tax)),
            sum_disc=pw.reducers.sum(pw.this.l_discount),
            count_order=pw.reducers.count(),
            marks=pw.reducers.count(),
        )
    c = source.filter((pw.this.kind == "customer") & (pw.this.c_mktsegment == Q3_SEGMENT))
    o = source.filter((pw.this.kind == "orders") & (pw.this.o_orderdate < Q3_DATE))
    li = source.filter((pw.this.kind == "lineitem") & (pw.this.l_shipdate > Q3_DATE))
    co = c.join(o, c.c_custkey == o.o_custkey).select(o.o_orderkey, o.o_orderdate, o.o_shippriority)
    col = co.join(li, co.o_orderkey == li.l_orderkey).select(
        li.l_orderkey,
        co.o_orderdate,
        co.o_shippriority,
        revenue=li.l_extendedprice * (100 - li.l_discount),
    )
    return col.groupby(pw.this.l_orderkey, pw.this.o_orderdate, pw.this.o_shippriority).reduce(
        pw.this.l_orderkey,
        pw.this.o_orderdate,
        pw.this.o_shippriority,
        revenue=pw.reducers.sum(pw.this.revenue),
        marks=pw.reducers.count(),
    )


def is_marker(view: str, row: dict) -> bool:
    return row["l_returnflag"] == MARKER if view == "q1" else row["l_orderkey"] == MARKER_KEY


class Progress:
    """The marker count the output has reached, at the end of each Pathway time."""

    def __init__(self) -> None:
        self.seen = 0
        self.pending: dict[int, int] = {}
        self.ready = threading.Condition()

    def on_change(self, marks: int, at: int) -> None:
        self.pending[at] = max(self.pending.get(at, 0), marks)

    def on_time_end(self, at: int) -> None:
        with self.ready:
            for t in [t for t in self.pending if t <= at]:
                self.seen = max(self.seen, self.pending.pop(t))
            self.ready.notify_all()

    def wait_for(self, marks: int) -> None:
        with self.ready:
            self.ready.wait_for(lambda: self.seen >= marks)


class Feed(pw.io.python.ConnectorSubject):
    """Pushes the snapshot, then each step, one commit each, waiting for each to be done."""

    def __init__(self, folder: Path, view: str, tables: list[str], progress: Progress) -> None:
        super().__init__(session_type="upsert")
        self.folder, self.view, self.tables, self.progress = folder, view, tables, progress
        self.timings: list[float] = []

    def _push(self, changes: Iterable[tuple[bool, dict]], step: int) -> None:
        start = time.perf_counter()
        for deleted, row in changes:
            if deleted:
                self.delete(**row)
            else:
                self.next(**row)
        for row in marker_rows(self.view, step):
            self.next(**row)
        self.commit()
        self.progress.wait_for(step + 1)
        self.timings.append(time.perf_counter() - start)

    def run(self) -> None:
        # the snapshot is converted while it is pushed (as a whole it would not fit in memory)
        tables = {name: pq.read_table(self.folder / f"{name}.parquet") for name in self.tables}
        self._push(
            (
                (False, row)
                for name, table in tables.items()
                for row in events(self.view, name, table)
            ),
            0,
        )
        del tables
        steps = sorted((self.folder / "steps").iterdir(), key=lambda p: int(p.name))
        for step, directory in enumerate(steps, start=1):
            changes = []  # a step's rows are converted before its timing starts
            for name in self.tables:
                for change in ("deleted", "inserted"):
                    path = directory / f"{name}-{change}.parquet"
                    if path.exists():
                        rows = events(self.view, name, pq.read_table(path))
                        changes += [(change == "deleted", row) for row in rows]
            self._push(changes, step)


def main() -> None:
    folder, view, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    tables = ["lineitem"] if view == "q1" else ["customer", "orders", "lineitem"]
    progress = Progress()
    feed = Feed(folder, view, tables, progress)
    schema = event_schema(view)
    source = pw.io.python.read(feed, schema=schema, autocommit_duration_ms=None)
    result = view_table(view, source)
    rows: dict = {}

    def on_change(key, row: dict, time: int, is_addition: bool) -> None:
        if is_marker(view, row):
            if is_addition:
                progress.on_change(row["marks"], time)
        elif is_addition:
            rows[key] = row
        elif rows.get(key) == row:
            del rows[key]

    pw.io.subscribe(result, on_change=on_change, on_time_end=progress.on_time_end)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    out.write_text(
        json.dumps(
            {
                "hydration_s": feed.timings[0],
                "steps_s": feed.timings[1:],
                "rows": [{k: v for k, v in r.items() if k != "marks"} for r in rows.values()],
                "pathway": pw.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
