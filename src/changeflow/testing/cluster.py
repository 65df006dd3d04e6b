"""A Spark standalone cluster on 127.0.0.1 for tests and benchmarks: a master and one-core
workers started from pyspark's own jars (``spark-class``), stopped with their JVMs."""

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

from changeflow.errors import ChangeflowError


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
def standalone_cluster(
    work: Path, workers: int = 2, start_timeout: float = 90.0, worker_memory: str = "1g"
) -> Iterator[str]:
    """A standalone master and ``workers`` one-core workers on 127.0.0.1, their logs and work
    folders under ``work``; yields the master URL."""
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
        for i in range(workers):
            start(work / f"worker{i}.log", "org.apache.spark.deploy.worker.Worker", "--host",
                  "127.0.0.1", "--cores", "1", "--memory", worker_memory, "--webui-port", "0",
                  "--work-dir", str(work / f"worker{i}"), url)  # fmt: skip
        started = time.monotonic()
        deadline = started + start_timeout
        while master_log.read_text(errors="replace").count("Registering worker") < workers:
            dead = [d.args[1] for d in daemons if d.poll() is not None]
            if dead:
                raise ChangeflowError(
                    f"{dead[0]} exited while the cluster started; see {work}/*.log"
                )
            if time.monotonic() > deadline:
                raise ChangeflowError(
                    f"the master at {url} did not register {workers} workers within "
                    f"{start_timeout:.0f} s; see {work}/*.log"
                )
            time.sleep(0.5)
        print(f"cluster up in {time.monotonic() - started:.1f} s")
        yield url
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)
