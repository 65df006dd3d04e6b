"""The one place that builds the SparkSession: UI off, Arrow on, partitions sized to the master."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from changeflow.config import Config
from changeflow.errors import ChangeflowError


def check_java() -> None:
    """Fail with instructions unless Java 17 or newer is on the PATH (Spark needs it)."""
    java = shutil.which("java")
    if java is None and os.environ.get("JAVA_HOME"):
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java")
    if java is None or not os.path.exists(java):
        raise ChangeflowError(
            "Java 17 or newer is needed for Spark and none was found: "
            "install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', out)
    if not match or int(match.group(1)) < 17:
        raise ChangeflowError(
            f"Spark needs Java 17 or newer; found: {out.strip().splitlines()[0] if out else '?'}. "
            "Install openjdk-17 (apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )


def _cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+|\*)\]", master)
    if match and match.group(1) != "*":
        return int(match.group(1))
    return os.cpu_count() or 2


@cache
def get_spark(master: str | None = None) -> SparkSession:
    """The shared SparkSession for ``master`` (default: the configured one)."""
    master = master or Config.load().spark_master
    check_java()
    partitions = max(2, 2 * _cores(master)) if master.startswith("local") else 200
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = Path(__file__).with_name("log4j2.properties")
    conf = SparkConf().setAll(
        [
            ("spark.master", master),
            ("spark.app.name", "changeflow"),
            ("spark.ui.enabled", "false"),
            ("spark.ui.showConsoleProgress", "false"),
            ("spark.sql.execution.arrow.pyspark.enabled", "true"),
            ("spark.sql.shuffle.partitions", str(partitions)),
            ("spark.sql.session.timeZone", "UTC"),
            ("spark.driver.memory", os.environ.get("CHANGEFLOW_DRIVER_MEMORY", "4g")),
            ("spark.sql.ansi.enabled", "true"),
            ("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}"),
        ]
    )
    # The JVM's own console output (start-up notices, errors) goes to a log, not the terminal.
    log_path = Config.load().home / "spark.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as e:
            raise ChangeflowError(f"Spark did not start ({e}); its log is {log_path}") from None
    SparkContext(gateway=gateway, conf=conf)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
