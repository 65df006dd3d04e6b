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
RUN_TIMEOUT = 420.0  # seconds for the view to hydrate and step on the cluster (loaded machine)
WORKERS = 2

# The child process: two CDC sources in one timeline, a SQL materialized view joining and
# aggregating them on the cluster tier, stepped file by file; the view checked against the
# collections at every step, and the tasks each executor completed counted around each phase.
# An executor is killed between two steps.
CHILD = r"""
import os
import signal
import sys
import time
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
assert spark.sparkContext.getConf().get("spark.locality.wait") == "0s"  # (the test's conf)
assert spark.conf.get("spark.sql.adaptive.coalescePartitions.minPartitionSize") == "1b"


def tasks():
    # the status store is filled by the listener bus, behind the scheduler: drain it first,
    # or a phase's last task ends are not counted yet (under load, an executor's all of them)
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60000)
    listed = store.executorList(True)
    done = Counter()
    for i in range(listed.size()):
        e = listed.apply(i)
        done[e.id()] = e.completedTasks()
    return done


def both_executors_up(seconds=120.0):
    # a worker's executor can register after the session starts on a loaded machine, and
    # Spark then schedules every task on the one already there: wait for both first
    deadline = time.monotonic() + seconds
    while len([e for e in tasks() if e != "driver"]) < 2:
        assert time.monotonic() < deadline, f"only executors {dict(tasks())} registered"
        time.sleep(0.2)


def ran(before, after):
    grew = {e: after[e] - before.get(e, 0) for e in after if e != "driver"}
    return {e: n for e, n in grew.items() if n > 0}


both_executors_up()
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
    data, work, conf = tmp_path / "data", tmp_path / "cluster", tmp_path / "conf"
    data.mkdir()
    work.mkdir()
    conf.mkdir()
    # tasks go to whichever executor is free at once: with Spark's default locality wait (3 s)
    # a stage whose inputs one executor holds ran all of its tasks there under load; and the
    # test's small shuffles keep a partition a core (adaptive execution coalesces a shuffle of
    # 1 MiB or less into one task, which runs wherever its input is cached)
    (conf / "spark-defaults.conf").write_text(
        "spark.locality.wait 0s\nspark.shuffle.reduceLocality.enabled false\n"
        "spark.sql.adaptive.coalescePartitions.minPartitionSize 1b\n"
    )
    with standalone_cluster(work) as url:
        env = {
            **os.environ,
            "SPARK_CONF_DIR": str(conf),
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


# The child process of the capped driver: a watchdog ends it if its resident memory passes
# CAP_MIB; the driver JVM has 512 MiB. Sources of ORDERS orders (and 100,000 customers) are
# written as CDC by the executors, the view joins and aggregates them on the cluster tier, and
# two refresh steps follow; each result is checked against Spark's own batch answer.
CAPPED = r"""
import os
import sys
import threading
import time
from pathlib import Path

from pyspark.sql import functions as F

import changeflow
from changeflow.cdc.spark.write import write_cdc
from changeflow.spark import get_spark

root, cap, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def resident(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) // 1024
    raise AssertionError(field)


def watchdog():
    while True:
        if resident("VmRSS:") > cap:
            print(f"the driver's Python process passed {cap} MiB", flush=True)
            os._exit(3)
        time.sleep(0.02)


threading.Thread(target=watchdog, daemon=True).start()
spark = get_spark()
customers = spark.range(100_000).select(
    F.col("id"), F.concat(F.lit("r"), (F.col("id") % 7).cast("string")).alias("region")
)
orders = spark.range(n).select(
    F.col("id"),
    (F.col("id") * 7919 % 100_003).alias("customer"),
    (F.col("id") % 97).alias("amount"),
)


def at(frame, t, diff=1):
    return frame.withColumn("_time", F.lit(t).cast("bigint")).withColumn(
        "_diff", F.lit(diff).cast("bigint")
    )


def cdc(frame, folder, t):
    write_cdc(at(frame, t), root / folder, t, t + 1, "parquet")


def expected(live):
    joined = live.join(customers.withColumnRenamed("id", "cid"), F.col("customer") == F.col("cid"))
    grouped = joined.groupBy("region").agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
    return sorted(tuple(r) for r in grouped.collect())


cdc(customers, "customers", 0)
cdc(orders, "orders", 0)
conn = changeflow.connect(root / "home", host_seconds=0)
shop = "WITH (TIMELINE = 'shop')"
conn.execute(f"CREATE SOURCE orders FROM CDC '{root / 'orders'}' FORMAT PARQUET "
             f"(id bigint NOT NULL, customer bigint, amount bigint) {shop}")
conn.execute(f"CREATE SOURCE customers FROM CDC '{root / 'customers'}' FORMAT PARQUET "
             f"(id bigint NOT NULL, region text) {shop}")
conn.execute("CREATE MATERIALIZED VIEW spend AS SELECT c.region, count(*) AS n, "
             "sum(o.amount) AS total FROM orders o JOIN customers c ON o.customer = c.id "
             "GROUP BY c.region")
tier = conn.execute("EXPLAIN MATERIALIZED VIEW spend").fetchall()[0][0]
assert tier.startswith("Tier: cluster"), tier  # chosen by the inputs' size
live = orders
assert sorted(conn.execute("SELECT * FROM spend").fetchall()) == expected(live)
for step in (1, 2):
    gone = orders.where((F.col("id") >= step * 1000) & (F.col("id") < step * 1000 + 500))
    new = spark.range(n + step * 1000, n + step * 1000 + 700).select(
        F.col("id"),
        (F.col("id") % 100_000).alias("customer"),
        F.lit(step).cast("bigint").alias("amount"),
    )
    changes = at(gone, step, -1).unionByName(at(new, step))
    write_cdc(changes, root / "orders", step, step + 1, "parquet")
    cdc(customers.limit(0), "customers", step)  # the customers' frontier moves on
    live = live.join(gone.select("id"), "id", "left_anti").unionByName(new)
    got = sorted(conn.execute("SELECT * FROM spend").fetchall())
    assert got == expected(live), (step, got)
conn.close()
print(f"ok peak Python RSS {resident('VmHWM:')} MiB, cap {cap} MiB, {n:,} orders arranged")
"""

ORDERS = 3_000_000  # about 1 GiB arranged in the process (330 bytes a row), 2.5x the cap
CAP_MIB = 400  # the driver's Python process (its peak here is under 200 MiB)


def test_a_view_with_state_beyond_the_driver_hydrates_and_steps(tmp_path: Path) -> None:
    """The driver JVM gets 512 MiB and its Python process at most CAP_MIB: the arranged state
    lives on the executors, and the view is exact after hydration and each step."""
    data, work = tmp_path / "data", tmp_path / "cluster"
    data.mkdir()
    work.mkdir()
    with standalone_cluster(work, worker_memory="2g") as url:
        env = {
            **os.environ,
            "CHANGEFLOW_SPARK_MASTER": url,
            "CHANGEFLOW_HOME": str(data),
            "CHANGEFLOW_DRIVER_MEMORY": "512m",
            "CHANGEFLOW_EXECUTOR_MEMORY": "2g",
            "CHANGEFLOW_SPARK_INGEST_BYTES": "0",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        try:
            run = subprocess.run(
                [sys.executable, "-c", CAPPED, str(data), str(CAP_MIB), str(ORDERS)],
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"the capped view did not finish within {RUN_TIMEOUT:.0f} s: {e.stdout}")
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-4000:])
        assert "ok peak Python RSS" in run.stdout, run.stdout
        print(run.stdout.strip())
