#!/usr/bin/env python3
"""report.html at scale: size and time to first paint for 675 problems x 64 samples x ~10k tokens.

Builds a synthetic scored run directory (config.json, problems.jsonl, results.parquet, summary.json; the
responses are random words, ~4 characters a token, which gzip compresses about as much as real
reasoning text), writes report.html with `write_run_html`, and opens it in headless Chromium (Debian's
`chromium`, driven by Playwright). Printed, each beside a reference measured in the same run:

- write time of report.html (+ report_files/) / time to read the same results.parquet with its texts;
- bytes written / raw response bytes;
- first contentful paint and time until the problem table holds every row / the same for a blank page;
- time from a click on a problem to its samples on screen.

    PYTHONPATH=src python bench/html_report.py                       # 675 x 64 x 10k tokens (~1.7 GB of text)
    PYTHONPATH=src python bench/html_report.py --problems 50 --samples 8 --tokens 2000   # quick
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from _common import ROOT
from reasoneval.metrics import ProblemOutcome, se_vs_k, task_metrics
from reasoneval.records import Problem
from reasoneval.report.parquet import SCHEMA
from reasoneval.report.summary_json import write_summary
from reasoneval.results.identity import RunSettings
from reasoneval.results.schema import GenerationTiming, RunConfig, RunResult, write_config
from reasoneval.results.store import add_problems
from reasoneval.run_files import REPORT_FILE, REPORT_SIDECAR_DIR
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import problem_key

WORDS = ("so we have the sum of the squares which gives therefore let x be an integer note that if then "
         "consider case modulo prime factor divides equation substitute solve check wait actually hmm "
         "compute first second triangle angle area radius circle length because since hence").split()


def build(run_dir: Path, problems: int, samples: int, tokens: int, seed: int) -> int:
    rng = random.Random(seed)
    chars = tokens * 4
    pool = [" ".join(rng.choices(WORDS, k=chars // 6)) for _ in range(256)]
    probs = [Problem(task="math500", id=f"p{i:03d}", problem=f"Find the value of {i} + {i}.", answer=str(2 * i),
                     key=problem_key(f"Find the value of {i} + {i}.", str(2 * i)),
                     metadata={"subject": ("Algebra", "Geometry", "Number Theory")[i % 3], "level": 1 + i % 5})
             for i in range(problems)]
    run_dir.mkdir(parents=True)
    add_problems(run_dir, probs)
    raw = 0
    outcomes = []
    writer = pq.ParquetWriter(run_dir / "results.parquet", SCHEMA, compression="zstd")
    for i, p in enumerate(probs):
        acc = rng.random()
        correct = [rng.random() < acc for _ in range(samples)]
        trunc = [rng.random() < 0.05 for _ in range(samples)]
        texts = [f"{i}.{j} " + rng.choice(pool) + ("" if t else f" so the answer is \\boxed{{{p.answer if c else 0}}}")
                 for j, (c, t) in enumerate(zip(correct, trunc))]
        raw += sum(len(t) for t in texts)
        toks = [tokens if t else int(tokens * (0.5 + rng.random() / 2)) for t in trunc]
        extracted = [None if t else (p.answer if c else "0") for c, t in zip(correct, trunc)]
        writer.write_table(pa.Table.from_pylist([{
            "task": p.task, "id": p.id, "problem_key": p.key, "problem": p.problem, "answer": p.answer,
            "sample_indices": list(range(samples)), "responses": texts, "extracted": extracted, "correct": correct,
            "grade_status": ["ok" if e else "no_answer" for e in extracted], "seeds": list(range(samples)),
            "completion_tokens": toks, "finish_reasons": ["length" if t else "stop" for t in trunc]}], schema=SCHEMA))
        outcomes.append(ProblemOutcome(task=p.task, problem_key=p.key, correct=correct,
                                       classes=[None if e is None else int(e == p.answer) for e in extracted],
                                       correct_classes=frozenset({1}), completion_tokens=toks,
                                       finish_reasons=["length" if t else "stop" for t in trunc]))
    writer.close()
    cfg = RunConfig(run_id=run_dir.name, settings=RunSettings(model="synthetic"), engine="openai", n=samples, tasks=["math500"],
                    problem_keys={"math500": [p.key for p in probs]}, scoring={"math500": TaskScoring("math")})
    write_config(run_dir, cfg)
    m = task_metrics(outcomes, samples)
    m = dataclasses.replace(m, se_vs_k=se_vs_k(outcomes, samples))
    write_summary(RunResult(model="synthetic", run_id=run_dir.name, run_dir=run_dir, config=cfg, n=samples,
                            tasks={"math500": m}, aggregate=m, timing=GenerationTiming(), complete=True))
    return raw


# First contentful paint, in ms from navigation start (waits for the entry if the paint has not been recorded yet).
FCP_JS = """new Promise(resolve => new PerformanceObserver(list => {
  for (const e of list.getEntries()) if (e.name === 'first-contentful-paint') resolve(e.startTime);
}).observe({type: 'paint', buffered: true}))"""


def peak_rss(code: str) -> int:
    """Peak RSS (bytes) of a fresh interpreter running `code` after importing load_run: VmHWM, which starts
    afresh at exec (ru_maxrss would carry this big parent's RSS over the fork)."""
    script = ("from reasoneval.results.schema import load_run; " + code + "; print([l.split()[1] for l in "
              "open('/proc/self/status') if l.startswith('VmHWM:')][0])")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return int(out.stdout.split()[-1]) * 1024


def browser_times(page_path: Path, problems: int, chromium: str) -> tuple[float, float, float, float, float]:
    from playwright.sync_api import sync_playwright

    blank = page_path.with_name("blank.html")
    blank.write_text("<!DOCTYPE html><html><body><table><tr><td>x</td></tr></table></body></html>")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])

        def load(path: Path, rows: bool) -> tuple[float, float]:
            page = b.new_page()
            t0 = time.perf_counter()
            page.goto(path.as_uri())
            if rows:
                page.wait_for_function(f"document.querySelectorAll('#problems tbody tr').length === {problems}")
            ready = time.perf_counter() - t0
            fcp = page.evaluate(FCP_JS) / 1000
            if not rows:
                page.close()
            return fcp, ready

        load(blank, False)  # warm the browser
        fcp_blank, ready_blank = load(blank, False)
        page = b.new_page()
        t0 = time.perf_counter()
        page.goto(page_path.as_uri())
        page.wait_for_function(f"document.querySelectorAll('#problems tbody tr').length === {problems}")
        ready = time.perf_counter() - t0
        fcp = page.evaluate(FCP_JS) / 1000
        t0 = time.perf_counter()
        page.click("#problems tbody tr >> nth=0")
        page.wait_for_selector("#detail details.sample")
        click = time.perf_counter() - t0
        b.close()
    return fcp, ready, fcp_blank, ready_blank, click


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", type=int, default=675)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("--keep", help="build the run here (kept) instead of a temp dir")
    a = ap.parse_args()
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="html-bench-"))
    run_dir = tmp / "synthetic" / "run"
    try:
        t0 = time.perf_counter()
        raw = build(run_dir, a.problems, a.samples, a.tokens, a.seed)
        print(f"built {a.problems} x {a.samples} x {a.tokens} tokens: {raw / 1e6:.0f} MB of response text "
              f"in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        for batch in pq.ParquetFile(run_dir / "results.parquet").iter_batches(batch_size=1):
            batch.column("responses")
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        rss = peak_rss(f"from reasoneval.report.html_page import write_run_html; write_run_html(load_run({str(run_dir)!r}))")
        write_s = time.perf_counter() - t0
        rss0 = peak_rss(f"load_run({str(run_dir)!r})")
        page = run_dir / REPORT_FILE
        html_bytes = (run_dir / REPORT_FILE).stat().st_size
        side = run_dir / REPORT_SIDECAR_DIR
        side_bytes = sum(f.stat().st_size for f in side.iterdir()) if side.exists() else 0
        print(f"report.html: {html_bytes / 1e6:.2f} MB; {REPORT_SIDECAR_DIR}/: {side_bytes / 1e6:.0f} MB in "
              f"{len(list(side.iterdir())) if side.exists() else 0} files; written in {write_s:.1f} s")
        print(f"  write time / reading results.parquet with its texts ({read_s:.1f} s): {write_s / read_s:.2f}")
        print(f"  bytes written / raw response bytes: {(html_bytes + side_bytes) / raw:.3f}")
        print(f"  peak RSS of the writing process {rss / 1e6:.0f} MB; of one that only loads the run {rss0 / 1e6:.0f} MB "
              f"(ratio {rss / rss0:.2f})")
        fcp, ready, fcp0, ready0, click = browser_times(page, a.problems, a.chromium)
        print(f"first contentful paint {1000 * fcp:.0f} ms (blank page {1000 * fcp0:.0f} ms, ratio {fcp / fcp0:.2f}); "
              f"table with all {a.problems} rows after {1000 * ready:.0f} ms (blank page loaded in {1000 * ready0:.0f} ms, "
              f"ratio {ready / ready0:.1f})")
        print(f"click on a problem -> its {a.samples} samples on screen: {1000 * click:.0f} ms")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
