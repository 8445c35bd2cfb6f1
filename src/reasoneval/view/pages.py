"""The pages of `reasoneval view` and the JSON they poll: every run, one run (live while it runs), a training run's
curves, two checkpoints compared.

Model output and names are hostile text: the server puts text into HTML only through `esc`, data into a page only
as JSON inside `<script type="application/json">` (escaped so nothing closes the element), and the pages' scripts
put it into the document as text nodes (`textContent`), never as HTML. Every page also carries a Content-Security-
Policy whose nonce only the server's own scripts have (server.py), so a script that slipped through would not run.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from reasoneval.report.figures import top_k
from reasoneval.report.html_page import CSS, _script_json
from reasoneval.report.runs import checkpoint_items, checkpoint_table, setting_label, table_rows
from reasoneval.report.svg import COLORS, esc
from reasoneval.report.text import pct, pct_se
from reasoneval.results.schema import RunResult
from reasoneval.run_files import REPORT_FILE
from reasoneval.view.folder import RUNNING, Run

VIEW_CSS = CSS + """
nav{margin-bottom:1em}nav a{margin-right:1em}.st-running{color:#1565c0;font-weight:600}.st-complete{color:#1a7f37}
.st-failed,.st-damaged{color:#c62828}.st-incomplete,.st-scoring{color:#b26a00}#runs th{cursor:pointer;user-select:none}
.interim{border-left:4px solid #b26a00;padding-left:8px}.headline{border-left:4px solid #1a7f37;padding-left:8px}
.eb{stroke-width:1.5}
"""


def page(title: str, body: str, nonce: str, script: str = "", body_attrs: str = "") -> str:
    js = f'<script nonce="{nonce}">{script}</script>' if script else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} - reasoneval view</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{VIEW_CSS}</style></head>
<body{body_attrs}><nav><a href="/">all runs</a><a href="/training">training runs</a></nav>
{body}{js}</body></html>
"""


def data_block(element_id: str, obj: Any) -> str:
    return f'<script type="application/json" id="{esc(element_id)}">{_script_json(obj)}</script>'


def run_link(run: Run) -> str:
    return "/run/" + quote(run.rel) if run.rel else "/run/."


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


# ---- all runs -------------------------------------------------------------------------------------------------

def runs_payload(runs: Sequence[Run]) -> dict[str, Any]:
    """The all-runs table: per run its model, training run, checkpoint, step, tasks, K and pass@1 ± SE per task as
    `reasoneval runs` prints them (report.runs.table_rows), status and last update."""
    scored = [r for r in runs if r.row is not None]
    head, cells, _ = table_rows([r.row for r in scored if r.row is not None])
    tasks = [h[: -len(" pass@1 ± SE (%)")] for h in head if h.endswith(" pass@1 ± SE (%)")]
    by_dir = {str(r.dir): (line, r) for line, r in zip(cells, scored)}
    out = []
    for run in runs:
        point = run.checkpoint
        row: dict[str, Any] = {"model": run.config.model, "training_run": point.training_run, "checkpoint": point.name,
                               "step": point.step, "run_id": run.config.run_id, "status": run.status,
                               "updated": run.updated, "href": run_link(run), "pass1": {}, "cells": {},
                               "report": None, "problem": run.damage.problem if run.damage else None,
                               "repair": run.damage.repair if run.damage else None}
        hit = by_dir.get(str(run.dir))
        if hit is not None:
            line, _ = hit
            res = run.result
            assert res is not None
            row["model"] = res.model
            row["tasks"] = list(res.tasks)
            row["k"] = line[head.index("K")]
            row["views"] = line[head.index("views")]
            for t in tasks:
                cell = line[head.index(f"{t} pass@1 ± SE (%)")]
                if cell:
                    row["cells"][t] = cell
                    row["pass1"][t] = _finite(res.tasks[t].mean)
            if (run.dir / REPORT_FILE).is_file():
                row["report"] = "/files/" + quote(f"{run.rel}/{REPORT_FILE}" if run.rel else REPORT_FILE)
        else:
            row["tasks"] = list(run.config.tasks)
            # an adaptive run's config.json n is an index bound (2 x --max-n), not what a problem gets (issue 52.4)
            adaptive = run.config.adaptive or {}
            row["k"] = f"at most {adaptive['max_n']} (adaptive)" if adaptive.get("max_n") else str(run.config.n)
            row["views"] = ""
        out.append(row)
    return {"tasks": tasks, "rows": out}


INDEX_SCRIPT = r"""
(function(){
let D = JSON.parse(document.getElementById('re-runs').textContent);
const tbody = document.querySelector('#runs tbody'); const thead = document.querySelector('#runs thead tr');
const filter = document.getElementById('filter'); const statusSel = document.getElementById('status');
const count = document.getElementById('count');
let sortKey = null, sortDir = 1;
function el(tag, text, cls){ const e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls; return e; }
function cols(){ const c = [['model','model'],['training_run','training run'],['checkpoint','checkpoint'],['step','step'],
  ['tasks','tasks'],['k','K']]; for (const t of D.tasks) c.push(['task:' + t, t + ' pass@1 ± SE (%)']);
  c.push(['status','status'],['updated','last update']); return c; }
function value(r, k){ if (k.startsWith('task:')) { const v = r.pass1[k.slice(5)]; return v === undefined ? null : v; }
  if (k === 'tasks') return r.tasks.join(', '); return r[k] === undefined ? null : r[k]; }
function text(r, k){ if (k.startsWith('task:')) return r.cells[k.slice(5)] || '';
  if (k === 'updated') return r.updated ? new Date(r.updated * 1000).toISOString().replace('T', ' ').slice(0, 19) : '';
  const v = value(r, k); return v === null ? '' : v; }
const TEXT = ['model','training_run','checkpoint','tasks','status'];
function head(){ thead.replaceChildren();
  for (const [k, h] of cols()){ const th = el('th', h, TEXT.includes(k) ? 'l' : ''); th.dataset.k = k;
  th.addEventListener('click', function(){ sortDir = sortKey === k ? -sortDir : 1; sortKey = k; render(); }); thead.appendChild(th); } }
function render(){
  const q = filter.value.toLowerCase(); const s = statusSel.value;
  let rows = D.rows.filter(function(r){ return (!s || r.status === s) && (!q || [r.model, r.training_run, r.checkpoint,
    r.run_id, r.tasks.join(' ')].some(function(v){ return v !== null && String(v).toLowerCase().includes(q); })); });
  if (sortKey) rows = rows.slice().sort(function(a, b){ const x = value(a, sortKey), y = value(b, sortKey);
    if (x === y) return 0; if (x === null) return 1; if (y === null) return -1; return (x < y ? -1 : 1) * sortDir; });
  tbody.replaceChildren();
  for (const r of rows){ const tr = el('tr'); tr.dataset.runId = r.run_id;
    for (const [k] of cols()){ const td = el('td');
      if (k === 'model'){ const a = el('a', r.model); a.href = r.href; td.appendChild(a);
        if (r.report){ const b = el('a', 'report'); b.href = r.report; b.className = 'muted'; td.append(' ', b); } }
      else if (k === 'training_run' && r.training_run){ const a = el('a', r.training_run);
        a.href = '/training?name=' + encodeURIComponent(r.training_run); td.appendChild(a); }
      else td.textContent = String(text(r, k));
      if (k === 'status'){ td.className = 'st-' + r.status;
        if (r.problem){ const p = el('div', r.problem, 'muted problem'); const c = el('code', r.repair, 'repair');
          td.append(p, el('span', 'repair: ', 'muted'), c); } }
      if (TEXT.includes(k)) td.classList.add('l');
      td.dataset.k = k; tr.appendChild(td); }
    tbody.appendChild(tr); }
  count.textContent = rows.length + ' of ' + D.rows.length + ' runs';
}
filter.addEventListener('input', render); statusSel.addEventListener('change', render);
head(); render();
setInterval(async function(){ try { const r = await fetch('/api/runs', {credentials: 'same-origin'});
  if (r.ok){ const n = await r.json(); const reHead = JSON.stringify(n.tasks) !== JSON.stringify(D.tasks); D = n;
  if (reHead) head(); render(); } } catch (e) {} }, 5000);
})();
"""


def index_page(payload: Mapping[str, Any], root: str, nonce: str) -> str:
    statuses = ["running", "scoring", "complete", "incomplete", "failed", "damaged"]
    body = f"""<h1>Runs under <code>{esc(root)}</code></h1>
<p class="muted">Each row is a run's headline (summary.json), the numbers of <code>reasoneval runs</code>; a running
run's row links to its live page. Updated every 5 s.</p>
<div class="controls"><input id="filter" type="search" placeholder="filter: model, training run, checkpoint, task" size="40">
<select id="status"><option value="">every status</option>{"".join(f"<option>{s}</option>" for s in statuses)}</select>
<span id="count" class="muted"></span></div>
<div class="tablewrap"><table id="runs"><thead><tr></tr></thead><tbody></tbody></table></div>
{data_block("re-runs", payload)}"""
    return page("runs", body, nonce, INDEX_SCRIPT)


# ---- one run ----------------------------------------------------------------------------------------------------

def headline_rows(result: RunResult) -> list[dict[str, Any]]:
    """Per task the headline's figures as report.html and the table print them (summary.json)."""
    out = []
    for t, m in result.tasks.items():
        K = top_k(m)
        lo, hi = m.sample_range()
        out.append({"task": t, "problems": m.num_problems, "k": str(hi) if lo == hi else f"{lo}–{hi}",
                    "pass1": pct_se(m.mean, m.stderr), "top_k": K,
                    "pass_k": pct(m.pass_at_k.get(K)) if K > 1 else "", "maj_k": pct(m.maj_at_k.get(K)) if K > 1 else "",
                    "missing": m.num_missing})
    return out


def run_payload(run: Run, progress: Mapping[str, Any] | None, interim: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"status": run.status, "running": run.status == RUNNING, "progress": progress,
            "interim": {t: {**v, "text": pct_se(v["mean"], v["stderr"])} for t, v in (interim or {}).items()},
            "headline": headline_rows(run.result) if run.result is not None else None,
            "complete": None if run.result is None else run.result.complete, "updated": run.updated,
            "problem": run.damage.problem if run.damage else None, "repair": run.damage.repair if run.damage else None}


RUN_SCRIPT = r"""
(function(){
const api = document.body.dataset.api;
function el(tag, text, cls){ const e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls; return e; }
function table(id, head, rows){ const t = document.getElementById(id); t.replaceChildren();
  const tr = el('tr'); for (const h of head) tr.appendChild(el('th', h)); const th = el('thead'); th.appendChild(tr); t.appendChild(th);
  const tb = el('tbody'); for (const r of rows){ const row = el('tr');
    for (const [k, v] of r){ const td = el('td', v); td.dataset.k = k; row.appendChild(td); }
    tb.appendChild(row); } t.appendChild(tb); }
function dur(s){ if (s === null || s === undefined) return '-'; s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
  return (h ? h + ' h ' : '') + (h || m ? m + ' min ' : '') + (s % 60) + ' s'; }
function show(D){
  const st = document.getElementById('status'); st.textContent = D.status; st.className = 'st-' + D.status;
  document.getElementById('damage-box').hidden = !D.problem;
  document.getElementById('problem').textContent = D.problem || ''; document.getElementById('repair').textContent = D.repair || '';
  const P = D.progress; document.getElementById('progress-box').hidden = !P;
  if (P){
    table('progress', ['task', 'samples done', 'of wanted', 'problems with all K in', 'failed', 'retries'],
      P.tasks.map(function(t){ return [['task', t.task], ['done', t.done], ['wanted', (t.at_most ? 'at most ' : '') + t.wanted],
        ['problems_complete', t.problems_complete + ' of ' + t.problems], ['failed', t.failed], ['retries', t.retries]]; }));
    document.getElementById('done').textContent = P.done;
    document.getElementById('wanted').textContent = (P.at_most ? 'at most ' : '') + P.wanted;
    document.getElementById('rate').textContent = P.tokens_per_s.toFixed(1) + ' tokens/s, ' + P.samples_per_s.toFixed(2) + ' samples/s';
    document.getElementById('eta').textContent = (P.at_most && P.eta_s ? 'at most ' : '') + dur(P.eta_s);
    document.getElementById('failures').textContent = P.failed + ' failed samples, ' + P.retries + ' retries';
  }
  const I = Object.entries(D.interim || {}); document.getElementById('interim-box').hidden = I.length === 0;
  table('interim', ['task', 'problems covered', 'pass@1 ± SE (%), interim'],
    I.map(function([t, v]){ return [['task', t], ['problems', v.problems + ' of ' + v.of], ['pass1', v.text]]; }));
  const H = D.headline; document.getElementById('headline-box').hidden = !H;
  if (H) table('headline', ['task', 'problems', 'K', 'pass@1 ± SE (%)', 'pass@K (%)', 'maj@K (%)', 'missing'],
    H.map(function(r){ return [['task', r.task], ['problems', r.problems], ['k', r.k], ['pass1', r.pass1],
      ['pass_k', r.top_k > 1 ? r.pass_k + ' (K=' + r.top_k + ')' : '-'], ['maj_k', r.top_k > 1 ? r.maj_k + ' (K=' + r.top_k + ')' : '-'],
      ['missing', r.missing]]; }));
  document.getElementById('headline-state').textContent = D.complete === false ? ' (incomplete)' : '';
  document.getElementById('updated').textContent = new Date().toISOString().slice(11, 19);
  return D.status;
}
async function poll(){ let status = 'running';
  try { const r = await fetch(api, {credentials: 'same-origin'}); if (r.ok) status = show(await r.json()); } catch (e) {}
  setTimeout(poll, ['running', 'scoring'].includes(status) ? 2000 : 10000); }
show(JSON.parse(document.getElementById('re-run').textContent));
setTimeout(poll, 2000);
})();
"""


def run_page(run: Run, payload: Mapping[str, Any], nonce: str) -> str:
    point = run.checkpoint
    report = ""
    if (run.dir / REPORT_FILE).is_file():
        href = "/files/" + quote(f"{run.rel}/{REPORT_FILE}" if run.rel else REPORT_FILE)
        report = f' · <a id="report" href="{esc(href)}">report.html</a> (every problem and sample)'
    training = (f' · training run <a href="/training?name={esc(quote(point.training_run))}">{esc(point.training_run)}</a>'
                if point.training_run else "")
    body = f"""<h1 id="model">{esc(run.result.model if run.result else run.config.model)}</h1>
<p>run <code id="run-id">{esc(run.config.run_id)}</code> · checkpoint {esc(point.name)}{training} ·
status <span id="status"></span>{report} · page updated <span id="updated"></span></p>
<div id="damage-box" class="interim" hidden><p><span id="problem"></span>; repair it with <code id="repair"></code></p></div>
<div id="progress-box" hidden><h2>Progress (read from the journal)</h2>
<p><span id="done"></span> of <span id="wanted"></span> samples · <span id="rate"></span> · ETA <span id="eta"></span> ·
<span id="failures"></span></p><table id="progress"></table></div>
<div id="interim-box" class="interim" hidden><h2>Interim figures</h2>
<p>Over only the problems whose K samples are all in, graded by the task's scorer: not the run's result, which
is written when the run ends (summary.json).</p><table id="interim"></table></div>
<div id="headline-box" class="headline" hidden><h2>Headline (summary.json)<span id="headline-state"></span></h2>
<p class="muted">The run's widest complete evaluation, as <code>reasoneval runs</code> and report.html show it.</p>
<table id="headline"></table></div>
{data_block("re-run", payload)}"""
    return page(run.config.model, body, nonce, RUN_SCRIPT, f' data-api="/api{esc(run_link(run))}"')


# ---- a training run ---------------------------------------------------------------------------------------------

def training_runs(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Training run -> its scored runs (a checkpoint's model path's folder; "" for models without one)."""
    out: dict[str, list[Run]] = {}
    for r in runs:
        if r.result is not None:
            out.setdefault(r.checkpoint.training_run, []).append(r)
    return dict(sorted(out.items()))


def training_index(groups: Mapping[str, Sequence[Run]], nonce: str) -> str:
    items = "".join(f'<li><a href="/training?name={esc(quote(name))}">{esc(name or "(models without a folder)")}</a> '
                    f'<span class="muted">{len({r.checkpoint for r in rs})} checkpoints</span></li>'
                    for name, rs in groups.items())
    return page("training runs", f"<h1>Training runs</h1><ul id='training-runs'>{items or '<li>none yet</li>'}</ul>", nonce)


def stderr_column(column: str) -> str:
    """lm-eval's name of a figure's SE column in the checkpoint table's records (report.runs)."""
    metric, comma, filt = column.partition(",")
    return f"{metric}_stderr{comma}{filt}"


def curve_series(head: Sequence[str], records: Sequence[Mapping[str, Any]]
                 ) -> dict[str, dict[str, list[tuple[float, float, float | None, str]]]]:
    """family ("pass@1", "pass@k", "maj@k") -> series (task, or "task pass@K" where K differs; "task [temperature=1]"
    where a checkpoint's rows differ in settings) -> points (x: the step, or the checkpoint's position when its name
    has none; value; SE or None; the checkpoint's name)."""
    out: dict[str, dict[str, list[tuple[float, float, float | None, str]]]] = {}
    columns = [c for c in head if "/" in c]
    for c in columns:
        task, metric = c.rsplit("/", 1)
        if "/subject/" in c or "/" in task and task.endswith("/subject"):
            continue
        if metric == "pass@1":
            family, name = "pass@1", task
        elif re.fullmatch(r"pass@\d+", metric):
            family, name = "pass@k", f"{task} {metric}"
        elif re.fullmatch(r"maj@\d+", metric):
            family, name = "maj@k", f"{task} {metric}"
        else:
            continue
        for i, rec in enumerate(records):
            v = rec.get(c)
            if v in ("", None):
                continue
            se = rec.get(stderr_column(c))
            x = float(rec["step"]) if rec.get("step") not in ("", None) else float(i)
            # A checkpoint's rows of other settings (seed, temperature, K) are lines of their own, named by the
            # setting, as `runs --by-checkpoint` keeps them apart (issue 52.2): never two points of one line at a step.
            line = f"{name} [{rec['settings']}]" if rec.get("settings") else name
            out.setdefault(family, {}).setdefault(line, []).append(
                (x, float(v), float(se) if se not in ("", None) else None, str(rec["checkpoint"])))
    return out


def errorbar_plot(series: Mapping[str, Sequence[tuple[float, float, float | None, str]]], *, title: str, xlabel: str,
                  plot_id: str) -> str:
    """One line per series, a point per checkpoint with a bar of ± 1 SE where the figure has one (y in %)."""
    W, H, L, R, T, B = 560, 300, 52, 12, 28, 40
    pts = [(x, y, se) for s in series.values() for x, y, se, _ in s]
    if not pts:
        return f'<svg class="plot" id="{esc(plot_id)}" width="{W}" height="{H}"><text x="10" y="20">{esc(title)}: no data</text></svg>'
    xs = [x for x, _, _ in pts]
    lo = min(y - (se or 0) for _, y, se in pts)
    hi = max(y + (se or 0) for _, y, se in pts)
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    pad = (hi - lo) * 0.08 or 0.05
    y0, y1 = max(0.0, lo - pad), min(1.0, hi + pad) if hi + pad > lo - pad else hi + pad

    def px(v: float) -> float:
        return L + (v - x0) / (x1 - x0) * (W - L - R - 10) + 5

    def py(v: float) -> float:
        return H - B - (v - y0) / ((y1 - y0) or 1) * (H - T - B)

    out = [f'<svg class="plot" id="{esc(plot_id)}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="{esc(title)}"><text x="{W / 2}" y="16" text-anchor="middle" class="pt">{esc(title)}</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" class="ax"/><line x1="{L}" y1="{T}" x2="{L}" '
           f'y2="{H - B}" class="ax"/>']
    for xt in sorted(set(xs))[:: max(1, len(set(xs)) // 8)]:
        out.append(f'<text x="{px(xt):.1f}" y="{H - B + 14}" text-anchor="middle" class="tk">{xt:g}</text>')
    steps = 5
    for j in range(steps + 1):
        v = y0 + (y1 - y0) * j / steps
        out.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - R}" y2="{py(v):.1f}" class="gr"/>'
                   f'<text x="{L - 4}" y="{py(v) + 4:.1f}" text-anchor="end" class="tk">{100 * v:.1f}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 6}" text-anchor="middle" class="tk">{esc(xlabel)}</text>')
    for i, (name, s) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        d = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y, _, _) in enumerate(s))
        out.append(f'<g class="series" data-series="{esc(name)}"><path d="{d}" fill="none" stroke="{color}" '
                   f'stroke-width="2"/>')
        for x, y, se, ckpt in s:
            if se is not None:
                out.append(f'<line class="eb" x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{py(max(y0, y - se)):.1f}" '
                           f'y2="{py(min(y1, y + se)):.1f}" stroke="{color}"/>')
            label = f"{name} · {ckpt}: {100 * y:.2f}%" + ("" if se is None else f" ± {100 * se:.2f}")
            out.append(f'<circle class="pt" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}" data-x="{x:g}" '
                       f'data-y="{y!r}" data-se="{"" if se is None else repr(se)}" data-checkpoint="{esc(ckpt)}">'
                       f'<title>{esc(label)}</title></circle>')
        out.append(f'<text x="{W - R - 4}" y="{T + 12 + 13 * i}" text-anchor="end" fill="{color}" class="lg">'
                   f'{esc(name)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def training_table(runs: Sequence[Run]) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """`runs --by-checkpoint`'s table of one training run's checkpoints (report.runs.checkpoint_table)."""
    return checkpoint_table(checkpoint_items([r.row for r in runs if r.row is not None]))


def training_page(name: str, runs: Sequence[Run], nonce: str) -> str:
    head, cells, records = training_table(runs)
    families = curve_series(head, records)
    xlabel = "training step" if all(rec.get("step") not in ("", None) for rec in records) else "checkpoint"
    plots = "".join(errorbar_plot(families[f], title=f"{f} against {xlabel} (bars: ± 1 SE)" if f == "pass@1" else
                                  f"{f} against {xlabel}", xlabel=xlabel, plot_id=f"plot-{f.replace('@', '-')}")
                    for f in ("pass@1", "pass@k", "maj@k") if f in families)
    table = ('<table id="checkpoints"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in cells)
             + "</tbody></table>")
    ordered = sorted((r for r in runs if r.result is not None),
                     key=lambda r: (r.checkpoint.step is None, r.checkpoint.step or 0, r.checkpoint.name, r.rel))

    def label(r: Run) -> str:
        s = setting_label(r.result) if r.result is not None else ""
        return f"{r.checkpoint.name}{f' ({s})' if s else ''} · {', '.join(r.result.tasks) if r.result else ''} · {r.config.run_id}"

    options = "".join(f'<option value="{esc(r.rel)}">{esc(label(r))}</option>' for r in ordered)
    second = "".join(f'<option value="{esc(r.rel)}"{" selected" if i == len(ordered) - 1 else ""}>{esc(label(r))}</option>'
                     for i, r in enumerate(ordered))
    body = f"""<h1>Training run <code id="training-name">{esc(name or "(models without a folder)")}</code></h1>
<p class="muted">One point per checkpoint evaluated so far, one line per task; the numbers of
<code>reasoneval runs --by-checkpoint</code> (fractions below, % in the plots).</p>
<div class="plots">{plots}</div>
<h2>Checkpoints</h2><div class="tablewrap">{table}</div>
<h2>Compare two checkpoints</h2>
<form id="compare-form" method="get" action="/compare">A <select name="a" id="cmp-a">{options}</select>
B <select name="b" id="cmp-b">{second}</select> <button type="submit">compare (paired, B - A)</button></form>"""
    return page(f"training run {name}", body, nonce)


# ---- two runs compared --------------------------------------------------------------------------------------------

def _majority(extracted: Sequence[str | None]) -> str:
    votes = Counter(e for e in extracted if e not in (None, ""))
    return votes.most_common(1)[0][0] if votes else ""


def compare_page(a: Run, b: Run, nonce: str) -> str:
    """The paired comparison (analysis.compare) of B against A: the table of `reasoneval compare`, and each task's
    flipped problems with the majority answer of each run and the reference."""
    from reasoneval.analysis.compare import compare_runs
    from reasoneval.analysis.outcomes import read_problem_rows
    from reasoneval.report.compare import rows

    c = compare_runs([a.dir, b.dir])
    head, body_rows = rows(c)
    answers = [{(r.task, r.problem_key): r for r in read_problem_rows(d)} for d in (a.dir, b.dir)]
    table = ('<table id="compare"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{esc(x)}</td>" for x in r) + "</tr>" for r in body_rows) + "</tbody></table>")
    flips = []
    for t in c.tasks:
        fl = t.flips[0] if t.flips else []
        items = []
        for f in fl:
            ra, rb = answers[0].get((t.task, f.problem_key)), answers[1].get((t.task, f.problem_key))
            items.append(f'<tr><td class="l">{esc(f.id)}</td><td>{pct(f.accuracy_a)}</td><td>{pct(f.accuracy_b)}</td>'
                         f'<td class="l">{esc(_majority(ra.extracted) if ra else "")}</td>'
                         f'<td class="l">{esc(_majority(rb.extracted) if rb else "")}</td>'
                         f'<td class="l">{esc(ra.answer if ra else rb.answer if rb else "")}</td></tr>')
        flips.append(f'<h3>{esc(t.task)}: {len(fl)} flipped</h3><table class="flips"><thead><tr><th>id</th><th>A %</th>'
                     f'<th>B %</th><th>A majority answer</th><th>B majority answer</th><th>reference</th></tr></thead>'
                     f'<tbody>{"".join(items)}</tbody></table>')

    def who(letter: str, r: Run) -> str:
        return (f'<li>{letter}: <a href="{esc(run_link(r))}">{esc(r.checkpoint.name)}</a> '
                f'<span class="muted">{esc(r.config.model)} · run {esc(r.config.run_id)}</span></li>')

    body = f"""<h1>Comparison</h1><ul>{who("A", a)}{who("B", b)}</ul>
<p>B against A on the problems both ran: difference ± SE paired over problems (it includes the sampling noise of
each problem's accuracy), 95% CI and p-value from Student t (<code>reasoneval compare</code>).
A problem flipped when it is mostly right in one run and mostly wrong in the other.</p>
{table}<h2>Flipped problems</h2>{"".join(flips) or "<p>none</p>"}"""
    return page("comparison", body, nonce)
