"""The status page of ``changeflow serve``: the catalog's items with their frontiers, lag, rows,
dataflows and sinks, as HTML (``/``), JSON (``/status.json``) and Prometheus' text format
(``/metrics``), and ``/health``.

A sampler thread collects the status every second from storage and consensus (the shards'
since and upper, the dataflows' reports, the sinks' checkpoints in the recovery log), without
the environment's lock, and keeps each item's lag in a bounded ring (:data:`HISTORY_SECONDS`)
for the page's freshness charts. The HTTP server is the standard library's, one thread per
request.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import sqlite3
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from changeflow.adapter.environment import EPOCH
from changeflow.adapter.oracle import TimestampOracle
from changeflow.adapter.resolver import decode_plan
from changeflow.compute.status import DataflowStatus, statuses
from changeflow.redact import redact
from changeflow.server.page import PAGE
from changeflow.time import Antichain

if TYPE_CHECKING:
    from changeflow.adapter.environment import Environment
    from changeflow.server.server import Server

log = logging.getLogger("changeflow.server.http")

SAMPLE_SECONDS = 1.0
HISTORY_SECONDS = 600  # the freshness charts' window
HEALTH_TIMEOUT = 5.0  # consensus must answer /health within this
#: an upper of the wall-clock timeline before this (2000-01-01) is a start (0, 1), not a time
WALL_CLOCK_FLOOR = 946_684_800_000


def bound(frontier: Antichain) -> int | None:
    """A frontier of one int time as that time (None: empty or not one int)."""
    if len(frontier) != 1 or not isinstance(frontier.elements[0], int):
        return None
    return frontier.elements[0]


def _json_bound(value: Any) -> int | None:
    """A frontier stored as JSON (``[t]`` or ``[]``) as its time."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], int):
        return value[0]
    return None


class Collector:
    """Collects the status of one environment (see the module docstring)."""

    def __init__(self, env: Environment, server: Server | None = None) -> None:
        self.env = env
        self.server = server
        self.started_ms = int(time.time() * 1000)
        self.lock = threading.Lock()
        self.latest: dict[str, Any] | None = None
        self.latest_at = 0.0
        self.history: deque[tuple[int, dict[str, float]]] = deque(
            maxlen=int(HISTORY_SECONDS / SAMPLE_SECONDS)
        )
        self.oracles: dict[str, TimestampOracle] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._sample, name="changeflow-status", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(10)

    def _sample(self) -> None:
        while not self.stopping.is_set():
            try:
                self.status(max_age=0.0)
            except Exception:  # noqa: BLE001 — a failed sample is logged and retried
                log.exception("the status sampler failed")
            self.stopping.wait(SAMPLE_SECONDS)

    # -- collecting --------------------------------------------------------------------------

    def status(self, max_age: float = 1.5) -> dict[str, Any]:
        """The latest status, collected anew if it is older than ``max_age`` seconds."""
        with self.lock:
            if self.latest is None or time.monotonic() - self.latest_at > max_age:
                self.latest = self._collect()
                self.latest_at = time.monotonic()
                lags = {
                    i["id"]: i["freshness"]
                    for i in self.latest["items"]
                    if i["freshness"] is not None
                }
                self.history.append((self.latest["now_ms"], lags))
            out = dict(self.latest)
            out["history"] = self._history()
            return out

    def _history(self) -> dict[str, Any]:
        series: dict[str, list[list[float]]] = {}
        for t, lags in self.history:
            for item, lag in lags.items():
                series.setdefault(item, []).append([t, lag])
        return {"window_seconds": HISTORY_SECONDS, "series": series}

    def _collect(self) -> dict[str, Any]:
        env = self.env
        now_ms = int(time.time() * 1000)
        state = env.catalog.load()
        entries = env.storage.catalog().entries
        shards: dict[str, Any] = {}
        for name, entry in entries.items():
            with contextlib.suppress(Exception):  # dropped meanwhile
                shards[name] = env.storage.machine.load(entry.id)
        flows = {s.output: s for s in statuses(env.storage.consensus)}
        flows |= self._live_flows()
        checkpoints = self._checkpoints()
        read_ts: dict[str, int] = {}
        for timeline in {i.timeline for i in state.items.values()}:
            with contextlib.suppress(Exception):
                if timeline not in self.oracles:
                    self.oracles[timeline] = env.oracle(timeline)
                read_ts[timeline] = self.oracles[timeline].read_ts()

        def upper_of(shard: str) -> int | None:
            s = shards.get(shard)
            return None if s is None else bound(s.upper)

        items = []
        for item in sorted(state.items.values(), key=lambda i: int(i.id.lstrip("u") or 0)):
            shard = shards.get(item.id)
            inputs = self._inputs(item)
            row: dict[str, Any] = {
                "id": item.id,
                "name": item.name,
                "kind": item.kind,
                "timeline": item.timeline,
                "inputs": inputs,
                "since": None if shard is None else bound(shard.since),
                "upper": None if shard is None else bound(shard.upper),
                "closed": shard is not None and not shard.upper,
                "rows": None if shard is None else shard.rows,
                "batches": None if shard is None else len(shard.batches),
                "lag_ms": None,
                "write_lag": None,
                "input_lag": None,
                "dataflow": None,
                "sink": None,
            }
            input_uppers = [upper_of(i) for i in inputs if i in shards]
            meet = min(input_uppers) if input_uppers and None not in input_uppers else None
            own = row["upper"]
            if item.kind == "view":  # readable wherever its inputs are
                own = row["upper"] = meet
            if item.kind == "sink":
                frontier = checkpoints.get(item.id)
                source = item.options.get("from")
                row["sink"] = {
                    "target": redact(item.options.get("target") or ""),
                    "table": item.options.get("table"),
                    "frontier": frontier,
                    "input_upper": upper_of(source) if source else None,
                }
                own = frontier
            if own is not None and item.timeline == EPOCH and own < WALL_CLOCK_FLOOR:
                own = None  # not at a wall-clock time yet: no lag to show, not an epoch's
            if own is not None and item.timeline == EPOCH:
                row["lag_ms"] = max(0, now_ms - own)
            if own is not None and item.timeline in read_ts:
                row["write_lag"] = max(0, read_ts[item.timeline] + 1 - own)
            if own is not None and meet is not None:
                row["input_lag"] = max(0, meet - own)
            flow = flows.get(item.id)
            if flow is not None:
                steps = flow.step_seconds
                row["dataflow"] = {
                    "name": flow.name,
                    "running": flow.running,
                    "tier": flow.tier,
                    "frontier": flow.frontier,
                    "arranged": flow.arranged,
                    "steps": flow.steps,
                    "updates_in": flow.updates_in,
                    "updates_out": flow.updates_out,
                    "step_p50_ms": statistics.median(steps) * 1000 if steps else None,
                    "step_max_ms": max(steps) * 1000 if steps else None,
                    "recent_step_ms": [round(s * 1000, 3) for s in steps],
                    "reported_ms": flow.reported_ms,
                }
            row["freshness"] = row["write_lag"]
            items.append(row)
        server = self.server
        return {
            "now_ms": now_ms,
            "started_ms": self.started_ms,
            "home": str(env.config.home),
            "host_alive": env.thread is not None and env.thread.is_alive(),
            "host_error": None if env.host_error is None else str(env.host_error),
            "clients": None if server is None else len(server.clients),
            "read_ts": read_ts,
            "items": items,
        }

    def _live_flows(self) -> dict[str, DataflowStatus]:
        """The status of the dataflows this process hosts, taken from each that is between
        steps (for one stepping now, its last report in consensus stands)."""
        env, out = self.env, {}
        for i, flow in list(env.dataflows.items()):
            lock = env.item_lock(i)
            if not lock.acquire(blocking=False):
                continue
            try:
                out[i] = flow.status()
            except Exception:  # noqa: BLE001 — a dataflow closing meanwhile
                continue
            finally:
                lock.release()
        return out

    def _inputs(self, item: Any) -> list[str]:
        """The shards an item reads: a dataflow's inputs, a sink's input, a view's shards."""
        if item.kind == "sink":
            return [item.options["from"]] if item.options.get("from") else []
        if "plan" in item.options:
            with contextlib.suppress(Exception):
                return sorted(decode_plan(item.options["plan"]).collections())
        return []

    def _checkpoints(self) -> dict[str, int | None]:
        """Each materialization's checkpoint frontier in the home's recovery log (read only)."""
        path = Path(self.env.config.home) / "materialize" / "recovery.sqlite"
        if not path.exists():
            return {}
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
            try:
                rows = db.execute(
                    "SELECT materialization, runtime_checkpoint FROM recovery_log"
                ).fetchall()
            finally:
                db.close()
        except sqlite3.Error:
            return {}
        out: dict[str, int | None] = {}
        for name, checkpoint in rows:
            value = json.loads(checkpoint) if checkpoint else None
            out[name] = _json_bound(value.get("frontier")) if value else None
        return out

    # -- health ------------------------------------------------------------------------------

    def health(self) -> str | None:
        """None when the host thread runs and consensus answers; else the reason."""
        env = self.env
        if env.closed.is_set():
            return "the environment is closed"
        if env.thread is None or not env.thread.is_alive():
            return "the host thread is not running"
        outcome: list[BaseException | None] = []

        def ask() -> None:
            try:
                env.storage.consensus.head("adapter/catalog")
                outcome.append(None)
            except BaseException as e:  # noqa: BLE001 — reported as the reason
                outcome.append(e)

        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        asking.join(HEALTH_TIMEOUT)
        if not outcome:
            return f"consensus did not answer within {HEALTH_TIMEOUT:.0f} s"
        if outcome[0] is not None:
            return redact(f"consensus does not answer: {outcome[0]}")
        return None


# -- Prometheus ------------------------------------------------------------------------------


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value) if isinstance(value, float) else str(value)


class Metrics:
    """Prometheus' text exposition format: a family's HELP and TYPE, then its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(
        self, name: str, kind: str, help_: str, samples: Iterable[tuple[dict[str, Any], float]]
    ) -> None:
        self.lines.append(f"# HELP {name} {help_}")
        self.lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            self.sample(name, labels, value)

    def sample(self, name: str, labels: dict[str, Any], value: float) -> None:
        text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        self.lines.append(
            f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}"
        )

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def metrics(status: dict[str, Any]) -> str:
    """``status`` (from :meth:`Collector.status`) in Prometheus' text format."""
    m = Metrics()
    items = status["items"]

    def labels(i: dict[str, Any]) -> dict[str, Any]:
        return {"id": i["id"], "name": i["name"], "kind": i["kind"]}

    def of(key: str, where: Callable[[dict[str, Any]], Any] = lambda i: True) -> list:
        return [(labels(i), i[key]) for i in items if i[key] is not None and where(i)]

    up = int(status["host_alive"])
    m.family("changeflow_up", "gauge", "1 while the host thread runs.", [({}, up)])
    if status["clients"] is not None:
        clients = [({}, status["clients"])]
        m.family("changeflow_clients", "gauge", "Connected PostgreSQL clients.", clients)
    m.family(
        "changeflow_item_lag_ms",
        "gauge",
        "How far an item's upper (a sink's checkpoint) trails the wall clock, in ms.",
        of("lag_ms"),
    )
    m.family(
        "changeflow_item_write_lag",
        "gauge",
        "How far an item's upper trails its timeline's latest acknowledged write (read "
        "timestamp + 1), in times (ms for EpochMilliseconds): a read now waits for this.",
        of("write_lag"),
    )
    m.family(
        "changeflow_item_input_lag",
        "gauge",
        "How far an item's upper trails the meet of its inputs' uppers, in times.",
        of("input_lag"),
    )
    m.family("changeflow_item_rows", "gauge", "Rows in an item's shard batches.", of("rows"))
    m.family("changeflow_item_since", "gauge", "An item's shard's since.", of("since"))
    m.family("changeflow_item_upper", "gauge", "An item's shard's upper.", of("upper"))
    flows = [(i, i["dataflow"]) for i in items if i["dataflow"] is not None]
    m.family(
        "changeflow_dataflow_arranged_rows",
        "gauge",
        "Rows held in a dataflow's arrangements and waiting updates.",
        [(labels(i), d["arranged"]) for i, d in flows],
    )
    m.family(
        "changeflow_dataflow_steps_total",
        "counter",
        "Steps a dataflow has taken.",
        [(labels(i), d["steps"]) for i, d in flows],
    )
    m.family(
        "changeflow_dataflow_step_seconds",
        "summary",
        "Durations of a dataflow's most recent steps (quantiles, sum and count of those).",
        [],
    )
    for i, d in flows:
        steps = sorted(s / 1000 for s in d["recent_step_ms"])
        if not steps:
            continue
        for q in (0.5, 0.9, 0.99):
            at = steps[min(len(steps) - 1, math.ceil(q * len(steps)) - 1)]
            m.sample("changeflow_dataflow_step_seconds", labels(i) | {"quantile": q}, at)
        m.sample("changeflow_dataflow_step_seconds_sum", labels(i), round(sum(steps), 6))
        m.sample("changeflow_dataflow_step_seconds_count", labels(i), len(steps))
    sinks = [(i, i["sink"]) for i in items if i["sink"] is not None]
    m.family(
        "changeflow_sink_frontier",
        "gauge",
        "A sink's checkpoint: its target holds every change below this time.",
        [(labels(i), s["frontier"]) for i, s in sinks if s["frontier"] is not None],
    )
    m.family(
        "changeflow_sink_lag",
        "gauge",
        "How far a sink's checkpoint trails its input's upper, in times.",
        [
            (labels(i), max(0, s["input_upper"] - s["frontier"]))
            for i, s in sinks
            if s["frontier"] is not None and s["input_upper"] is not None
        ],
    )
    return m.text()


# -- HTTP ------------------------------------------------------------------------------------


class StatusPage:
    """The HTTP server of the status page (see the module docstring)."""

    def __init__(
        self,
        env: Environment,
        host: str = "127.0.0.1",
        port: int = 6876,
        server: Server | None = None,
    ) -> None:
        self.collector = Collector(env, server)
        collector = self.collector

        class Handler(BaseHTTPRequestHandler):
            server_version = "changeflow"

            def do_GET(self) -> None:  # noqa: N802 — the standard library's name
                path = self.path.split("?", 1)[0]
                try:
                    if path == "/":
                        self._send(200, "text/html; charset=utf-8", PAGE)
                    elif path == "/status.json":
                        body = json.dumps(collector.status(), separators=(",", ":"))
                        self._send(200, "application/json", body)
                    elif path == "/metrics":
                        body = metrics(collector.status())
                        self._send(200, "text/plain; version=0.0.4; charset=utf-8", body)
                    elif path == "/health":
                        reason = collector.health()
                        self._send(503 if reason else 200, "text/plain", (reason or "ok") + "\n")
                    else:
                        self._send(
                            404,
                            "text/plain",
                            "not found: try /, /status.json, /metrics or /health\n",
                        )
                except BrokenPipeError:
                    pass
                except Exception as e:  # noqa: BLE001 — the page stays up
                    log.exception("the status page failed")
                    with contextlib.suppress(OSError):
                        self._send(500, "text/plain", f"error: {e}\n")

            def _send(self, code: int, kind: str, body: str) -> None:
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        family = socket.AF_INET6 if ":" in host else socket.AF_INET

        class Http(ThreadingHTTPServer):
            address_family = family
            daemon_threads = True

        self.http = Http((host, port), Handler)
        self.host, self.port = self.http.server_address[:2]
        self.thread = threading.Thread(
            target=self.http.serve_forever,
            kwargs={"poll_interval": 0.5},
            name="changeflow-http",
            daemon=True,
        )

    def start(self) -> None:
        self.collector.start()
        self.thread.start()

    def close(self) -> None:
        self.collector.stop()
        self.http.shutdown()
        self.http.server_close()
