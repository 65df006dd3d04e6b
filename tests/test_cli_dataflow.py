"""``changeflow dataflow list|show``: what a view's dataflow reports, as the shard commands do."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

from changeflow.cli import main
from changeflow.compute import plan as P
from changeflow.compute.dataflow import drop_view, maintain_view
from changeflow.compute.types import INT4, Column
from changeflow.config import Config
from changeflow.storage import Storage

R = P.Get("r", (Column("k", INT4), Column("v", INT4)))
PLAN = P.Reduce(R, (0,), (P.Aggregate("count"),))


def run(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["dataflow", *args, "--home", str(home)])
    return result.exit_code, result.output


def test_list_and_show_what_a_dataflow_reports(tmp_path: Path) -> None:
    storage = Storage.open(Config.load(home=str(tmp_path)))
    _, write = storage.create("r", pa.schema([("k", pa.int32()), ("v", pa.int32())]))
    storage.append(write, [((1, 1), 0, 1), ((1, 2), 1, 1), ((2, 3), 2, 1)], 3)
    flow = maintain_view(storage, "counts", PLAN, "counts_out")
    flow.run(until=3)
    flow.close()
    code, out = run(tmp_path, "list", "--format", "json")
    assert code == 0, out
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["name"] == "counts" and row["state"] == "stopped" and row["output"] == "counts_out"
    assert row["frontier"] == "[3]" and row["lag"] == 0 and row["inputs"] == "r"
    assert row["arranged"] == 2 and row["steps"] >= 1
    code, out = run(tmp_path, "show", "counts")
    assert code == 0, out
    assert "Reduce group_by=[#0] count(*)" in out and "recent steps (ms)" in out
    code, out = run(tmp_path, "show", "nope")
    assert code == 1 and "no dataflow named 'nope'; the dataflows are: counts" in out
    drop_view(storage, "counts", PLAN)
    storage.close()
    assert run(tmp_path, "list", "--format", "json") == (0, "")


def test_list_on_a_missing_home_creates_nothing(tmp_path: Path) -> None:
    code, out = run(tmp_path / "typo", "list")
    assert code == 1 and "no changeflow data" in out
    assert not (tmp_path / "typo").exists()
