"""Benchmark: decoding CDC v2, side by side in one run.

N updates (one per key) over 100k distinct times, every update written 3 times, shuffled
across 32 files, progress statements duplicated and shuffled likewise. Contenders: the
reference reader and the columnar one (Parquet files, and an in-order stream from the writer
that shows the memory bound), the Spark reader on local[2] (Parquet and JSON lines) and DuckDB
running the same deduplicate-and-consolidate over the same Parquet files (the floor for a
group-by here). Each contender runs in its own process; peak memory is the peak RSS of its
process tree, CPU the user and system seconds of that tree (sampled), which matter on a shared
machine where wall time depends on the load.

    python benchmarks/cdc_decode.py [--sizes 1000000,10000000] [--contenders a,b]
        [--small-only reader-parquet,spark-jsonl]  (these run at the smallest size only)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from changeflow.updates import DIFF, TIME

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TIMES, COPIES, FILES, STATEMENTS = 100_000, 3, 32, 100
CONTENDERS = [
    "reader-parquet",
    "columnar-parquet",
    "reader-stream",
    "columnar-stream",
    "spark-parquet",
    "spark-jsonl",
    "duckdb-parquet",
]


# -- data ---------------------------------------------------------------------------------------


def prepare(n: int, root: Path, jsonl: bool = True) -> Path:
    """Write (once) the Parquet and (if ``jsonl``) JSON-lines inputs for ``n`` updates under
    ``root``."""
    folder = root / f"n{n}"
    if (folder / "done").exists() and (not jsonl or (folder / "done-jsonl").exists()):
        return folder
    rng = np.random.default_rng(n)
    key = np.arange(n, dtype=np.int64)
    val = rng.integers(0, 1_000_000, n, dtype=np.int64)
    times = rng.integers(0, TIMES, n, dtype=np.int64)
    diff = rng.choice(np.array([-1, 1, 2], dtype=np.int64), n)
    order = rng.permutation(np.tile(np.arange(n), COPIES))
    progress = _progress_lines(np.bincount(times, minlength=TIMES), rng)
    formats = ("parquet", "jsonl") if jsonl else ("parquet",)
    for fmt in formats:
        (folder / fmt).mkdir(parents=True, exist_ok=True)
    for k, part in enumerate(np.array_split(order, FILES)):
        table = pa.table({"key": key[part], "val": val[part], TIME: times[part]})
        table = table.append_column(DIFF, pa.array(diff[part]))
        pq.write_table(table, folder / "parquet" / f"u-{k:02d}.parquet")
        if not jsonl:
            continue
        with open(folder / "jsonl" / f"m-{k:02d}.jsonl", "w") as f:
            for chunk in np.array_split(part, max(1, len(part) // 10_000)):
                body = ",".join(
                    f'{{"data":{{"key":{a},"val":{b}}},"time":{t},"diff":{d}}}'
                    for a, b, t, d in zip(
                        key[chunk].tolist(),
                        val[chunk].tolist(),
                        times[chunk].tolist(),
                        diff[chunk].tolist(),
                        strict=True,
                    )
                )
                f.write(f'{{"updates":[{body}]}}\n')
    for k, lines in enumerate(np.array_split(np.array(progress, dtype=object), FILES)):
        for fmt in formats:
            name = f"p-{k:02d}.progress.jsonl" if fmt == "parquet" else f"p-{k:02d}.jsonl"
            (folder / fmt / name).write_text("".join(f"{line}\n" for line in lines))
    (folder / "done").write_text("")
    if jsonl:
        (folder / "done-jsonl").write_text("")
    return folder


def _progress_lines(counts: np.ndarray, rng: np.random.Generator) -> list[str]:
    bounds = np.linspace(0, TIMES, STATEMENTS + 1, dtype=np.int64).tolist()
    lines = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        entries = [{"time": t, "count": int(counts[t])} for t in range(lo, hi) if counts[t]]
        lines.append({"lower": [lo], "upper": [hi], "counts": entries})
    lines.append({"lower": [TIMES], "upper": [], "counts": []})
    out = [json.dumps({"progress": p}) for p in lines] * COPIES
    rng.shuffle(out)
    return out


# -- contenders (each runs in a child process) -------------------------------------------------


def run_contender(name: str, folder: Path, n: int) -> dict:
    """Decode with one contender; return its timing (wall, and the CPU of this process's
    threads while it decodes, its modules imported first as the wall clock has them) and a
    checksum of the result."""
    if not name.startswith(("spark", "duckdb")):
        import changeflow.cdc.columnar  # noqa: F401  (pandas, pyarrow: 0.5 s of CPU)
        import changeflow.cdc.files  # noqa: F401
    cpu = time.process_time()
    result = _decode(name, folder, n)
    result["decode_cpu_s"] = time.process_time() - cpu
    return result


def _decode(name: str, folder: Path, n: int) -> dict:
    if name.startswith("spark"):
        from changeflow.cdc.spark import read_cdc
        from changeflow.spark import get_spark

        spark = get_spark("local[2]")
        spark.range(1).count()  # warm up the JVM before timing
        fmt = name.split("-")[1]
        start = time.perf_counter()
        frame, frontier = read_cdc(spark, [str(folder / fmt)], fmt)
        row = frame.selectExpr("count(*) AS n", "sum(_diff) AS s", "sum(_time) AS t").first()
        seconds = time.perf_counter() - start
        return _result(seconds, row["n"], row["s"], row["t"], frontier.to_json())
    if name == "duckdb-parquet":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        start = time.perf_counter()
        con.execute(
            "CREATE TEMP TABLE g AS SELECT key, val, _time, min(_diff) AS lo, max(_diff) AS hi "
            f"FROM read_parquet('{folder}/parquet/*.parquet') WHERE _time < {TIMES} "
            "GROUP BY key, val, _time"
        )
        per_time = con.execute(
            "SELECT _time, count(*), count(*) FILTER (WHERE lo <> hi) FROM g GROUP BY _time"
        ).fetchall()
        count, s, t = con.execute("SELECT count(*), sum(lo), sum(_time) FROM g").fetchone()
        seconds = time.perf_counter() - start
        assert len(per_time) <= TIMES and all(c == 0 for _, _, c in per_time)
        return _result(seconds, count, s, t, [])
    if name.startswith("columnar"):
        return _columnar(name, folder, n)
    from changeflow.cdc.reader import CdcReader

    reader = CdcReader()
    count = s = t = peak = 0
    start = time.perf_counter()
    if name == "reader-parquet":
        from changeflow.cdc.files import open_source

        messages = open_source([folder / "parquet"], "parquet").messages()
    else:
        messages = _in_order_stream(n)
    for message in messages:
        for batch, _ in reader.feed(message):
            count += len(batch)
            s += sum(r for _, _, r in batch)
            t += sum(x for _, x, _ in batch)
        peak = max(peak, reader.pending_updates()) if name == "reader-stream" else peak
    seconds = time.perf_counter() - start
    result = _result(seconds, count, s, t, reader.frontier.to_json())
    if name == "reader-stream":
        result["peak_pending_updates"] = peak
    return result


def _columnar(name: str, folder: Path, n: int) -> dict:
    """The columnar reader on the Parquet files (Arrow tables), or on the in-order stream."""
    from changeflow.cdc.columnar import ColumnarReader
    from changeflow.cdc.files import open_source

    reader = ColumnarReader(columns=["key", "val"])
    count = s = t = peak = 0
    start = time.perf_counter()
    if name == "columnar-parquet":
        messages = open_source([folder / "parquet"], "parquet").tables()
    else:
        messages = _in_order_stream(n)
    for message in messages:
        for table, _ in reader.feed(message):
            count += len(table)
            s += int(pc.sum(table.column(DIFF)).as_py() or 0)
            t += int(pc.sum(table.column(TIME)).as_py() or 0)
        peak = max(peak, reader.pending_updates()) if name == "columnar-stream" else peak
    seconds = time.perf_counter() - start
    result = _result(seconds, count, s, t, reader.frontier.to_json())
    if name == "columnar-stream":
        result["peak_pending_updates"] = peak
    return result


def _in_order_stream(n: int):
    """The same kind of history, written in time order by the writer (no files): 100 steps."""
    from changeflow.cdc.writer import CdcWriter
    from changeflow.time import Antichain

    rng = np.random.default_rng(n)
    writer, per_step, key = CdcWriter(10_000), n // 100, 0
    for step in range(100):
        lo, hi = step * TIMES // 100, (step + 1) * TIMES // 100
        times = rng.integers(lo, hi, per_step).tolist()
        updates = [((key + i, i % 997), t, 1) for i, t in enumerate(times)]
        key += per_step
        frontier = Antichain([hi]) if step < 99 else Antichain()
        yield from writer.write(updates, frontier)


def _result(seconds: float, count: int, s: int, t: int, frontier: list) -> dict:
    return {"seconds": seconds, "distinct_updates": count, "checksum": [s, t], "frontier": frontier}


# -- the harness -------------------------------------------------------------------------------


def _tree_rss(pid: int, cpu: dict[int, float] | None = None) -> int:
    """Resident bytes of ``pid`` and all its descendants; ``cpu`` gets each one's CPU seconds
    (user and system) so far."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    ticks: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        ticks[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        if cpu is not None and p in ticks:
            cpu[p] = max(cpu.get(p, 0.0), ticks[p])
        todo.extend(children.get(p, []))
    return total


def measure(name: str, folder: Path, n: int) -> dict:
    """Run one contender in a child process, sampling the memory of its process tree."""
    cmd = [sys.executable, __file__, "--child", name, "--folder", str(folder), "--n", str(n)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak, cpu = 0, {}
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid, cpu))
        time.sleep(0.1)
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode:
        raise SystemExit(f"{name} at {n} failed (exit {proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss_mb"] = round(peak / 2**20)
    result["cpu_seconds"] = round(sum(cpu.values()), 1)  # of the whole run, start-up included
    result["updates_per_s"] = round(n / result["seconds"])
    return result


def markdown(results: list[dict]) -> str:
    """The results as a markdown table with ratios to DuckDB at the same size."""
    lines = [
        "| updates | contender | seconds | updates/s | input rows/s | CPU s (process) "
        "| decode CPU s | updates per decode CPU s | peak RSS (MB) | vs DuckDB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        floor = next(
            (x for x in results if x["n"] == r["n"] and x["contender"] == "duckdb-parquet"), None
        )
        ratio = f"{r['seconds'] / floor['seconds']:.1f}x" if floor else "-"
        extra = (
            f" (peak pending {r['peak_pending_updates']:,})" if "peak_pending_updates" in r else ""
        )
        stream = r["contender"].endswith("-stream")
        own = r.get("decode_cpu_s")  # Spark's and DuckDB's work runs outside these threads
        local = own and not r["contender"].startswith(("spark", "duckdb"))
        decode = f"{own:.1f}" if local else "-"
        per_cpu = f"{r['n'] / own:,.0f}" if local else "-"
        rows_per_s = r["updates_per_s"] * (1 if stream else COPIES)
        lines.append(
            f"| {r['n']:,} | {r['contender']}{extra} | {r['seconds']:.2f} | "
            f"{r['updates_per_s']:,} | {rows_per_s:,} | {r.get('cpu_seconds', '-')} | "
            f"{decode} | {per_cpu} | {r['peak_rss_mb']:,} | {ratio} |"
        )
    return "\n".join(lines)


def update_readme(table: str) -> None:
    readme = HERE.parent / "README.md"
    text = readme.read_text()
    start, end = "<!-- bench:cdc_decode -->", "<!-- /bench:cdc_decode -->"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        readme.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument(
        "--small-only",
        default="reader-parquet,reader-stream,columnar-stream,spark-jsonl",
        help="contenders run at the smallest size only",
    )
    parser.add_argument("--data", default=str(HERE.parent / "changeflow-data" / "bench"))
    parser.add_argument("--child")
    parser.add_argument("--folder")
    parser.add_argument("--n", type=int)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_contender(args.child, Path(args.folder), args.n)))
        return
    results = []
    load = os.getloadavg()[0]
    sizes = [int(x) for x in args.sizes.split(",")]
    small_only = set(filter(None, args.small_only.split(",")))
    for n in sizes:
        print(f"preparing {n:,} updates…", file=sys.stderr)
        runs = [c for c in args.contenders.split(",") if c not in small_only or n == min(sizes)]
        folder = prepare(n, Path(args.data), any(c.endswith("jsonl") for c in runs))
        for name in runs:
            r = measure(name, folder, n)
            r.update(contender=name, n=n)
            results.append(r)
            print(
                f"{n:>10,} {name:<16} {r['seconds']:7.2f} s {r['updates_per_s']:>11,}/s "
                f"{r['peak_rss_mb']:>6,} MB",
                file=sys.stderr,
            )
        sums = {
            tuple(r["checksum"])
            for r in results
            if r["n"] == n and not r["contender"].endswith("-stream")
        }
        if len(sums) > 1:
            raise SystemExit(f"contenders disagree at {n}: {sums}")
    RESULTS.mkdir(exist_ok=True)
    meta = {
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "when": time.strftime("%F %T"),
        "load_average": [load, os.getloadavg()[0]],  # before and after: others share the cores
    }
    (RESULTS / "cdc_decode.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2)
    )
    table = markdown(results)
    (RESULTS / "cdc_decode.md").write_text(table + "\n")
    update_readme(table)
    print(table)


if __name__ == "__main__":
    main()
