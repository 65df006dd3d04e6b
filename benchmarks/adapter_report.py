"""The adapter benchmark's results as Markdown (see ``adapter.py``)."""

from __future__ import annotations

from typing import Any

from adapter_selects import SELECT_KINDS, SELECT_VIEW

MODES = {
    "one": "1 session",
    "threads": "4 sessions (threads)",
    "processes": "4 processes",
    "host": "1 session, host thread on",
}


def _f(value: Any, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def markdown(results: dict) -> str:
    lines: list[str] = []
    writes_ = results.get("writes") or []
    if writes_:
        lines += [
            "Single-row INSERT transactions (autocommit; log entries per txn below 1 is group "
            "commit; the first read applies the pending log entries):",
            "",
            "| consensus | writers | txns | txns/s | vs 1 session | p50 ms | p99 ms | max ms "
            "| log entries/txn | first / last tenth txns/s | first read after | rows |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        base = {r["consensus"]: r["txns_per_s"] for r in writes_ if r.get("mode") == "one"}
        for r in writes_:
            if "skipped" in r:
                lines.append(f"| {r['consensus']} | skipped: {r['skipped']} ||||||||||||")
                continue
            tenths = (
                f"{r['first_tenth_per_s']:.0f} / {r['last_tenth_per_s']:.0f}"
                if "first_tenth_per_s" in r
                else "-"
            )
            ratio = r["txns_per_s"] / base[r["consensus"]] if r["consensus"] in base else None
            lines.append(
                f"| {r['consensus']} | {MODES[r['mode']]} | {r['txns']} | {r['txns_per_s']:.0f} | "
                f"{_f(ratio, '.2f')}x | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                f"{r['max_ms']:.0f} | "
                f"{r['entries_per_txn']:.2f} | {tenths} | {r['first_read_s']:.2f} s | "
                f"{r['check']} |"
            )
    copy = results.get("insert_select")
    if copy:
        lines += [
            "",
            "`INSERT INTO dst SELECT * FROM src` (src filled with one Arrow frame through the "
            "write log; a child process, so peak RSS is its own):",
            "",
            "| rows | fill src | first read of src | INSERT … SELECT | rows/s | RSS before "
            "| peak RSS | first read of dst | count, sum(id) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in copy:
            lines.append(
                f"| {r['rows']:,} | {r['fill_s']:.1f} s | {r['src_first_read_s']:.1f} s | "
                f"{r['insert_select_s']:.1f} s | {r['rows_per_s']:,.0f} | "
                f"{r['rss_before_mb']:,.0f} MB | {r['rss_peak_mb']:,.0f} MB | "
                f"{r['dst_first_read_s']:.1f} s | {r['check']} |"
            )
    sel = results.get("select")
    if sel:
        plain = sel["warm"]["plain view"]["p50_ms"]
        lines += [
            "",
            f"SELECT of one group from `{SELECT_VIEW}` over {sel['rows']:,} rows "
            f"({sel['groups']:,} groups; {sel['queries']} queries each, interleaved; fresh: "
            "one INSERT into events before each query):",
            "",
            "| read from | created + hydrated | warm p50 | warm p99 | plain view / this "
            "| fresh p50 | fresh p99 |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for kind in SELECT_KINDS:
            w, f = sel["warm"][kind], sel["fresh"][kind]
            lines.append(
                f"| {kind} | {sel['create_s'][kind]:.1f} s | {w['p50_ms']:.1f} ms | "
                f"{w['p99_ms']:.1f} ms | {plain / w['p50_ms']:.1f}x | {f['p50_ms']:.1f} ms | "
                f"{f['p99_ms']:.1f} ms |"
            )
        lines.append(f"\nThe three answered alike: {sel['check']}.")
        if sel.get("adhoc_join"):
            first = sel["adhoc_join"][0]
            lines += [
                "",
                "An ad hoc `SELECT count(*) FROM a JOIN b ON a.k = b.k` of two n-row tables "
                "(one match a row):",
                "",
                "| n | seconds | vs the smallest n | rows |",
                "|---:|---:|---:|---|",
            ]
            for j in sel["adhoc_join"]:
                lines.append(
                    f"| {j['rows']:,} | {j['seconds']:.2f} | "
                    f"{j['seconds'] / first['seconds']:.1f}x | {j['check']} |"
                )
    tp = results.get("tpch")
    if tp:
        lines += [
            "",
            f"TPC-H at SF {tp['scale']:g} as SQL materialized views against the hand-built "
            f"plans of `compute.py` on the same shards (Python dataflows; refresh steps insert "
            f"and delete 0.1% of the orders with their lineitems, {tp['changes_per_step']:,.0f} "
            f"changes, applied in {_f(tp['apply_s'], '.3f')} s median; DATE arithmetic: "
            f"{tp['date_arithmetic']}):",
            "",
            "| view | input rows | SQL hydration | hand hydration | SQL / hand | SQL step "
            "| hand step | SQL / hand | rows held SQL / hand | same plan |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        checks = []
        for view, r in tp["views"].items():
            if "sql_hydration_s" not in r:
                lines.append(f"| {view} | {r['input_rows']:,} | {r.get('sql')} ||||||||")
                continue
            lines.append(
                f"| {view} | {r['input_rows']:,} | {r['sql_hydration_s']:.2f} s | "
                f"{r['hand_hydration_s']:.2f} s | "
                f"{r['sql_hydration_s'] / r['hand_hydration_s']:.2f}x | "
                f"{r['sql_step_s'] * 1000:.0f} ms | {r['hand_step_s'] * 1000:.0f} ms | "
                f"{r['sql_step_s'] / r['hand_step_s']:.2f}x | "
                f"{r['sql_state_rows']:,} / {r['hand_state_rows']:,} | "
                f"{'yes' if r['sql_plan_same_as_hand'] else 'no'} |"
            )
            for when, key in (
                ("hydrated", "check_hydrated"),
                ("after the steps", "check_after_steps"),
            ):
                c = r[key]
                checks.append(
                    f"| {view} | {when} | {c['rows']} | {c['hand_dataflow']} | {c['evaluate']} "
                    f"| {c['duckdb']} |"
                )
        lines += [
            "",
            "The SQL view's rows (SELECT) against the hand plan:",
            "",
            "| view | when | rows | hand plan's dataflow | evaluate(hand plan) | DuckDB |",
            "|---|---|---:|---|---|---|",
            *checks,
            "",
            f"Q3 written `FROM customer, orders, lineitem WHERE …`: {tp['q3_comma_joins']}.",
        ]
    profiles = [
        (f"one session's INSERTs ({r['consensus']})", r["profile"])
        for r in writes_
        if "profile" in r
    ]
    profiles += [
        (f"INSERT … SELECT of {r['rows']:,} rows", r["profile"])
        for r in copy or []
        if "profile" in r
    ]
    if sel:
        profiles += [
            ("SELECT from the plain view", sel["plain_view_profile"]),
            (
                "SELECT from the materialized view after an INSERT",
                sel["fresh_materialized_profile"],
            ),
        ]
        if "adhoc_join_profile" in sel:
            n = sel["adhoc_join"][0]["rows"]
            profiles.append((f"the ad hoc join of two {n:,}-row tables", sel["adhoc_join_profile"]))
    if profiles:
        lines += ["", "Where the time goes (cProfile, own time of the top functions):", ""]
        for what, p in profiles:
            top = ", ".join(f"{t['function']} {t['share']:.0%}" for t in p["top"][:4])
            lines.append(f"- {what} ({p['total_s']:.2f} s profiled): {top}")
    return "\n".join(lines)
