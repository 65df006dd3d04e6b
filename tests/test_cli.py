"""The command line, run as a user runs it (a subprocess for the error paths)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from changeflow.cli import main

HISTORY = [
    {"data": {"id": 1, "name": "a"}, "time": 0, "diff": 1},
    {"data": {"id": 2, "name": "b"}, "time": 0, "diff": 1},
    {"frontier": [1]},
    {"data": {"id": 1, "name": "a"}, "time": 1, "diff": -1},
    {"data": {"name": "A", "id": 1}, "time": 1, "diff": 1},
    {"frontier": [3]},
    {"data": {"id": 2, "name": "b"}, "time": 4, "diff": -1},
    {"data": {"id": 2, "name": "b"}, "time": 4, "diff": -1},
]
DECODED = [
    [{"id": 1, "name": "a"}, 0, 1],
    [{"id": 2, "name": "b"}, 0, 1],
    [{"id": 1, "name": "A"}, 1, 1],
    [{"id": 1, "name": "a"}, 1, -1],
    [{"id": 2, "name": "b"}, 4, -2],
]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "changeflow.cli", *args], capture_output=True, text=True
    )


def union(stdout: str) -> tuple[list, list]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    updates = sorted((u for line in lines for u in line["updates"]), key=json.dumps)
    return updates, lines[-1]["frontier"]


@pytest.mark.parametrize("fmt", ["jsonl", "avro", "parquet"])
def test_encode_chaos_decode_stats(tmp_path: Path, fmt: str) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in HISTORY))
    runner = CliRunner()
    enc = tmp_path / "enc"
    args = ["cdc", "encode", str(history), "--out", str(enc), "--format", fmt]
    result = runner.invoke(main, [*args, "--batch-size", "1", "--files", "2", "--close"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["cdc", "chaos", str(enc), str(tmp_path / "c"), "--seed", "4"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["cdc", "decode", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    updates, frontier = union(result.stdout)
    assert frontier == [] and updates == sorted(DECODED, key=json.dumps)
    result = runner.invoke(main, ["cdc", "stats", str(tmp_path / "c")])
    assert "distinct updates: 5" in result.stdout and "distinct times: 3" in result.stdout
    assert "completed frontier: []" in result.stdout


def test_decode_without_close_stops_at_the_last_frontier(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in HISTORY))
    runner = CliRunner()
    runner.invoke(main, ["cdc", "encode", str(history), "--out", str(tmp_path / "e")])
    result = runner.invoke(main, ["cdc", "decode", str(tmp_path / "e")])
    updates, frontier = union(result.stdout)
    assert frontier == [3] and len(updates) == 4
    assert "complete only up to frontier [3]" in result.stderr


def test_product_times(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {"updates": [{"data": "x", "time": [0, 1], "diff": 1}]},
                {"updates": [{"data": "y", "time": [1, 0], "diff": 1}]},
                {
                    "progress": {
                        "lower": [[0, 0]],
                        "upper": [[0, 2], [2, 0]],
                        "counts": [{"time": [0, 1], "count": 1}, {"time": [1, 0], "count": 1}],
                    }
                },
            ]
        )
    )
    result = CliRunner().invoke(main, ["cdc", "decode", str(tmp_path)])
    assert result.exit_code == 0, result.output
    updates, frontier = union(result.stdout)
    assert frontier == [[0, 2], [2, 0]]
    assert updates == [["x", [0, 1], 1], ["y", [1, 0], 1]]


CONFLICTS = {
    "two diffs": [
        {"updates": [{"data": "x", "time": 1, "diff": 1}]},
        {"progress": {"lower": [0], "upper": [5], "counts": [{"time": 1, "count": 1}]}},
        {"updates": [{"data": "x", "time": 1, "diff": 2}]},
    ],
    "disagreeing progress": [
        {"progress": {"lower": [0], "upper": [5], "counts": [{"time": 1, "count": 1}]}},
        {"updates": [{"data": "x", "time": 1, "diff": 1}]},
        {"progress": {"lower": [0], "upper": [3], "counts": [{"time": 1, "count": 2}]}},
    ],
    "too many updates": [
        {"progress": {"lower": [0], "upper": [5], "counts": [{"time": 1, "count": 1}]}},
        {"updates": [{"data": "x", "time": 1, "diff": 1}, {"data": "y", "time": 1, "diff": 1}]},
    ],
    "uncounted update": [
        {"progress": {"lower": [0], "upper": [5], "counts": []}},
        {"updates": [{"data": "x", "time": 1, "diff": 1}]},
    ],
}


@pytest.mark.parametrize("case", CONFLICTS)
def test_conflicts_print_one_line_and_no_history(tmp_path: Path, case: str) -> None:
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(m) for m in CONFLICTS[case]))
    result = run("cdc", "decode", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "time 1" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["cdc", "decode", "/nonexistent"], "no such file"),
        (["cdc", "decode", "--format", "avro", "{dir}"], "no avro files"),
        (["cdc", "chaos", "{dir}", "{dir}"], "not empty"),
    ],
)
def test_user_mistakes_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "m.jsonl").write_text('{"updates": []}\n')
    result = run(*(a.format(dir=tmp_path) for a in args))
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_history_line_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "h.jsonl").write_text('{"frontier": [1]}\n{"data": 1, "time": "x", "diff": 1}\n')
    result = run("cdc", "encode", str(tmp_path / "h.jsonl"), "--out", str(tmp_path / "o"))
    assert result.returncode == 1 and "line 2" in result.stderr
    assert not (tmp_path / "o").exists()


def one_line_error(result: subprocess.CompletedProcess, *expected: str) -> None:
    """The command failed with exit status 1 and one line on stderr holding ``expected``."""
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def test_non_utf8_json_lines_are_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"updates": [{"data": "a", "time": 0, "diff": 1}]}).encode()
    (tmp_path / "m.jsonl").write_bytes(good + b'\n{"updates": [{"data": "\xff", "time": 0}]}\n')
    one_line_error(run("cdc", "decode", str(tmp_path)), "m.jsonl:2", "not UTF-8")
    (tmp_path / "h.jsonl").write_bytes(b'{"frontier": [1]}\n"\xfe"\n')
    result = run("cdc", "encode", str(tmp_path / "h.jsonl"), "--out", str(tmp_path / "o"))
    one_line_error(result, "line 2", "not UTF-8")


def test_a_parquet_file_with_string_times_is_one_line(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"k": [1], "_time": ["0"], "_diff": [1]})
    pq.write_table(table, tmp_path / "u.parquet")
    one_line_error(run("cdc", "decode", str(tmp_path)), "u.parquet", "'_time'", "integers")


@pytest.mark.parametrize("fmt", ["parquet", "avro", "jsonl"])
@pytest.mark.parametrize("diff", ["100000000000000000000000", "1e23"])
def test_huge_diffs_are_refused_before_any_file_is_written(
    tmp_path: Path, fmt: str, diff: str
) -> None:
    lines = [json.dumps(line) for line in HISTORY[:3]]
    lines.insert(2, '{"data": {"id": 3, "name": "c"}, "time": 0, "diff": ' + diff + "}")
    (tmp_path / "h.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    result = run("cdc", "encode", str(tmp_path / "h.jsonl"), "--out", str(out), "--format", fmt)
    one_line_error(result, "line 3", "diff")
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["parquet", "avro"])
def test_a_diff_that_consolidates_beyond_64_bits_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    big = {"data": {"id": 1}, "time": 0, "diff": 2**62}
    lines = [{"data": {"id": 0}, "time": 0, "diff": 1}, big, big, {"frontier": [1]}]
    (tmp_path / "h.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    out.mkdir()
    args = ["--format", fmt, "--batch-size", "1", "--files", "2"]
    result = run("cdc", "encode", str(tmp_path / "h.jsonl"), "--out", str(out), *args)
    one_line_error(result, "beyond 64 bits")
    assert list(out.iterdir()) == []


def test_updates_in_json_lines_beside_parquet_are_one_line_naming_both(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in HISTORY))
    for fmt in ("jsonl", "parquet"):
        out = str(tmp_path / "cdc" / fmt)
        assert run("cdc", "encode", str(history), "--out", out, "--format", fmt).returncode == 0
    result = run("cdc", "decode", str(tmp_path / "cdc"))
    one_line_error(result, "part-00000.jsonl:1", "JSON-lines", "Parquet")
    result = run("cdc", "decode", str(tmp_path / "cdc"), "--format", "jsonl")
    assert result.returncode == 0, result.stderr


def test_encode_refuses_a_non_empty_folder_unless_overwrite(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in HISTORY))
    out = tmp_path / "out"
    args = ["cdc", "encode", str(history), "--out", str(out), "--close"]
    assert run(*args, "--files", "3").returncode == 0
    one_line_error(run(*args), "not empty", "--overwrite")
    (out / "notes.md").write_text("mine")
    result = run(*args, "--overwrite")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.md", "part-00000.jsonl"]
    decoded = run("cdc", "decode", str(out))
    assert union(decoded.stdout) == (sorted(DECODED, key=json.dumps), [])


def test_ingest_appends_once_and_refuses_a_mismatch_in_one_line(tmp_path: Path) -> None:
    import pyarrow as pa

    from changeflow.config import Config
    from changeflow.storage import Storage

    home = str(tmp_path / "home")
    storage = Storage.open(Config.load(home=home))
    storage.create("people", pa.schema([("name", pa.string()), ("id", pa.int64())]), "c")
    storage.create("other", pa.schema([("id", pa.int64()), ("title", pa.string())]), "c")
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in HISTORY))
    cdc = str(tmp_path / "cdc")
    assert run("cdc", "encode", str(history), "--out", cdc, "--format", "parquet").returncode == 0
    first = run("cdc", "ingest", cdc, "--into", "people", "--home", home)
    assert first.returncode == 0, first.stderr
    assert "appended 4 updates to shard 'people'" in first.stdout and "-> [3]" in first.stdout
    again = run("cdc", "ingest", cdc, "--into", "people", "--home", home)
    assert "holds this history already (upper [3])" in again.stdout
    one_line_error(run("cdc", "ingest", cdc, "--into", "other", "--home", home), "'title'")
    assert storage.state("other").upper.to_json() == [0]
    one_line_error(run("cdc", "ingest", cdc, "--into", "nobody", "--home", home), "no shard")
    storage.close()
