"""A SQL view on a real Spark cluster: a standalone master and two workers started from
pyspark's own jars on 127.0.0.1, a materialized view over CDC sources on the cluster tier,
exact at every step, with both executors running tasks for its hydration and each step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from changeflow.testing.cluster import standalone_cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START_TIMEOUT = 90.0  # seconds for the master and both workers to come up on a loaded machine
RUN_TIMEOUT = 240.0  # seconds for the view to hydrate and step on the cluster
WORKERS = 2

# The child process: two CDC sources in one timeline, a SQL materialized view joining and
# aggregating them on the cluster tier, stepped file by file; the view checked against the
# collections at every step, and the tasks each executor completed counted around each phase.
# An executor is killed between two steps.
CHILD = r"""
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import changeflow
from changeflow.cdc.files import write_messages
from changeflow.cdc.writer import CdcWriter
from changeflow.spark import get_spark
from changeflow.time import Antichain
from changeflow.updates import canonical_json

root = Path(sys.argv[1])
STEPS = 4


class Feed:
    def __init__(self, folder):
        self.folder, self.writer, self.t, self.live = folder, CdcWriter(), 0, {}
        folder.mkdir(parents=True)

    def step(self, rows):  # rows: {id: record or None (a delete)}
        updates = []
        for key, record in rows.items():
            if key in self.live:
                updates.append((canonical_json(self.live.pop(key)), self.t, -1))
            if record is not None:
                self.live[key] = record
                updates.append((canonical_json(record), self.t, 1))
        self.t += 1
        messages = list(self.writer.write(updates, Antichain([self.t])))
        write_messages(self.folder, messages, "jsonl", prefix=f"step{self.t:04d}")


orders, customers = Feed(root / "orders"), Feed(root / "customers")
customers.step({i: {"id": i, "region": f"r{i % 4}"} for i in range(50)})
orders.step({i: {"id": i, "customer": i % 50, "amount": i % 97} for i in range(2000)})


def expected():
    region = {c["id"]: c["region"] for c in customers.live.values()}
    groups = {}
    for o in orders.live.values():
        if o["customer"] in region:
            n, total = groups.get(region[o["customer"]], (0, 0))
            groups[region[o["customer"]]] = (n + 1, total + o["amount"])
    return sorted((r, n, t) for r, (n, t) in groups.items())


spark = get_spark()
store = spark.sparkContext._jsc.sc().statusStore()


def tasks():
    listed = store.executorList(True)
    done = Counter()
    for i in range(listed.size()):
        e = listed.apply(i)
        done[e.id()] = e.completedTasks()
    return done


def ran(before, after):
    grew = {e: after[e] - before.get(e, 0) for e in after if e != "driver"}
    return {e: n for e, n in grew.items() if n > 0}


conn = changeflow.connect(root / "home", host_seconds=0)
shop = "WITH (TIMELINE = 'shop')"
conn.execute(f"CREATE SOURCE orders FROM CDC '{orders.folder}' FORMAT JSON "
             f"(id bigint NOT NULL, customer bigint, amount bigint) {shop}")
conn.execute(f"CREATE SOURCE customers FROM CDC '{customers.folder}' FORMAT JSON "
             f"(id bigint NOT NULL, region text) {shop}")
before = tasks()
conn.execute("CREATE MATERIALIZED VIEW spend WITH (CLUSTER = true) AS "
             "SELECT c.region, count(*) AS n, sum(o.amount) AS total "
             "FROM orders o JOIN customers c ON o.customer = c.id GROUP BY c.region")
hydration = ran(before, tasks())
assert len(hydration) == 2, f"hydration ran tasks on executors {hydration}, not on both"
tier = conn.execute("EXPLAIN MATERIALIZED VIEW spend").fetchall()[0][0]
assert tier.startswith("Tier: cluster"), tier
got = sorted(conn.execute("SELECT * FROM spend").fetchall())
assert got == expected(), (got, expected())
def kill_executor(executor_id):
    # SIGKILL the executor's JVM: its cached batches are lost, its Parquet files are not
    for pid in os.listdir("/proc"):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args:
            at = args.index(b"--executor-id")
            if args[at + 1] == executor_id.encode():
                os.kill(int(pid), signal.SIGKILL)
                return
    raise AssertionError(f"no executor {executor_id} to kill")


for step in range(STEPS):
    if step == 2:  # an executor lost between steps: the view stays exact
        kill_executor("0")
    orders.step({i: ({"id": i, "customer": (i + step) % 60, "amount": step}
                     if i % 3 else None) for i in range(step * 100, step * 100 + 90)})
    customers.step({50 + step: {"id": 50 + step, "region": "new"}, step: None})
    before = tasks()
    got = sorted(conn.execute("SELECT * FROM spend").fetchall())
    work = ran(before, tasks())
    assert work, f"step {step} ran no task on an executor"
    assert got == expected(), (step, got, expected())
    print(f"step {step}: tasks {dict(work)}")
conn.close()
print(f"ok master={spark.sparkContext.master} hydration tasks {dict(hydration)}")
"""


def test_a_sql_view_hydrates_and_steps_on_the_executors(tmp_path: Path) -> None:
    data, work = tmp_path / "data", tmp_path / "cluster"
    data.mkdir()
    work.mkdir()
    with standalone_cluster(work) as url:
        env = {
            **os.environ,
            "CHANGEFLOW_SPARK_MASTER": url,
            "CHANGEFLOW_HOME": str(data),
            "CHANGEFLOW_DRIVER_MEMORY": "1g",
            "CHANGEFLOW_SPARK_INGEST_BYTES": "0",  # the sources decode on the executors too
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
        assert f"ok master={url}" in run.stdout, run.stdout
        print(run.stdout.strip())
        apps = list((work / "worker0").glob("app-*")) + list((work / "worker1").glob("app-*"))
        assert len(apps) == WORKERS, "each worker ran an executor of the view's application"
