"""report.html: one page per run (and one per comparison) that opens with no network.

Everything is inline: the figures as SVG drawn here, the problem table as JSON, a small script. The
samples of each problem (responses, extracted answers, grades) are gzip-compressed JSON, base64, and
decoded only when the problem is opened (the browser's DecompressionStream). Up to INLINE_LIMIT bytes
of compressed samples go into the page itself; past that they go to `report_files/p<N>.js` beside it,
each a script the page adds on demand (a <script> tag works from file://, fetch() does not), so a run of
675 problems x 64 samples x 10k tokens still paints its table at once (docs/benchmarks.md).
Model output is data here too: the page puts it in text nodes, never in innerHTML.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from reasoneval.analysis.outcomes import OUTCOME_COLUMNS, iter_problem_rows
from reasoneval.atomic import FileSet, atomic_write_text
from reasoneval.metrics import TaskMetrics
from reasoneval.report.figures import adaptive_lines, k_note, pass_ks, rows, sample_range, samples_label, view_line
from reasoneval.report.svg import esc, histogram, interval_plot, line_plot
from reasoneval.report.table import coverage_lines
from reasoneval.report.text import pct, pct_se
from reasoneval.results.schema import RunResult
from reasoneval.run_files import REPORT_FILE, REPORT_SIDECAR_DIR, RESULTS_FILE

INLINE_LIMIT = 16 * 1024 * 1024  # compressed sample bytes kept inside the page


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element (no `</script>` or `<!--` can close or confuse it)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c").replace(
        "\u2028", "\\u2028").replace("\u2029", "\\u2029")


# gzip level 3: a third of level 6's time for ~20% more bytes (measured on 2.5 MB of reasoning-like text:
# 38 ms vs 136 ms); the page is rebuilt by every `report`, so writing it must stay cheap.
GZIP_LEVEL = 3


def _verdict_text(details: object) -> str | None:
    """A program's verdict for the drill-down (the contest scorer's details): "wrong_answer at private test 3
    (index 4): detail", or None for a scorer that gives none."""
    try:
        d = json.loads(str(details)) if details else None
    except ValueError:
        return None
    if not isinstance(d, dict) or "verdict" not in d:
        return None
    text = str(d["verdict"])
    first = d.get("first_failure")
    if isinstance(first, dict):
        text += f" at {first.get('kind')} test {first.get('number')} (index {first.get('index')})"
    if d.get("detail") and d.get("verdict") != "passed":
        text += f": {str(d['detail'])[:200]}"
    return text


def _pack(d: dict[str, Any]) -> str:
    """One problem's samples as gzip'd JSON in base64, encoded sample by sample (no whole JSON text in memory)."""
    z = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # wbits 31: a gzip stream, as DecompressionStream wants
    head = {"problem": d.get("problem") or "", "answer": d.get("answer") or ""}
    parts = [z.compress((json.dumps(head, ensure_ascii=False)[:-1] + ',"samples":[').encode("utf-8"))]
    details = d.get("details") or [None] * len(d["sample_indices"])
    for n, (i, txt, e, c, st, sd, tk, fr, dt) in enumerate(zip(
            d["sample_indices"], d["responses"], d["extracted"], d["correct"], d["grade_status"], d["seeds"],
            d["completion_tokens"], d["finish_reasons"], details)):
        sample = {"index": i, "text": txt, "extracted": e, "correct": bool(c), "status": st, "seed": sd, "tokens": tk,
                  "finish": fr}
        verdict = _verdict_text(dt)
        if verdict:
            sample["verdict"] = verdict
        parts.append(z.compress(((", " if n else "") + json.dumps(sample, ensure_ascii=False)).encode("utf-8")))
    parts.append(z.compress(b"]}"))
    parts.append(z.flush())
    return base64.b64encode(b"".join(parts)).decode()


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child,.l{text-align:left}th{background:#f4f4f4}#problems th{position:sticky;top:0}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{border:1px solid #eee;background:#fff}
.pt{font-weight:600;font-size:13px}.tk{font-size:11px;fill:#555}.lg{font-size:11px}.ax{stroke:#333}.gr{stroke:#eee}
#problems tbody tr{cursor:pointer}#problems tbody tr:hover{background:#eef5ff}#problems th{cursor:pointer;user-select:none}
.ok{color:#1a7f37}.bad{color:#c62828}.controls{margin:8px 0;display:flex;gap:8px;align-items:center}
#detail{border:1px solid #ccc;padding:10px;margin-top:12px;background:#fafafa}
pre{white-space:pre-wrap;word-break:break-word;background:#fff;border:1px solid #eee;padding:8px;max-height:40em;overflow:auto}
mark{background:#ffe066}details.sample>summary{cursor:pointer;padding:2px 0}.muted{color:#777}
.tablewrap{max-height:36em;overflow:auto;border:1px solid #ddd}
"""

SCRIPT = r"""
(function(){
const P = JSON.parse(document.getElementById('re-problems').textContent);
const inline = JSON.parse(document.getElementById('re-samples').textContent);
const sidecar = document.body.dataset.sidecar;
const pending = {};
window.reSamples = function(i, b64){ const r = pending[i]; delete pending[i]; if (r) r(b64); };
function load(i){
  if (inline !== null) return Promise.resolve(inline[i]);
  return new Promise(function(resolve, reject){
    pending[i] = resolve;
    const s = document.createElement('script'); s.src = sidecar + '/p' + i + '.js';
    s.onerror = function(){ reject(new Error('cannot load ' + s.src)); }; document.head.appendChild(s);
  });
}
async function unpack(b64){
  const bin = atob(b64); const u = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) u[k] = bin.charCodeAt(k);
  const stream = new Blob([u]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text());
}
function el(tag, attrs, text){ const e = document.createElement(tag); for (const k in (attrs||{})) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = String(text); return e; }
const cols = [['id','id'],['task','task'],['acc','accuracy'],['n','K'],['maj','majority answer'],['ref','reference'],['tok','mean tokens']];
const tbody = document.querySelector('#problems tbody');
const filter = document.getElementById('filter'); const taskSel = document.getElementById('task');
const onlyWrong = document.getElementById('wrong'); const count = document.getElementById('count');
let sortKey = null, sortDir = 1;
function fmt(r, k){ if (k === 'acc') return r.acc === null ? '-' : (100*r.acc).toFixed(1);
  if (k === 'tok') return r.tok === null ? '-' : Math.round(r.tok); return r[k] === null ? '' : r[k]; }
function render(){
  const q = filter.value.toLowerCase(); const t = taskSel.value; const w = onlyWrong.checked;
  let rows = P.filter(function(r){ return (!t || r.task === t) && (!w || (r.acc !== null && r.acc < 1)) &&
    (!q || [r.id, r.task, r.maj, r.ref].some(function(v){ return v !== null && String(v).toLowerCase().includes(q); })); });
  if (sortKey) rows = rows.slice().sort(function(a, b){ const x = a[sortKey], y = b[sortKey];
    if (x === y) return 0; if (x === null) return 1; if (y === null) return -1; return (x < y ? -1 : 1) * sortDir; });
  tbody.replaceChildren();
  for (const r of rows){ const tr = el('tr', {'data-i': r.i});
    for (const [k] of cols){ const td = el('td', {}, fmt(r, k));
      if (k === 'id' || k === 'task' || k === 'maj' || k === 'ref') td.className = 'l';
      if (k === 'acc' && r.acc !== null) td.className = r.acc >= 0.5 ? 'ok' : 'bad'; tr.appendChild(td); }
    tr.addEventListener('click', function(){ show(r); }); tbody.appendChild(tr); }
  count.textContent = rows.length + ' of ' + P.length + ' problems';
}
document.querySelectorAll('#problems th').forEach(function(th){ th.addEventListener('click', function(){
  const k = th.dataset.k; sortDir = (sortKey === k) ? -sortDir : 1; sortKey = k;
  document.querySelectorAll('#problems th').forEach(function(h){ h.removeAttribute('aria-sort'); });
  th.setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending'); render(); }); });
filter.addEventListener('input', render); taskSel.addEventListener('change', render); onlyWrong.addEventListener('change', render);
function highlighted(text, ans){
  const pre = el('pre'); if (!ans) { pre.textContent = text; return pre; }
  const at = text.lastIndexOf(ans); if (at < 0) { pre.textContent = text; return pre; }
  pre.appendChild(document.createTextNode(text.slice(0, at))); pre.appendChild(el('mark', {}, ans));
  pre.appendChild(document.createTextNode(text.slice(at + ans.length))); return pre;
}
async function show(r){
  const d = document.getElementById('detail'); d.hidden = false; d.replaceChildren(el('h3', {}, r.task + ' / ' + r.id));
  d.appendChild(el('p', {'class': 'muted'}, 'loading samples...')); d.scrollIntoView({block: 'nearest'});
  let data; try { data = await unpack(await load(r.i)); } catch (e) { d.lastChild.textContent = 'cannot load the samples: ' + e; return; }
  d.lastChild.remove();
  d.appendChild(el('pre', {'class': 'problem'}, data.problem));
  d.appendChild(el('p', {}, 'reference: ' + data.answer + ' | accuracy ' + fmt(r, 'acc') + '% over ' + r.n + ' samples'));
  for (const s of data.samples){
    const det = el('details', {'class': 'sample'}); const sum = el('summary');
    sum.appendChild(el('span', {'class': s.correct ? 'ok' : 'bad'}, s.correct ? '\u2713 correct' : '\u2717 wrong'));
    sum.appendChild(document.createTextNode(' #' + s.index + ' answer: ' + (s.extracted === null ? '(none)' : s.extracted) +
      ' | ' + (s.tokens === null ? '?' : s.tokens) + ' tokens | finish: ' + s.finish + ' | seed ' + s.seed +
      (s.status && s.status !== 'ok' ? ' | grade: ' + s.status : '') + (s.verdict ? ' | verdict: ' + s.verdict : '')));
    det.appendChild(sum);
    det.addEventListener('toggle', function(){
      if (det.open && det.childNodes.length === 1) det.appendChild(highlighted(s.text, s.extracted)); });
    d.appendChild(det);
  }
}
render();
})();
"""


def _majority(extracted: Sequence[str | None]) -> str | None:
    votes = Counter(e for e in extracted if e not in (None, ""))
    return votes.most_common(1)[0][0] if votes else None


def _metrics_table(result: RunResult) -> str:
    ks = pass_ks(result)
    majs = ks
    head = (["task", "problems", "pass@1 ± SE (%)", "95% CI"] + [f"pass@{k}" for k in ks if k > 1]
            + [f"maj@{k}" for k in majs] + ["mean tokens", "truncated %", "no answer %", "missing"])

    def cells(name: str, m: TaskMetrics) -> list[str]:
        pm = pct_se(m.mean, m.stderr)
        ci = "-" if m.ci95 is None else f"[{pct(m.ci95[0])}, {pct(m.ci95[1])}]"
        return ([name, str(m.num_problems), pm, ci] + [pct(m.pass_at_k.get(k)) for k in ks if k > 1]
                + [pct(m.maj_at_k.get(k)) for k in majs]
                + ["-" if m.tokens.mean is None else f"{m.tokens.mean:.0f}", pct(m.truncation_rate),
                   pct(m.no_answer_rate), str(m.num_missing)])

    out = ['<table id="metrics"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for name, m in rows(result):
        out.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells(name, m)) + "</tr>")
    out.append("</tbody></table>")
    note = k_note(result)
    if note:
        out.append(f'<p class="muted" id="k-note">{esc(note)}</p>')
    if result.aggregate.macro_mean is not None and len(result.tasks) > 1:
        out.append(f"<p>macro mean over tasks: {pct(result.aggregate.macro_mean)}%</p>")
    return "".join(out)


def _judge_stages(result: RunResult) -> str:
    """The cascade's stages per judged task (report/table.judge_stage_lines), and its ungraded samples."""
    from reasoneval.report.table import judge_stage_lines, ungraded_lines

    lines = [*judge_stage_lines(result), *ungraded_lines(result)]
    if not lines:
        return ""
    return ('<h3>Rule and judge</h3><ul id="judge-stages">' + "".join(f"<li>{esc(x)}</li>" for x in lines)
            + "</ul>")


def _ratings(result: RunResult) -> str:
    """The Codeforces-style rating of each task whose problems are rated (metrics/rating.py)."""
    rated = [(t, m.rating) for t, m in result.tasks.items() if m.rating is not None]
    if not rated:
        return ""
    coverage = "".join(f"<li>{esc(line)}</li>" for line in coverage_lines(result))
    rows_ = "".join(f"<tr><td>{esc(t)}</td><td>{esc(r.describe())}</td><td>{r.num_problems}</td><td>{r.num_unrated}</td>"
                    f"<td>{pct(r.solve_rate)}</td></tr>" for t, r in rated)
    return ('<h3>Codeforces rating</h3><table id="rating"><thead><tr><th>task</th><th>rating (95% interval)</th>'
            "<th>rated problems</th><th>unrated, left out</th><th>samples right (%)</th></tr></thead>"
            f"<tbody>{rows_}</tbody></table><p class=muted>Elo model P(solve) = 1/(1+10^((r-R)/400)) fitted to every "
            "sample; the interval counts both the problems drawn and the samples per problem (docs/statistics.md). "
            "The percentile is among active Codeforces users in 2024 (Codeforces blog entry 126802), interpolated between "
            "the points that post states.</p>" + (f'<ul id="judged-by">{coverage}</ul>' if coverage else ""))


def _breakdowns(result: RunResult) -> str:
    out = []
    for t, m in result.tasks.items():
        for fld, groups in m.breakdown.items():
            out.append(f'<h3>{esc(t)}: accuracy by {esc(fld)}</h3><table class="breakdown"><thead><tr>'
                       f"<th>{esc(fld)}</th><th>problems</th><th>accuracy ± SE (%)</th><th></th></tr></thead><tbody>")
            for v, g in groups.items():
                out.append(f'<tr><td>{esc(v)}</td><td>{g.num_problems}</td><td>{pct_se(g.mean, g.stderr)}</td>'
                           f'<td class="l"><svg width="120" height="10"><rect width="{120 * g.mean:.1f}" height="10" '
                           f'fill="#1f77b4"/></svg></td></tr>')
            out.append("</tbody></table>")
    return "".join(out) or "<p class=muted>no subject or level in this data</p>"


def _samples_text(result: RunResult) -> str:
    lo, hi = sample_range(result)
    label = samples_label(lo, hi)
    return f"{label} samples per problem" if lo == hi else f"{label} (samples)"


def _view_text(result: RunResult) -> str:
    line = view_line(result)
    return f'<p class="bad" id="view">{esc(line)}</p>' if line else ""


def _adaptive(result: RunResult, n_per_problem: list[int]) -> str:
    if not result.adaptive:
        return ""
    items = "".join(f"<li>{esc(line)}</li>" for line in adaptive_lines(result))
    return (f"<h2>Adaptive sampling (--target-se)</h2><ul>{items}</ul><div class=\"plots\">"
            + histogram(n_per_problem, [], title="samples per problem (n_i)", xlabel="samples") + "</div>")


def _plots(result: RunResult, lengths: list[int], truncated: list[int]) -> str:
    passk = {t: sorted(m.pass_at_k.items()) for t, m in result.tasks.items()}
    maj = {t: sorted(m.maj_at_k.items()) for t, m in result.tasks.items()}
    se: dict[str, list[tuple[float, float | None]]] = {}
    for t, m in result.tasks.items():
        se[f"{t} SE"] = [(k, v.stderr) for k, v in sorted(m.se_vs_k.items())]
        se[f"{t} SE resample"] = [(k, v.stderr_resample) for k, v in sorted(m.se_vs_k.items())]
    return ('<div class="plots">'
            + line_plot({k: [(float(x), y) for x, y in v] for k, v in passk.items()}, title="pass@k", xlabel="k (log scale)",
                        ylabel="%", logx=True)
            + line_plot({k: [(float(x), y) for x, y in v] for k, v in maj.items()}, title="maj@k", xlabel="k (log scale)",
                        ylabel="%", logx=True)
            + histogram(lengths, truncated, title="response length", xlabel="completion tokens")
            + line_plot(se, title="SE of pass@1 vs samples per problem", xlabel="k (log scale)", ylabel="points",
                        logx=True, logy=True, dashed=[n for n in se if n.endswith("resample")])
            + "</div>")


def write_run_html(result: RunResult, path: Path | None = None, inline_limit: int = INLINE_LIMIT, *,
                   files: FileSet | None = None, parquet: Path | None = None) -> Path:
    """Write the run's report.html (and report_files/ when the samples are too large to inline): now, or through
    `files` (moved into place at its commit, with the results.parquet it reads, `parquet`, written beside)."""
    path = Path(path) if path else result.files_dir / REPORT_FILE
    sidecar = path.parent / REPORT_SIDECAR_DIR
    if files is not None:
        sidecar = files.temp_dir(sidecar)
    elif sidecar.exists():
        shutil.rmtree(sidecar)
    parquet = parquet or result.files_dir / RESULTS_FILE
    problems: list[dict[str, Any]] = []
    lengths: list[int] = []
    truncated: list[int] = []
    packed: dict[int, str] | None = {}
    packed_bytes = 0
    cols = (*OUTCOME_COLUMNS, "problem", "responses", "grade_status", "seeds", "details")
    for i, d in enumerate(iter_problem_rows(result.run_dir, cols, batch_size=1, path=parquet)):  # rows: 100s of MB
        correct = [bool(c) for c in d["correct"]]  # type: ignore[attr-defined]
        toks = [t for t in d["completion_tokens"] if t is not None]  # type: ignore[attr-defined]
        for t, fr in zip(d["completion_tokens"], d["finish_reasons"]):  # type: ignore[call-overload]
            if t is not None:
                (truncated if fr == "length" else lengths).append(int(t))
        problems.append({"i": i, "id": d["id"], "task": d["task"], "n": len(correct),
                         "acc": sum(correct) / len(correct) if correct else None,
                         "maj": _majority(d["extracted"]), "ref": d["answer"],  # type: ignore[arg-type]
                         "tok": sum(toks) / len(toks) if toks else None})
        blob = _pack(d)
        if packed is not None and packed_bytes + len(blob) <= inline_limit:
            packed[i] = blob
            packed_bytes += len(blob)
            continue
        if packed is not None:  # past the limit: every problem's samples go beside the page
            sidecar.mkdir(parents=True, exist_ok=True)
            for j, b in packed.items():
                _write_sidecar(sidecar, j, b)
            packed = None
        _write_sidecar(sidecar, i, blob)
    tasks = list(result.tasks)
    cfg = result.config
    settings = json.dumps({"settings": cfg.settings.to_json_dict(), "engine": cfg.engine, "engine_config": cfg.engine_config,
                           "scoring": {t: s.to_json_dict() for t, s in cfg.scoring.items()}, "versions": cfg.versions,
                           "scorers": result.scorers, "timing": dataclasses.asdict(result.timing)}, indent=2,
                          ensure_ascii=False, default=str)
    head_cols = [("id", "id"), ("task", "task"), ("acc", "accuracy %"), ("n", "K"), ("maj", "majority answer"),
                 ("ref", "reference"), ("tok", "mean tokens")]
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(result.model)} - reasoneval {esc(result.run_id)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>
<body data-sidecar="{REPORT_SIDECAR_DIR}">
<h1>{esc(result.model)}</h1>
<p>run <code>{esc(result.run_id)}</code> · <span id="samples">{esc(_samples_text(result))}</span> · engine {esc(cfg.engine)} ·
{"complete" if result.complete else "<b class=bad>incomplete</b>"} · created {esc(cfg.created or "?")} ·
updated {esc(cfg.updated or "?")}</p>{_view_text(result)}
<details><summary>settings and versions</summary><pre>{esc(settings)}</pre></details>
<h2>Metrics</h2>{_metrics_table(result)}{_ratings(result)}{_judge_stages(result)}
{_adaptive(result, [p["n"] for p in problems])}
<h2>Plots</h2>{_plots(result, lengths, truncated)}
<h2>By subject and level</h2>{_breakdowns(result)}
<h2>Problems</h2>
<div class="controls"><input id="filter" type="search" placeholder="filter: id, task, answer" size="30">
<select id="task"><option value="">all tasks</option>{"".join(f'<option>{esc(t)}</option>' for t in tasks)}</select>
<label><input id="wrong" type="checkbox"> not always right</label><span id="count" class="muted"></span></div>
<div class="tablewrap"><table id="problems"><thead><tr>{"".join(f'<th data-k="{k}">{esc(h)}</th>' for k, h in head_cols)}</tr></thead>
<tbody></tbody></table></div>
<div id="detail" hidden></div>
<script type="application/json" id="re-problems">{_script_json(problems)}</script>
<script type="application/json" id="re-samples">{_script_json(packed)}</script>
<script>{SCRIPT}</script>
</body></html>
"""
    if files is not None:
        files.write_text(path, body)
    else:
        atomic_write_text(path, body)
    return path


def _write_sidecar(d: Path, i: int, blob: str) -> None:
    (d / f"p{i}.js").write_text(f"reSamples({i},\"{blob}\");\n", encoding="ascii")


def write_compare_html(c: Any, path: Path) -> Path:
    """The comparison page of `analysis.compare.Comparison`: the table, pass@k of each run, the
    differences with their 95% CIs, and the flipped problems."""
    from reasoneval.report.compare import rows, run_labels, run_letters

    head, body_rows = rows(c)
    letters = run_letters(c)
    plots = []
    intervals = []
    for t in c.tasks:
        series = {f"{letters[i]} {t.task}": [(float(k), v) for k, v in sorted(t.pass_at_k[i].items())]
                  for i in range(len(c.runs))}
        plots.append(line_plot(series, title=f"{t.task}: pass@k", xlabel="k (log scale)", ylabel="%", logx=True))
        for i, v in enumerate(t.versus):
            if v.diff is not None and v.ci95 is not None:
                intervals.append((f"{t.task} {letters[i + 1]}-A", v.diff, v.ci95[0], v.ci95[1]))
    flips = []
    for t in c.tasks:
        for i, fl in enumerate(t.flips):
            if fl:
                items = "".join(f"<tr><td>{esc(f.id)}</td><td>{pct(f.accuracy_a)}</td><td>{pct(f.accuracy_b)}</td></tr>"
                                for f in fl)
                flips.append(f"<h3>{esc(t.task)}: A→{letters[i + 1]} flipped ({len(fl)})</h3><table><thead><tr><th>id</th>"
                             f"<th>A %</th><th>{letters[i + 1]} %</th></tr></thead><tbody>{items}</tbody></table>")
    table = ('<table id="compare"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
             + "".join("<tr>" + "".join(f"<td>{esc(x)}</td>" for x in r) + "</tr>" for r in body_rows) + "</tbody></table>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reasoneval comparison</title><style>{CSS}</style></head><body>
<h1>Comparison</h1><ul>{"".join(f"<li>{esc(label)} <code>{esc(r.run_dir)}</code></li>" for label, r in zip(run_labels(c), c.runs))}</ul>
<p>Each run against A on the problems both ran: difference ± SE paired over problems (it includes the
sampling noise of each problem's accuracy), 95% CI and p-value from Student t.</p>
{table}<h2>Plots</h2><div class="plots">{"".join(plots)}{interval_plot(intervals, title="difference against A")}</div>
<h2>Flipped problems</h2>{"".join(flips) or "<p>none</p>"}
</body></html>
"""
    atomic_write_text(path, page)
    return Path(path)
