"""The Spark layer every other layer uses: the one place that builds the SparkSession (UI off,
Arrow on, partitions sized to the master), and the helpers for plans, paths and errors.

- :func:`col` names a column literally, :func:`spark_path` a file literally, :func:`local_path`
  turns an executor's ``file:`` URI back into a path;
- :func:`session_conf` sets session settings for the plans made inside it;
- :func:`on_executors` wraps a function that runs in the executors (``mapInArrow``) so that the
  changeflow errors it raises cross back whole, and :func:`spark_errors` turns every Spark-side
  failure on the driver into a changeflow error (ours rebuilt by :func:`errors.from_wire`,
  SQL's refusals as :class:`EvalError`); :func:`raise_column` fails a job with our error.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from py4j.protocol import Py4JJavaError
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException, PythonException
from pyspark.java_gateway import launch_gateway
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from changeflow import errors
from changeflow.config import Config
from changeflow.errors import ChangeflowError, EvalError, InvalidInput

T = TypeVar("T")
WIRE = "changeflow-error: "  # how an executor's changeflow error is written into Spark's text


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
    """The shared SparkSession for ``master`` (default: the configured one). A process holds
    one SparkContext: if one runs already, its session is the one returned."""
    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
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
            # a persisted frame's plan is coalesced by adaptive execution too (else a small
            # view's output on a cluster runs each stage as 200 near-empty tasks)
            ("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true"),
            ("spark.sql.session.timeZone", "UTC"),
            ("spark.driver.memory", os.environ.get("CHANGEFLOW_DRIVER_MEMORY", "4g")),
            ("spark.executor.memory", os.environ.get("CHANGEFLOW_EXECUTOR_MEMORY", "1g")),
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


def col(name: str) -> Column:
    """The column ``name`` taken literally (dots, spaces and backticks in it are no syntax)."""
    return F.col("`" + name.replace("`", "``") + "`")


def spark_path(path: Path) -> str:
    """A local path as Spark takes it literally (it expands glob characters otherwise)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", str(path.resolve()))


def local_path(uri: str) -> str:
    """The local path of a ``file:`` URI that Spark gives its executors (percent-decoded)."""
    from urllib.parse import unquote

    return unquote(uri.removeprefix("file://").removeprefix("file:"))


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Session settings for the plans made inside (a persisted plan keeps them). Threads share
    the session, so each key keeps the blocks inside it: on the way out a key takes the value
    of the latest block still inside, or the one it had before them all (restoring each
    block's own "old" value let another thread's setting stay for good)."""
    block = object()
    with _overridden_lock:
        for key, value in settings.items():
            _overridden.setdefault(key, (spark.conf.get(key, None), []))[1].append((block, value))
            spark.conf.set(key, value)
    try:
        yield
    finally:
        with _overridden_lock:
            for key in settings:
                before, inside = _overridden[key]
                inside[:] = [(b, v) for b, v in inside if b is not block]
                value = inside[-1][1] if inside else before
                if not inside:
                    del _overridden[key]
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)


# per key set by session_conf: its value before, and the blocks inside (oldest first)
_overridden: dict[str, tuple[str | None, list[tuple[object, str]]]] = {}
_overridden_lock = threading.Lock()


class ExecutorError(RuntimeError):
    """A changeflow error raised in an executor, written as one line of JSON that
    :func:`spark_errors` finds in Spark's error text and rebuilds."""

    def __init__(self, error: ChangeflowError) -> None:
        super().__init__(WIRE + json.dumps(error.to_wire(), ensure_ascii=True))


def on_executors(fn: Callable[..., Iterator[T]]) -> Callable[..., Iterator[T]]:
    """Wrap a generator function that Spark runs in its executors (``mapInArrow``): a
    changeflow error it raises reaches the driver with its class, message and fields."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Iterator[T]:
        try:
            yield from fn(*args, **kwargs)
        except ChangeflowError as e:
            raise ExecutorError(e) from None

    return run


# Spark's conditions for values SQL refuses to compute: PostgreSQL's sqlstate and message.
_SQL_ERRORS = {
    "DIVIDE_BY_ZERO": ("22012", "division by zero"),
    "REMAINDER_BY_ZERO": ("22012", "division by zero"),
    "INTERVAL_DIVIDED_BY_ZERO": ("22012", "division by zero"),
    "ARITHMETIC_OVERFLOW": ("22003", "value out of range: overflow"),
    "CAST_OVERFLOW": ("22003", "{type} out of range"),
    "NUMERIC_VALUE_OUT_OF_RANGE": ("22003", "numeric field overflow"),
    "CAST_INVALID_INPUT": ("22P02", 'invalid input syntax for type {type}: "{value}"'),
    "DATETIME_FIELD_OUT_OF_BOUNDS": ("22008", "date/time field value out of range"),
    "DATETIME_OVERFLOW": ("22008", "timestamp out of range"),
}
_PG_TYPES = {
    "SMALLINT": "smallint",
    "INT": "integer",
    "BIGINT": "bigint",
    "FLOAT": "real",
    "DOUBLE": "double precision",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP": "timestamp with time zone",
    "TIMESTAMP_NTZ": "timestamp",
}


def sql_error(text: str) -> EvalError | None:
    """The :class:`EvalError` (PostgreSQL's sqlstate and wording) for Spark's error ``text``
    when it is a value SQL refuses (overflow, division by zero, a bad cast); else None."""
    for condition in re.findall(r"\[([A-Z_]+)(?:\.[A-Z_]+)?\]", text):
        if condition in _SQL_ERRORS:
            sqlstate, message = _SQL_ERRORS[condition]
            value = re.search(r"The value '(.*?)' of the type", text)
            target = re.search(r'cannot be cast to "([A-Z_]+)', text)
            kind = target.group(1) if target else ""
            kind = "numeric" if kind.startswith("DECIMAL") else _PG_TYPES.get(kind, kind.lower())
            shown = message.format(type=kind or "value", value=value.group(1) if value else "")
            return EvalError(shown, sqlstate=sqlstate)
    return None


def _wired(text: str) -> ChangeflowError | None:
    """The last changeflow error written into Spark's ``text`` (by :class:`ExecutorError` or
    by a ``raise_error`` column, whose message Spark may follow with more text)."""
    at = text.rfind(WIRE)
    if at < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, at + len(WIRE))
    except ValueError:
        return None
    return errors.from_wire(value)


@contextmanager
def spark_errors(where: str) -> Iterator[None]:
    """Spark's failures as changeflow errors: one raised in an executor (through
    :func:`on_executors`) or by a ``raise_error`` column (:func:`raise_column`) comes back as it
    was; a value SQL refuses becomes an :class:`EvalError` with PostgreSQL's sqlstate; any other
    says ``where`` and Spark's line."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as e:
        text = str(e)
        ours = _wired(text)
        if ours is not None:
            raise ours from None
        refused = sql_error(text)
        if refused is not None:
            raise errors.with_context(refused, where) from None
        lines = [line for line in text.splitlines() if line.strip()] or [type(e).__name__]
        line = lines[-1] if isinstance(e, PythonException) else lines[0]
        raise InvalidInput(f"{where}: Spark failed: {line}") from None


def raise_column(error: ChangeflowError, detail: Column | None = None) -> Column:
    """A column that fails the Spark job with ``error`` (its message followed by the row's
    ``detail`` text, if given) when evaluated; :func:`spark_errors` rebuilds it on the driver.
    Use it inside ``F.when`` for a per-row check."""
    wire = error.to_wire()
    if detail is None:
        return F.raise_error(F.lit(WIRE + json.dumps(wire, ensure_ascii=True)))
    message = F.to_json(F.struct(F.concat(F.lit(error.message), detail).alias("message")))
    head = json.dumps({"kind": wire["kind"], "fields": wire["fields"]}, ensure_ascii=True)
    return F.raise_error(
        F.concat(F.lit(WIRE + head[:-1] + ", "), F.regexp_replace(message, r"^\{", ""))
    )
