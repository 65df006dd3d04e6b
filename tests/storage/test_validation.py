"""One validation rule for every input path of ``Storage.append`` (see ``storage/frames.py``).

Each bad input is tried on every path where it can be written (triples, dict rows, Arrow
tables, pandas and Spark DataFrames); each must be refused with one ``InvalidInput`` that names
the column, the row and the value, leaving no blob behind and the shard's state unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changeflow.errors import FrontierViolation, InvalidInput
from changeflow.storage import Storage, WriteCapability
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import SqliteConsensus
from changeflow.time import Antichain, Product
from changeflow.updates import DIFF, TIME

SCHEMA = pa.schema(
    [pa.field("key", pa.string(), False), ("value", pa.int64()), ("score", pa.float64())]
)
NAMES = [*SCHEMA.names, TIME, DIFF]
GOOD = [("a", 1, 0.5), ("b", 2, 1.5), ("c", 3, 2.5)]

Row = dict[str, Any]  # one update as a dict of all five columns


def rows(**bad: tuple[int, Any]) -> list[Row]:
    """Three good updates at time 5, with ``column=(row, value)`` put in."""
    out = [{"key": k, "value": v, "score": s, TIME: 5, DIFF: 1} for k, v, s in GOOD]
    for column, (at, value) in bad.items():
        out[at][column] = value
    return out


def as_triples(updates: list[Row]) -> list:
    return [((r["key"], r["value"], r["score"]), r[TIME], r[DIFF]) for r in updates]


def as_dict_rows(updates: list[Row]) -> list:
    data = [{k: v for k, v in r.items() if not k.startswith("_")} for r in updates]
    return [(d, r[TIME], r[DIFF]) for d, r in zip(data, updates, strict=True)]


def as_arrow(updates: list[Row]) -> pa.Table:
    return pa.Table.from_pylist(updates)


def as_record_batch(updates: list[Row]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(updates)


def as_pandas(updates: list[Row]) -> pd.DataFrame:
    return pd.DataFrame(updates)


PATHS: dict[str, Callable[[list[Row]], Any]] = {
    "triples": as_triples,
    "dict rows": as_dict_rows,
    "arrow": as_arrow,
    "record batch": as_record_batch,
    "pandas": as_pandas,
}


def open_storage(
    root: Path, schema: pa.Schema = SCHEMA, first: tuple = ("z", 0, 0.0)
) -> tuple[Storage, WriteCapability]:
    """A SQLite-backed store with shard ``t`` holding the row ``first``, its upper at 5."""
    storage = Storage(SqliteConsensus(root / "consensus.sqlite"), Blob(str(root / "blob")))
    _, write = storage.create("t", schema)
    storage.append(write, [(first, 1, 1)], 5)
    return storage, write


def bad_cell(path: str, column: str, row: int, value: Any) -> tuple[Any, str, int, Any]:
    """Updates on ``path`` with ``value`` in ``column`` at ``row``, and what the error names.

    A column of Arrow or pandas holds one type, so there every row holds ``value`` and the
    first row is named (pandas would otherwise round an int among floats on its own).
    """
    if path in ("triples", "dict rows"):
        return PATHS[path](rows(**{column: (row, value)})), column, row, value
    return PATHS[path]([{**r, column: value} for r in rows()]), column, 0, value


@pytest.fixture
def store(tmp_path: Path) -> tuple[Storage, WriteCapability]:
    return open_storage(tmp_path)


def blob_files(storage: Storage) -> set[str]:
    """Every file under the blob root, partial or not."""
    return {str(p.relative_to(storage.blob.root)) for p in Path(storage.blob.root).rglob("*")}


def same(a: Any, b: Any) -> bool:
    return a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )


def refused(
    storage: Storage,
    write: WriteCapability,
    updates: Any,
    column: str,
    row: Any,
    value: Any,
    shown: str | None = None,
) -> InvalidInput:
    """Append ``updates``; assert one InvalidInput naming column, row and value, and that no
    blob was written and the shard did not change."""
    state, files = storage.state("t"), blob_files(storage)
    with pytest.raises(InvalidInput) as caught:
        storage.append(write, updates, 9)
    error = caught.value
    assert (error.column, error.row) == (column, row), error
    assert same(error.value, value), error
    assert f"column {column}" in str(error) and f"row {row}" in str(error), error
    assert (shown or ("NULL" if value is None else repr(value))) in str(error), error
    assert storage.state("t") == state
    assert blob_files(storage) == files
    assert write.frontier.elements == (5,)
    return error


# -- each case on each path -------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_float_into_an_int_column_is_never_truncated(store, path: str) -> None:
    refused(*store, PATHS[path](rows(value=(1, 1.9))), "value", 1, 1.9)


@pytest.mark.parametrize("path", PATHS)
def test_a_fractional_diff_is_refused(store, path: str) -> None:
    refused(*store, PATHS[path](rows(_diff=(2, 0.5))), DIFF, 2, 0.5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("column", [DIFF, TIME])
def test_a_bool_diff_or_time_is_refused(store, path: str, column: str) -> None:
    refused(*store, *bad_cell(path, column, 1, True))


@pytest.mark.parametrize("path", ["triples", "dict rows", "arrow", "record batch"])
def test_a_float_time_is_refused(store, path: str) -> None:
    refused(*store, PATHS[path](rows(_time=(0, 6.5))), TIME, 0, 6.5)


@pytest.mark.parametrize("path", PATHS)
def test_null_in_a_not_null_column_is_refused_before_writing(store, path: str) -> None:
    refused(*store, PATHS[path](rows(key=(1, None))), "key", 1, None)


@pytest.mark.parametrize("path", PATHS)
def test_a_null_diff_is_refused_before_writing(store, path: str) -> None:
    refused(*store, PATHS[path](rows(_diff=(2, None))), DIFF, 2, None)


@pytest.mark.parametrize("path", PATHS)
def test_a_string_is_not_parsed_as_a_number(store, path: str) -> None:
    refused(*store, *bad_cell(path, "value", 2, "7"))


@pytest.mark.parametrize("path", PATHS)
def test_an_int_that_a_float_column_cannot_hold_exactly_is_refused(store, path: str) -> None:
    refused(*store, *bad_cell(path, "score", 1, 2**53 + 1))


@pytest.mark.parametrize("path", ["triples", "dict rows"])
def test_an_int_beyond_int64_is_refused(store, path: str) -> None:
    refused(*store, PATHS[path](rows(value=(0, 2**64))), "value", 0, 2**64)


def test_a_misspelled_dict_column_is_refused(store) -> None:
    updates = as_dict_rows(rows())
    updates[1] = ({"key": "b", "valeu": 2, "score": 1.5}, 5, 1)
    refused(*store, updates, "valeu", 1, 2)


def test_a_missing_dict_column_is_refused(store) -> None:
    updates = as_dict_rows(rows())
    updates[2] = ({"key": "c", "score": 2.5}, 5, 1)
    refused(*store, updates, "value", 2, None, shown="missing")


@pytest.mark.parametrize("path", ["arrow", "record batch", "pandas"])
def test_a_misspelled_frame_column_is_refused(store, path: str) -> None:
    storage, write = store
    updates = [{("valeu" if k == "value" else k): v for k, v in r.items()} for r in rows()]
    state, files = storage.state("t"), blob_files(storage)
    with pytest.raises(InvalidInput, match=r"missing \['value'\]; unexpected \['valeu'\]"):
        storage.append(write, PATHS[path](updates), 9)
    assert storage.state("t") == state and blob_files(storage) == files


@pytest.mark.parametrize("path", PATHS)
def test_lossless_values_are_stored_exactly(store, path: str) -> None:
    storage, write = store
    updates = rows(value=(0, 7.0))  # an integral float into the int column
    updates = [{**r, "score": i} for i, r in enumerate(updates)]  # exact ints into the float one
    storage.append(write, PATHS[path](updates), 9)
    read, _ = storage.acquire_capabilities("t")
    got = {(r["key"], r["value"], r["score"]) for r in storage.snapshot_table(read, 8).to_pylist()}
    assert got == {("z", 0, 0.0), ("a", 7, 0.0), ("b", 2, 1.0), ("c", 3, 2.0)}
    assert all(type(v) is int for _, v, _ in got) and all(type(s) is float for *_, s in got)


@pytest.mark.parametrize("path", ["triples", "arrow"])
def test_a_float_into_a_narrower_float_column_rounds_but_never_overflows(
    tmp_path: Path, path: str
) -> None:
    storage, write = open_storage(tmp_path, pa.schema([("w", pa.float32())]), (0.5,))
    to = {
        "triples": lambda ws: [((w,), 5, 1) for w in ws],
        "arrow": lambda ws: pa.table({"w": ws, TIME: [5] * len(ws), DIFF: [1] * len(ws)}),
    }[path]
    refused(storage, write, to([0.5, 1e300]), "w", 1, 1e300)
    storage.append(write, to([0.1, float("inf")]), 9)
    read, _ = storage.acquire_capabilities("t")
    got = storage.snapshot_table(read, 8).column("w").to_pylist()
    assert got == [0.5, pytest.approx(0.1), float("inf")]


def test_nulls_in_a_nullable_column_are_kept(store) -> None:
    storage, write = store
    storage.append(write, as_pandas(rows(value=(1, None))), 9)
    read, _ = storage.acquire_capabilities("t")
    assert {r["key"]: r["value"] for r in storage.snapshot_table(read, 8).to_pylist()} == {
        "z": 0,
        "a": 1,
        "b": None,
        "c": 3,
    }


# -- the row named is the first bad one, on any path --------------------------------------------

BAD = {  # column -> values no path may store there, with what the error names
    "value": [1.9, float("nan"), "x", 2**63],
    "key": [None, 3],
    DIFF: [0.5, None],
    TIME: [None, 5.5, -1],
}


@settings(max_examples=40)
@given(size=st.integers(1, 12), data=st.data(), path=st.sampled_from(sorted(PATHS)))
def test_the_first_bad_row_is_named(tmp_path_factory, size: int, data, path: str) -> None:
    column = data.draw(st.sampled_from(sorted(BAD)))
    value = data.draw(st.sampled_from(BAD[column]))
    if path == "pandas" and isinstance(value, float) and math.isnan(value):
        return  # pandas holds a missing value as NaN: there it is NULL, not a bad value
    at = sorted(data.draw(st.sets(st.integers(0, size - 1), min_size=1)))
    good = [
        {"key": f"k{i}", "value": i, "score": i / 2, TIME: 5 + i % 3, DIFF: 1} for i in range(size)
    ]
    updates = [{**r, column: value} if i in at else r for i, r in enumerate(good)]
    try:
        table = PATHS[path](updates)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return  # Arrow itself cannot hold this mixture in one column; the other paths can
    refused(*open_storage(tmp_path_factory.mktemp("v")), table, column, at[0], value)


# -- Spark -------------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_frames_obey_the_same_rule(spark, store) -> None:
    storage, write = store

    def frame(updates: list[Row], value="long", score="double", diff="long") -> Any:
        types = {"key": "string", "value": value, "score": score, TIME: "long", DIFF: diff}
        python = {"string": str, "long": int, "double": float}
        return spark.createDataFrame(
            [tuple(_as(python[types[c]], r[c]) for c in NAMES) for r in updates],
            ", ".join(f"{c} {types[c]}" for c in NAMES),
        )

    for updates, column, value in [
        (frame(rows(value=(1, 1.9)), value="double"), "value", 1.9),
        (frame(rows(score=(2, 2**53 + 1)), score="long"), "score", 2**53 + 1),
        (frame(rows(key=(2, None))), "key", None),
        (frame(rows(_diff=(0, None))), DIFF, None),
    ]:
        error = refused(storage, write, updates, column, _row_json(updates, column, value), value)
        assert error.row.startswith("{")
    for updates, message in [
        (frame(rows(_diff=(1, 0.5)), diff="double"), "column _diff is double, diffs are integers"),
        (
            frame(rows()).withColumnRenamed("value", "valeu"),
            r"missing \['value'\]; unexpected \['valeu'\]",
        ),
    ]:
        state, files = storage.state("t"), blob_files(storage)
        with pytest.raises(InvalidInput, match=message):
            storage.append(write, updates, 9)
        assert storage.state("t") == state and blob_files(storage) == files
    # the checks ride on the write: a time beyond the new upper is found once the parts are
    # written, and they are deleted before the error
    state, files = storage.state("t"), blob_files(storage)
    with pytest.raises(FrontierViolation, match="at or beyond the new upper"):
        storage.append(write, frame(rows(_time=(1, 9))), 9)
    assert storage.state("t") == state and blob_files(storage) == files

    lossless = frame(rows(value=(0, 7.0)), value="double").selectExpr(
        "key", "value", "score", "cast(_time as int) as _time", "_diff"
    )
    storage.append(write, lossless, 9)  # integral doubles and int times cast without loss
    read, _ = storage.acquire_capabilities("t")
    got = {r["key"]: r["value"] for r in storage.snapshot_table(read, 8).to_pylist()}
    assert got == {"z": 0, "a": 7, "b": 2, "c": 3}


def _row_json(frame: Any, column: str, value: Any) -> str:
    """The JSON text of the bad row: a DataFrame has no index, so the row names itself."""
    from pyspark.sql import functions as F

    bad = F.col(column).isNull() if value is None else F.col(column) == value
    return frame.where(bad).select(F.to_json(F.struct(*frame.columns))).first()[0]


def _as(kind: type, value: Any) -> Any:
    return None if value is None else kind(value)


# -- frontiers built by hand ------------------------------------------------------------------

FORGED = {
    "float": Antichain([9.0]),
    "beyond 2^63": Antichain([2**70]),
    "None": Antichain([None]),
    "bool": Antichain([True]),
    "string": Antichain(["9"]),
    "bool coordinate": Antichain([Product((True,))]),
    "no coordinates": Antichain([Product(())]),
    "no elements": Antichain.__new__(Antichain),
}


@pytest.mark.parametrize("forged", FORGED)
def test_a_forged_frontier_is_refused_and_the_shard_stays_readable(store, forged: str) -> None:
    """A hand-built frontier with a real write capability is an InvalidInput, as a new upper
    and as the capability's frontier; nothing is written and the shard still loads."""
    storage, write = store
    state, files = storage.state("t"), blob_files(storage)
    with pytest.raises(InvalidInput):
        storage.append(write, as_triples(rows()), FORGED[forged])
    with pytest.raises(InvalidInput):
        storage.downgrade(write, FORGED[forged])
    real, write._frontier = write._frontier, FORGED[forged]
    with pytest.raises(InvalidInput):
        storage.append(write, as_triples(rows()), 9)
    write._frontier = real
    assert storage.state("t") == state
    assert blob_files(storage) == files
    storage.append(write, as_triples(rows()), 9)
    assert storage.state("t").upper == Antichain([9])


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([pa.int8(), pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_()]),
    st.booleans(),
    st.lists(
        st.one_of(
            st.none(),
            st.integers(-(2**64), 2**64),
            st.floats(allow_nan=False),
            st.text(max_size=3),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_plain_python_values_take_the_rule_s_path_result(
    kind: pa.DataType, nullable: bool, values: list
) -> None:
    """Python values of a plain column built directly (an int for an integer, a float for a
    double, a str for text) come out as the rule's general path gives them: the same column
    or the same refusal."""
    from changeflow.storage import frames

    field = pa.field("c", kind, nullable)

    def built(exact: dict) -> Any:
        saved, frames._EXACT = frames._EXACT, exact
        try:
            return frames._from_values(list(values), field, "t")
        except InvalidInput as e:
            return str(e)
        finally:
            frames._EXACT = saved

    assert built({}) == built(frames._EXACT)
