"""The status page on ``--http``: /status.json, /metrics in Prometheus' text format, /health,
and the HTML page as headless Chromium renders it."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from changeflow.adapter.environment import Environment
from changeflow.config import Config
from changeflow.server.http import Collector

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)


def status_url(served: Any) -> str:
    """The status page's address, from the line after the one that says where it listens."""
    assert served.proc.stdout is not None
    line = served.proc.stdout.readline()
    m = re.search(r"status page on (http://[\d.]+:\d+/)", line)
    assert m, line
    return m[1]


def get(url: str) -> tuple[int, str, str]:
    """Status code, content type and body of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def wait_for(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


SAMPLE = re.compile(
    r"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r'(?:\{(?P<labels>(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})?'
    r" (?P<value>[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|Inf|NaN))"
)


def parse_metrics(text: str) -> dict[str, dict[str, Any]]:
    """Prometheus' text format, checked: every sample belongs to a family declared before it
    with one HELP and one TYPE; a family's samples, by labels (without a quantile label)."""
    families: dict[str, dict[str, Any]] = {}
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            assert name not in families, f"{name} declared twice"
            families[name] = {"help": line.split(" ", 3)[3], "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert families[name]["type"] is None
            assert kind in ("counter", "gauge", "summary", "histogram", "untyped")
            families[name]["type"] = kind
        else:
            m = SAMPLE.fullmatch(line)
            assert m, f"not a sample line: {line!r}"
            name = m["name"]
            family = name
            if name not in families:
                family = re.sub(r"_(sum|count)$", "", name)
                assert families.get(family, {}).get("type") == "summary", line
            labels = dict(re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m["labels"] or ""))
            families[family]["samples"].append((name, labels, float(m["value"])))
    assert all(f["type"] for f in families.values())
    return families


def test_status_json_metrics_health_and_the_page_in_chromium(start_server, tmp_path: Path):
    server = start_server("--http", "127.0.0.1:0", "--allow-path", str(tmp_path))
    url = status_url(server)
    target = tmp_path / "sink.sqlite"
    with server.connect() as c:
        c.execute("CREATE TABLE orders (id int NOT NULL, customer text, amount int)")
        c.execute("INSERT INTO orders VALUES (1, 'ann', 10), (2, 'bob', 5), (3, 'ann', 7)")
        c.execute(
            "CREATE MATERIALIZED VIEW totals AS SELECT customer, sum(amount) AS total "
            "FROM orders GROUP BY customer"
        )
        c.execute(f"CREATE SINK totals_out FROM totals INTO 'sqlite:{target}' KEY (customer)")
        c.execute("UPDATE orders SET amount = 1 WHERE id = 2")
        assert c.execute("SELECT * FROM totals ORDER BY customer").fetchall() == [
            ("ann", 17),
            ("bob", 1),
        ]

    def caught_up() -> dict[str, Any] | None:
        status = json.loads(get(url + "status.json")[2])
        items = {i["name"]: i for i in status["items"]}
        sink = items.get("totals_out", {}).get("sink") or {}
        flow = items.get("totals", {}).get("dataflow") or {}
        applied = items.get("orders", {}).get("rows") == 5  # the host applied the log's writes
        done = sink.get("frontier") and sink["frontier"] == sink["input_upper"]
        if done and flow.get("steps") and applied:
            return status
        return None

    status = wait_for(caught_up)
    assert status, get(url + "status.json")[2]
    assert status["host_alive"] and status["home"] == str(server.home.resolve())
    items = {i["name"]: i for i in status["items"]}
    assert [items[n]["kind"] for n in ("orders", "totals", "totals_out")] == [
        "table",
        "materialized view",
        "sink",
    ]
    orders, totals, sink = items["orders"], items["totals"], items["totals_out"]
    assert orders["rows"] == 5  # three inserts, then the update's retraction and insertion
    assert orders["since"] <= orders["upper"] and orders["lag_ms"] >= 0
    assert totals["inputs"] == [orders["id"]] and totals["input_lag"] == 0
    assert totals["dataflow"]["step_p50_ms"] >= 0 and totals["dataflow"]["arranged"] >= 2
    assert sink["sink"]["target"] == f"sqlite:{target}" and sink["inputs"] == [totals["id"]]
    assert (
        totals["id"]
        in wait_for(lambda: json.loads(get(url + "status.json")[2])["history"])["series"]
    )

    code, kind, text = get(url + "metrics")
    assert code == 200 and kind.startswith("text/plain; version=0.0.4")
    families = parse_metrics(text)
    lags = {s[1]["name"]: s[2] for s in families["changeflow_item_lag_ms"]["samples"]}
    assert {"orders", "totals", "totals_out"} <= lags.keys()
    rows = {s[1]["name"]: s[2] for s in families["changeflow_item_rows"]["samples"]}
    assert rows["orders"] == 5
    steps = families["changeflow_dataflow_step_seconds"]
    assert steps["type"] == "summary"
    assert {s[1].get("quantile") for s in steps["samples"]} >= {"0.5", "0.99", None}
    assert families["changeflow_sink_lag"]["samples"][0][1]["name"] == "totals_out"
    assert families["changeflow_up"]["samples"] == [("changeflow_up", {}, 1.0)]

    assert get(url + "health")[:1] + (get(url + "health")[2],) == (200, "ok\n")
    assert get(url + "nope")[0] == 404
    code, kind, page = get(url)
    assert code == 200 and kind.startswith("text/html") and "status.json" in page
    assert "http://" not in page.replace(url, "")  # self-contained: nothing from elsewhere

    if CHROMIUM is None:
        pytest.skip("no chromium binary (Debian: apt-get install chromium; `make browser`)")
    dom = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
        + ["--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=90,
    ).stdout
    rows_html = dict(re.findall(r'<tr data-id="(u\d+)">(.*?)</tr>', dom, re.S))
    by_name = {n: rows_html.get(items[n]["id"], "") for n in ("orders", "totals", "totals_out")}
    assert all(by_name.values()), dom
    for name, html in by_name.items():
        assert f"<b>{name}</b>" in html
        assert re.search(r'class="n lag [a-z]*">\d+(\.\d)? (ms|s|min)<', html), html
        assert re.search(r'<svg class="chart"[^>]*>.*<polyline points="[\d.]+,[\d.]+', html), html
    assert "materialized view" in by_name["totals"]  # with its step time, in any unit
    assert re.search(r"\d (ms|s|min)<", by_name["totals"]), by_name["totals"]
    assert f"sqlite:{target}" in by_name["totals_out"] and "behind its input" in dom
    assert "host running" in dom
    # rendered rows only (the page's own script, also in the dump, spells the same markup)
    groups = re.findall(r'<tr class="group" data-kind="([a-z ]+)"><th colspan="11">([^<\']+)<', dom)
    assert groups == [
        ("materialized view", "materialized view (1)"),
        ("sink", "sink (1)"),
        ("table", "table (1)"),
    ], groups
    assert 'id="filter"' in dom


def test_http_values(start_server, tmp_path: Path) -> None:
    """A bad --http is one error line; a taken port given explicitly is refused."""

    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "changeflow.cli", "serve", "--home", str(tmp_path / "h")]
        return subprocess.run(
            [*cmd, "--listen", "127.0.0.1:0", *args], capture_output=True, text=True, timeout=60
        )

    bad = serve("--http", "nowhere")
    assert bad.returncode == 1
    assert bad.stderr == "error: --http takes HOST:PORT, not 'nowhere'\n"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        busy = serve("--http", f"127.0.0.1:{port}")
    assert busy.returncode == 1
    assert busy.stderr.splitlines()[-1].startswith(
        f"error: cannot serve the status page on 127.0.0.1:{port}: "
    )


def test_health_names_what_is_wrong(tmp_path: Path) -> None:
    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        assert Collector(env).health() == "the host thread is not running"
    finally:
        env.close()
    assert Collector(env).health() == "the environment is closed"


def test_an_item_not_yet_at_a_wall_clock_time_has_no_lag(tmp_path: Path) -> None:
    """An upper of 0 (a table or view before the host first moves it) is not 55 years
    behind: no lag, no freshness sample, so the chart is not flattened by an epoch."""
    from changeflow.adapter.session import Session

    env = Environment(Config.load(home=str(tmp_path / "home")), host_seconds=None)
    try:
        session = Session(env)
        session.execute("CREATE TABLE t (a int)")
        session.execute("CREATE MATERIALIZED VIEW v AS SELECT count(*) AS n FROM t")
        status = Collector(env).status()
        items = {i["name"]: i for i in status["items"]}
        assert {items[n]["upper"] for n in ("t", "v")} == {0}
        for name in ("t", "v"):
            lags = [items[name][k] for k in ("lag_ms", "write_lag", "input_lag", "freshness")]
            assert lags == [None] * 4, (name, items[name])
        assert status["history"]["series"] == {}
        env.tick()
        status = Collector(env).status()
        fresh = [i["freshness"] for i in status["items"]]
        assert all(f is not None and f < 3_600_000 for f in fresh), status["items"]
    finally:
        env.close()


def test_the_page_groups_items_by_kind_and_filters_them() -> None:
    from changeflow.server.page import PAGE

    assert 'id="filter"' in PAGE and 'class="group"' in PAGE and "no item matches" in PAGE
