"""The columnar reader on files, against the reference reader: every format, typed Parquet
columns (nulls, floats, strings), and rows whose hashes collide."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.cdc.chaos import mangle
from changeflow.cdc.columnar import NULL, SEEDS, ColumnarReader, column_hash, read_all
from changeflow.cdc.files import open_source, write_messages
from changeflow.cdc.held import time_order
from changeflow.cdc.messages import Progress, Updates, UpdateTable
from changeflow.cdc.reader import CdcReader
from changeflow.cdc.writer import write_history
from changeflow.errors import CdcConflict, InvalidTime, ProtocolViolation
from changeflow.time import Antichain
from changeflow.updates import DIFF, TIME, canonical_json

A = Antichain


def history(rng: random.Random, steps: int = 40) -> list:
    out, t = [], 0
    for _ in range(steps):
        ups = [
            ((rng.randrange(4), rng.choice(["a", "b", None]), rng.choice([0.5, -0.0, 0.0])),
              t + rng.randrange(3), rng.choice([-1, 1, 2]))
            for _ in range(rng.randrange(6))
        ]  # fmt: skip
        t += rng.randrange(1, 4)
        out.append((ups, A([t])))
    return out


def decoded(messages, reader) -> tuple[list, Antichain]:
    """All updates reported (sorted) and the final frontier."""
    if isinstance(reader, ColumnarReader):
        batches = read_all(reader, messages)
    else:
        batches = [b for m in messages for b in reader.feed(m)]
    return sorted((u for ups, _ in batches for u in ups), key=repr), reader.frontier


@pytest.mark.parametrize("fmt", ["jsonl", "avro", "parquet"])
def test_files_decode_as_with_the_reference(tmp_path: Path, fmt: str) -> None:
    columns = ["id", "name", "x"]
    for seed in range(6):
        rng = random.Random(seed)
        messages = write_history(history(rng), batch_size=rng.randint(1, 5))
        if fmt == "jsonl":
            as_json = [
                Updates(tuple((canonical_json(list(d)), t, r) for d, t, r in m.updates))
                if isinstance(m, Updates)
                else m
                for m in messages
            ]
            messages = as_json
        mangled = mangle(messages, rng, duplication=0.5)
        folder = tmp_path / f"{fmt}{seed}"
        write_messages(folder, mangled, fmt, columns, 3, [rng.randrange(3) for _ in mangled])
        source = open_source([folder])
        tables = list(source.tables())
        if fmt == "parquet":
            assert any(isinstance(m, UpdateTable) for m in tables)  # no tuples made
        expected = decoded(open_source([folder]).messages(), CdcReader(audit=True))
        assert decoded(tables, ColumnarReader(audit=True)) == expected
        assert expected[1] == A()


class CollidingReader(ColumnarReader):
    """With the first seed every row hashes to one of four values: the reader must see the
    collisions, rehash and still answer exactly."""

    def _hash(self, table: pa.Table) -> np.ndarray:
        h = super()._hash(table)
        return h & np.uint64(3) if self._seed == 0 else h


def test_hash_collisions_never_change_the_answer() -> None:
    rng = random.Random(3)
    steps = [([(f"d{i}", t, 1) for i in range(rng.randrange(1, 5))], A([t + 1])) for t in range(30)]
    messages = mangle(write_history(steps, batch_size=4), rng, duplication=0.5)
    reader = CollidingReader()
    assert decoded(messages, reader) == decoded(messages, CdcReader())
    assert reader._seed == 1  # it did collide, and moved on
    conflict = [Updates((("a", 3, 1),)), Updates((("a", 3, -1), ("b", 3, 1)))]
    with pytest.raises(CdcConflict, match="data 'a' at time 3"):
        read_all(CollidingReader(), conflict)


def test_parquet_rows_are_read_as_tables_and_bad_columns_named(tmp_path: Path) -> None:
    table = pa.table({"k": [1, 1, 2], TIME: [0, 0, 1], DIFF: [1, 1, -1]})
    pq.write_table(table, tmp_path / "u.parquet")
    (tmp_path / "p.progress.jsonl").write_text(
        '{"progress": {"lower": [0], "upper": [], "counts": [{"time": 0, "count": 1},'
        ' {"time": 1, "count": 1}]}}\n'
    )
    reader = ColumnarReader()
    batches = read_all(reader, list(open_source([tmp_path]).tables()))
    assert batches == [([((1,), 0, 1), ((2,), 1, -1)], A())]
    assert reader.pending_updates() == 0


def test_updates_at_product_times_take_the_reference_path() -> None:
    from changeflow.time import Product as P

    messages = [
        Updates((("a", P([1, 0]), 1), ("b", P([0, 1]), -1))),
        Progress(A([P([0, 0])]), A(), ((P([1, 0]), 1), (P([0, 1]), 1))),
    ]
    reader = ColumnarReader()
    [(table, frontier)] = [b for m in messages for b in reader.feed(m)]
    assert frontier == A() and pa.types.is_list(table.schema.field(TIME).type)
    assert sorted(reader.triples(table)) == [("a", P([1, 0]), 1), ("b", P([0, 1]), -1)]


def test_memory_stays_bounded_by_unreported_updates_on_a_long_stream() -> None:
    """Reported rows leave the index at once and the table once they outnumber the live."""
    rng = random.Random(5)
    steps = [
        ([(f"k{rng.randrange(50)}", f + rng.randrange(2), rng.choice([-1, 1])) for _ in range(40)],
         A([f + 1]))
        for f in range(400)
    ]  # fmt: skip
    messages = write_history(steps, batch_size=16)
    reader = ColumnarReader()
    reference = CdcReader()
    for m in messages:
        got, want = read_all(reader, [m]), reference.feed(m)
        assert [(sorted(u, key=repr), f) for u, f in got] == [
            (sorted(u, key=repr), f) for u, f in want
        ]
        held = reader._pending.held_rows()
        assert held <= 2 * reader.pending_updates() + 1024 + 16
    assert reader.frontier == A() and reader.pending_updates() == 0


def test_rows_make_row_tuples_even_of_a_column_named_data(tmp_path: Path) -> None:
    table = pa.table({"data": ["x", "y"], TIME: [0, 0], DIFF: [1, -1]})
    pq.write_table(table, tmp_path / "u.parquet")
    (tmp_path / "p.progress.jsonl").write_text(
        '{"progress": {"lower": [0], "upper": [], "counts": [{"time": 0, "count": 2}]}}\n'
    )
    expected = decoded(open_source([tmp_path]).messages(), CdcReader(audit=True))
    reader = ColumnarReader(audit=True)
    got = [
        u
        for m in open_source([tmp_path]).tables()
        for t, _ in reader.feed(m)
        for u in reader.triples(t, rows=True)
    ]
    assert (sorted(got, key=repr), reader.frontier) == expected


VALUES = {
    "int": st.integers(-2, 2),
    "float": st.sampled_from([0.5, 1.0, 2.5]),
    "bool": st.booleans(),
    "str": st.sampled_from(["a", "b"]),
}
WIDTHS = {"int": [pa.int8(), pa.int32(), pa.int64()], "float": [pa.float32(), pa.float64()]}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_typed_columns_and_types_that_change_between_messages(data) -> None:
    """Tables of int, float, bool and string columns with nulls, whose Arrow types differ
    from message to message (widths, all-null columns), decode as the reference decodes."""
    kinds = data.draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3))
    value = st.tuples(*[st.one_of(st.none(), VALUES[k]) for k in kinds])
    steps = data.draw(st.integers(1, 8))
    history = [
        (
            [(d, t + data.draw(st.integers(0, 2)), data.draw(st.sampled_from([-1, 1, 2])))
             for d in data.draw(st.lists(value, max_size=6))],
            A([t + 1]),
        )
        for t in range(steps)
    ]  # fmt: skip
    rng = data.draw(st.randoms())
    messages = mangle(write_history(history, batch_size=rng.randint(1, 4)), rng, 0.5)
    names = [f"c{i}" for i in range(len(kinds))]

    def table(m: Updates) -> UpdateTable:
        columns = {}
        for i, (c, k) in enumerate(zip(names, kinds, strict=True)):
            kind = rng.choice(WIDTHS[k]) if k in WIDTHS else None
            values = [d[i] for d, _, _ in m.updates]
            columns[c] = pa.array(values, None if all(v is None for v in values) else kind)
        times = pa.array([t for _, t, _ in m.updates], pa.int64())
        return UpdateTable(pa.table({**columns, TIME: times, DIFF: [r for *_, r in m.updates]}))

    tables = [table(m) if isinstance(m, Updates) else m for m in messages]
    assert decoded(tables, ColumnarReader(audit=True)) == decoded(messages, CdcReader(audit=True))


def test_a_refused_message_leaves_the_held_rows_as_they_were() -> None:
    first = Updates((("a", 3, 1), ("b", 3, 1)))
    refused = Updates((("c", 3, 1), ("a", 3, -1)))  # c is new, a contradicts the held a
    rest = [Updates((("d", 3, 1), ("c", 3, 2))), Progress(A([0]), A([4]), ((3, 4),))]
    reader = ColumnarReader()
    read_all(reader, [first])
    with pytest.raises(CdcConflict, match="data 'a' at time 3"):
        read_all(reader, [refused])
    assert decoded(rest, reader) == decoded([first, *rest], CdcReader())
    assert reader._seed == 0  # no row of the refused message was left to collide with


@pytest.mark.parametrize("span", [10, 1 << 20, 1 << 40])
def test_time_order_sorts_stably_whatever_the_span(span: int) -> None:
    """The counting pass (a short span), the radix passes and the comparison sort agree with
    a stable sort, ties in arrival order, and give the times in that order."""
    rng = np.random.default_rng(span)
    times = rng.integers(-span, span, 5_000) * 3 + 7
    times[::5] = times[0]  # many ties
    expected = np.argsort(times, kind="stable")
    order, ordered = time_order(times)
    assert np.array_equal(order, expected)
    assert np.array_equal(ordered, times[expected]) and ordered.dtype == times.dtype
    order, ordered = time_order(times[:0])
    assert len(order) == len(ordered) == 0


@pytest.mark.parametrize(
    "column",
    [
        pa.chunked_array([np.array([0, -1, 2**63 - 1, -(2**63), 42], np.int64)]),
        pa.chunked_array([pa.array([1, None, 3], pa.int32()), pa.array([4, 5], pa.int32())]),
        pa.chunked_array([pa.array([1.5, -0.0, 0.0, float("nan"), None, -2.0])]),
        pa.chunked_array([pa.array([True, False, None])]),
    ],
)
def test_numbers_hash_as_pandas_hashes_them(column: pa.ChunkedArray) -> None:
    """Numbers hash bit for bit as pandas' ``hash_array`` hashes their int64 or float64 values
    (key ranges of materializations are cut by these hashes), nulls as NULL, -0.0 as 0.0."""
    if pa.types.is_floating(column.type):
        values = column.cast(pa.float64()).fill_null(0.0).to_numpy() + 0.0
    else:
        values = column.cast(pa.int64()).fill_null(0).to_numpy()
    expected = pd.util.hash_array(values, categorize=False)
    expected[column.is_null().to_numpy(zero_copy_only=False)] = NULL
    assert np.array_equal(column_hash(column, SEEDS[0]), expected)
    assert np.array_equal(column_hash(column, SEEDS[3], np.empty(len(column), np.uint64)), expected)


def outcome(reader, messages) -> tuple[list, str | None]:
    """Every update reported until an error, and the error (its type and text), if any."""
    reported: list = []
    try:
        for m in messages:
            advances = reader.feed(m)
            if isinstance(reader, ColumnarReader):
                advances = [(reader.triples(t), f) for t, f in advances]
            reported += [(sorted(ups, key=repr), f) for ups, f in advances]
    except (CdcConflict, InvalidTime, ProtocolViolation) as e:
        return reported, f"{type(e).__name__}: {e}"
    return reported, None


def corrupt(p: Progress, rng: random.Random) -> Progress:
    """A progress statement with one count changed, dropped or added (int times)."""
    counts = dict(p.counts)
    lo = p.lower.elements[0]
    hi = p.upper.elements[0] if p.upper else lo + 4
    t = rng.randrange(lo, max(hi, lo + 1))
    kind = rng.randrange(3)
    if kind == 0 and counts:
        t = rng.choice(sorted(counts))
        counts[t] = max(0, counts[t] + rng.choice([-1, 1]))
    elif kind == 1 and counts:
        del counts[rng.choice(sorted(counts))]
    elif p.upper and lo <= t < hi:
        counts[t] = counts.get(t, 0) + 1
    pairs = sorted(counts.items(), reverse=rng.random() < 0.5)  # any order is allowed
    return Progress(p.lower, p.upper, tuple((t, c) for t, c in pairs if c))


def test_progress_statements_checked_as_the_reference_checks_them() -> None:
    """Int progress statements, many of them wrong (a count changed, dropped or added), in
    any order and duplicated: the columnar reader reports what the reference reports and
    stops with the same error."""
    errors = 0
    for seed in range(300):
        rng = random.Random(seed)
        steps = [([(i, t + rng.randrange(3), 1) for i in range(rng.randrange(4))], A([t + 3]))
                 for t in range(0, 30, 3)]  # fmt: skip
        messages = mangle(write_history(steps, batch_size=rng.randint(1, 4)), rng, 0.5)
        messages = [  # a copy may differ from the others
            corrupt(m, rng) if isinstance(m, Progress) and rng.random() < 0.1 else m
            for m in messages
        ]
        expected = outcome(CdcReader(), messages)
        assert outcome(ColumnarReader(), messages) == expected, seed
        errors += expected[1] is not None
    assert 30 < errors < 270  # both kinds of stream were tried
