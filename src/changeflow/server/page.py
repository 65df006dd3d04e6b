"""The status page's HTML: one self-contained page (no CDN) that draws /status.json every 2 s,
items grouped by kind, with a filter."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>changeflow status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fafafa; }
h1 { font-size: 18px; margin: 0 0 4px; }
#summary { color: #555; margin-bottom: 12px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { padding: 4px 8px; border-bottom: 1px solid #e4e4e4; text-align: left;
  vertical-align: middle; white-space: nowrap; }
th { background: #f0f0f0; font-weight: 600; white-space: normal; }
td.sink { white-space: normal; max-width: 170px; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.wall { color: #777; }
.kind { color: #666; }
.id { color: #888; font-family: monospace; }
.ok { color: #18794e; } .warn { color: #b35900; } .bad { color: #c62828; }
svg.chart { display: block; }
svg.chart polyline { fill: none; stroke: #2563eb; stroke-width: 1.5; }
svg.chart text { font-size: 9px; fill: #666; }
small { color: #777; }
tr.group th { background: #e8eef8; text-align: left; }
#filter { margin: 0 0 8px; padding: 3px 6px; width: 280px; }
</style></head>
<body>
<h1>changeflow status</h1>
<div id="summary">loading…</div>
<input id="filter" type="search" placeholder="filter: name, kind or id"
  aria-label="filter the items">
<noscript>This page draws with JavaScript; the same data is at
<a href="/status.json">/status.json</a> and <a href="/metrics">/metrics</a>.</noscript>
<table>
<thead><tr><th>item</th><th>since</th><th>upper</th>
<th title="wall clock minus upper: an idle table's upper moves only when it is written">behind
wall clock</th><th title="the timeline's read timestamp + 1 minus upper: what a read now waits
for">behind latest write</th><th>behind inputs</th><th>rows</th><th>arranged rows</th>
<th>steps p50 / max</th><th>sink progress</th><th>freshness (behind latest write)</th>
</tr></thead>
<tbody id="items"></tbody>
</table>
<p><small><a href="/status.json">status.json</a> · <a href="/metrics">metrics</a> ·
<a href="/health">health</a></small></p>
<script>
"use strict";
function esc(s) {
  return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;"}[c]));
}
function dash(v) { return v === null || v === undefined ? "—" : v; }
function ms(v) {
  if (v === null || v === undefined) return "—";
  if (v < 1000) return Math.round(v) + " ms";
  if (v < 60000) return (v / 1000).toFixed(1) + " s";
  if (v < 3600000) return (v / 60000).toFixed(1) + " min";
  return (v / 3600000).toFixed(1) + " h";
}
function num(v) { return v === null || v === undefined ? "—" : v.toLocaleString("en-US"); }
function lagClass(v) { return v === null ? "" : v < 5000 ? "ok" : v < 60000 ? "warn" : "bad"; }
function chart(points, now, window_s, since, unit) {
  const w = 160, h = 34;
  window_s = Math.max(10, Math.min(window_s, (now - since) / 1000));
  if (!points || points.length === 0) return '<svg class="chart" width="' + w + '" height="' +
    h + '"><text x="2" y="20">no samples</text></svg>';
  const start = now - window_s * 1000;
  points = points.filter(p => p[0] >= start);
  let top = 0;
  for (const p of points) top = Math.max(top, p[1]);
  top = top || 1;
  const xy = points.map(p =>
    ((p[0] - start) / (window_s * 1000) * (w - 2) + 1).toFixed(1) + "," +
    (h - 2 - p[1] / top * (h - 12)).toFixed(1));
  const label = unit === "ms" ? ms(top) : num(top);
  return '<svg class="chart" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h +
    '"><title>max ' + esc(label) + '</title><text x="2" y="9">max ' + esc(label) +
    '</text><polyline points="' + xy.join(" ") + '"/></svg>';
}
function clock(t) {
  return new Date(t).toISOString().slice(11, 23);
}
function sinkCell(s, epoch) {
  if (!s) return "—";
  const behind = s.frontier !== null && s.input_upper !== null ? s.input_upper - s.frontier : null;
  const at = s.frontier === null ? "not started" : "at " + (epoch ? clock(s.frontier) : s.frontier);
  return at + (behind === null ? "" : ", " + (epoch ? ms(Math.max(0, behind)) :
    num(Math.max(0, behind))) + " behind its input") +
    '<br><small>' + esc(s.target || "") + "</small>";
}
function render(st) {
  const up = st.host_alive ? '<span class="ok">host running</span>'
                           : '<span class="bad">host stopped</span>';
  document.getElementById("summary").innerHTML = esc(st.home) + " · " + up +
    (st.clients === null ? "" : " · " + st.clients + " clients") + " · " + st.items.length +
    " items · updated " + new Date(st.now_ms).toISOString().replace("T", " ").slice(0, 19) +
    " UTC" + (st.host_error ? ' · <span class="warn">last host error: ' + esc(st.host_error) +
    "</span>" : "");
  const words = document.getElementById("filter").value.toLowerCase().split(/\\s+/)
    .filter(w => w);
  const shown = st.items.filter(i => words.every(w =>
    (i.name + " " + i.kind + " " + i.id).toLowerCase().includes(w)));
  const kinds = [...new Set(shown.map(i => i.kind))].sort();
  const row = i => {
    const d = i.dataflow;
    const steps = d && d.step_p50_ms !== null ?
      d.step_p50_ms.toFixed(1) + " / " + d.step_max_ms.toFixed(1) + " ms" : "—";
    const epoch = i.timeline === "EpochMilliseconds";
    const behind = v => epoch ? ms(v) : num(v);
    const frontier = v => v === null ? "—" : epoch ?
      '<span title="' + v + '">' + clock(v) + "</span>" : num(v);
    const since = i.since !== null && epoch ?
      '<span title="' + i.since + '">' + ms(st.now_ms - i.since) + " ago</span>" : num(i.since);
    return '<tr data-id="' + esc(i.id) + '"><td><b>' + esc(i.name) + '</b><br><small>' +
      esc(i.kind) + (d ? " · " + esc(d.tier) + " tier" : "") +
      ' <span class="id">' + esc(i.id) + "</span>" +
      (epoch ? "" : " · " + esc(i.timeline)) + '</small></td><td class="n">' + since +
      '</td><td class="n">' + (i.closed ? "closed" : frontier(i.upper)) +
      '</td><td class="n wall">' + ms(i.lag_ms) + '</td><td class="n lag ' +
      (epoch ? lagClass(i.write_lag) : "") + '">' + behind(i.write_lag) +
      '</td><td class="n">' + behind(i.input_lag) + '</td><td class="n">' + num(i.rows) +
      '</td><td class="n">' + (d ? num(d.arranged) : "—") + '</td><td class="n">' + steps +
      '</td><td class="sink">' + sinkCell(i.sink, epoch) + "</td><td>" +
      chart(st.history.series[i.id], st.now_ms, st.history.window_seconds, st.started_ms,
        epoch ? "ms" : "times") +
      "</td></tr>";
  };
  const rows = kinds.map(kind => {
    const of = shown.filter(i => i.kind === kind);
    return '<tr class="group" data-kind="' + esc(kind) + '"><th colspan="11">' + esc(kind) +
      " (" + of.length + ")</th></tr>" + of.map(row).join("");
  });
  document.getElementById("items").innerHTML = rows.join("") || (st.items.length ?
    '<tr><td colspan="11">no item matches the filter</td></tr>' :
    '<tr><td colspan="11">no items yet: CREATE TABLE … through psql or psycopg</td></tr>');
}
let last = null;
document.getElementById("filter").addEventListener("input", () => { if (last) render(last); });
async function refresh() {
  try {
    const r = await fetch("/status.json", {cache: "no-store"});
    last = await r.json();
    render(last);
  } catch (e) {
    document.getElementById("summary").innerHTML =
      '<span class="bad">cannot reach the server: ' + esc(e) + "</span>";
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body></html>
"""
