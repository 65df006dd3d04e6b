"""A dataflow on a real Spark cluster: a standalone master and two workers started from
pyspark's own jars on 127.0.0.1, a view with a join and an aggregate hydrated on the cluster
and stepped through appends, exact at every time against the reference evaluator."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START_TIMEOUT = 90.0  # seconds for the master and both workers to come up on a loaded machine
RUN_TIMEOUT = 240.0  # seconds for the view to hydrate and step on the cluster
WORKERS = 2

# The child process: the view over r and s, hydrated on the cluster, then stepped through
# appends; the output checked at every time against the reference evaluator.
CHILD = r"""
import sys
import time
from pathlib import Path

import pyarrow as pa

from changeflow.collection import PTVC
from changeflow.compute import plan as P
from changeflow.compute.dataflow import maintain_view
from changeflow.compute.evaluate import evaluate
from changeflow.compute.expr import Arith, Cmp, lit
from changeflow.compute.types import INT4, Column
from changeflow.spark import get_spark
from changeflow.storage import Storage
from changeflow.storage.blob import Blob
from changeflow.storage.consensus import open_consensus
from changeflow.time import Antichain

root = Path(sys.argv[1])
TIMES = 6
schema = pa.schema([("k", pa.int32()), ("v", pa.int32())])
r = P.Get("r", (Column("k", INT4), Column("v", INT4)))
s = P.Get("s", (Column("k", INT4), Column("w", INT4)))
joined = P.Join((r, s), ((0, 2),))  # r.k, r.v, s.k, s.w
kept = P.Filter(joined, (Cmp(">", P.col(joined.schema, 3), lit(1)),))
total = P.Map(kept, (("vw", Arith("+", P.col(kept.schema, 1), P.col(kept.schema, 3))),))
plan = P.Reduce(
    total,
    (0,),
    (P.Aggregate("count"), P.Aggregate("sum", P.col(total.schema, 4)),
     P.Aggregate("max", P.col(total.schema, 1))),
    ("n", "sum_vw", "max_v"),
)
history = {
    "r": [((i % 7, i), i % TIMES, 1) for i in range(60)]
    + [((i % 7, i), 3 + i % 3, -1) for i in range(0, 30, 4)],
    "s": [((i % 5, i % 4), i % TIMES, 1) for i in range(25)]
    + [((i % 5, i % 4), 4, -1) for i in range(0, 10, 3)],
}
storage = Storage(open_consensus(f"sqlite:{root / 'consensus.sqlite'}"), Blob(str(root / "blob")))
writes = {}
for name in history:
    _, writes[name] = storage.create(name, schema)


def append_until(lower, upper):
    for name, write in writes.items():
        storage.append(write, [u for u in history[name] if lower <= u[1] < upper], upper)


cut = 2
append_until(0, cut)
maintain_view(storage, "v", plan, "out").close()  # installs the output at since 0
storage.register_reader("out", "test:checker", "the test reads every time")
started = time.monotonic()
spark = get_spark()
phases = {"session": time.monotonic() - started}
flow = maintain_view(storage, "v", plan, "out", spark=spark)
phases["hydration"] = time.monotonic() - started - sum(phases.values())
for upper in range(cut + 1, TIMES + 1):  # one append a step
    append_until(upper - 1, upper)
    flow.run(until=upper)
flow.close()
phases["steps"] = time.monotonic() - started - sum(phases.values())
master = spark.sparkContext.master
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # less the driver
inputs = {}
for name, updates in history.items():
    inputs[name] = PTVC.empty(name=name)
    inputs[name].append(updates, Antichain([TIMES]))
read, _ = storage.acquire_capabilities("out")
for t in range(TIMES):
    got = storage.snapshot_table(read, t).to_pylist()
    rows = {tuple(row[c] for c in row if not c.startswith("_")): row["_diff"] for row in got}
    want = evaluate(plan, {n: inputs[n].read(t) for n in inputs}, t)
    assert want, f"the view is empty at {t}: the test checks nothing"
    assert rows == dict(want), f"time {t}: got {rows}, want {dict(want)}"
shown = ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())
print(f"ok master={master} executors={executors} steps={flow.stats.steps}: {shown}")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """Stop a daemon and its JVM (spark-class execs java, in its own process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def standalone_cluster(work: Path) -> Iterator[str]:
    """A standalone master and two one-core workers on 127.0.0.1; yields the master URL."""
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "PYSPARK_PYTHON": sys.executable,
    }
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[subprocess.Popen] = []

    def start(log: Path, *args: str) -> None:
        with open(log, "wb") as out:
            daemons.append(
                subprocess.Popen(
                    [str(spark_class), *args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=work,
                    start_new_session=True,
                )
            )

    master_log = work / "master.log"
    try:
        start(master_log, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", "0")  # fmt: skip
        for i in range(WORKERS):
            start(work / f"worker{i}.log", "org.apache.spark.deploy.worker.Worker", "--host",
                  "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0",
                  "--work-dir", str(work / f"worker{i}"), url)  # fmt: skip
        started = time.monotonic()
        deadline = started + START_TIMEOUT
        while master_log.read_text(errors="replace").count("Registering worker") < WORKERS:
            dead = [d.args[1] for d in daemons if d.poll() is not None]
            if dead:
                pytest.fail(f"{dead[0]} exited while the cluster started; see {work}/*.log")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the master at {url} did not register {WORKERS} workers within "
                    f"{START_TIMEOUT:.0f} s; see {work}/*.log"
                )
            time.sleep(0.5)
        print(f"cluster up in {time.monotonic() - started:.1f} s")
        yield url
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)


def test_a_view_runs_unchanged_on_a_standalone_cluster(tmp_path: Path) -> None:
    data, work = tmp_path / "data", tmp_path / "cluster"
    data.mkdir()
    work.mkdir()
    with standalone_cluster(work) as url:
        env = {
            **os.environ,
            "CHANGEFLOW_SPARK_MASTER": url,
            "CHANGEFLOW_HOME": str(data),
            "CHANGEFLOW_DRIVER_MEMORY": "1g",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        try:
            run = subprocess.run(
                [sys.executable, "-c", CHILD, str(data)],
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"the view did not finish on {url} within {RUN_TIMEOUT:.0f} s: {e.stderr}")
        assert run.returncode == 0, run.stderr[-4000:]
        assert f"ok master={url} executors={WORKERS}" in run.stdout, run.stdout
        print(run.stdout.strip())
        apps = list((work / "worker0").glob("app-*")) + list((work / "worker1").glob("app-*"))
        assert len(apps) == WORKERS, "each worker ran an executor of the view's application"
