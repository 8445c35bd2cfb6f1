"""`reasoneval view` in headless Chromium while a run writes its journal: the done count rises without a reload, and
once the run ends every figure on the run's page equals summary.json and every cell of the all-runs table equals
`reasoneval runs`."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from reasoneval.cli.main import main
from reasoneval.report.figures import top_k
from reasoneval.report.runs import list_runs, table_rows
from reasoneval.report.text import pct, pct_se
from reasoneval.results.schema import load_run
from reasoneval.run_files import SAMPLES_FILE
from tests.analysis.runs import make_run
from tests.report.browser import browser  # noqa: F401  (fixture)
from tests.view.helpers import shot, viewing

Q, K = 6, 4


def right(i: int, j: int) -> bool:
    return j < i % 5


def test_live_run_in_chromium(make_openai_server: Any, tmp_path: Path, browser: Any, capsys: Any) -> None:  # noqa: F811
    root = tmp_path / "results"
    root.mkdir()
    # A slow server (one request at a time, 0.5 s each): 24 samples take about 12 s, several polls of the page; one
    # request in five gets a 500 first (retried).
    finished: dict[str, Any] = {}

    def slow(**kw: Any) -> Any:
        return make_openai_server(delay_s=0.5, max_concurrent=1, fault_rates={"http500": 0.2}, fault_seed=3, **kw)

    def go() -> None:
        try:
            finished["dir"] = make_run(slow, tmp_path, "org/live-model", right, q=Q, n=K, concurrency=1)
        except BaseException as e:  # re-raised in the test's thread
            finished["error"] = e

    with viewing(root) as (url, base):
        page = browser.new_page(viewport={"width": 1100, "height": 700})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        worker = threading.Thread(target=go)
        worker.start()
        # The all-runs table polls: the run appears without a reload, as running.
        page.wait_for_selector("#runs tbody tr td[data-k=status]:has-text('running')", timeout=60_000)
        page.click("#runs tbody tr >> nth=0 >> td[data-k=model] a >> nth=0")
        page.wait_for_selector("#progress-box:not([hidden])")
        seen, retries, rates = [], [], []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = page.text_content("#status")
            done, wanted = page.text_content("#done"), page.text_content("#wanted")
            if status == "running" and done:
                seen.append(int(done))
                assert wanted == str(Q * K)
                retries.append(int(page.text_content("#progress td[data-k=retries]")))
                rates.append(page.text_content("#rate"))
            if status == "running" and "interim" not in finished and page.is_visible("#interim-box"):
                covered = page.text_content("#interim td[data-k=problems]")
                complete = page.text_content("#progress td[data-k=problems_complete]")
                finished["interim"] = (covered, complete, page.text_content("#interim-box h2"))
            if status == "running" and seen and seen[-1] >= Q * K * 2 // 3 and page.is_visible("#interim-box") \
                    and "shot" not in finished:
                finished["shot"] = True
                shot(page, "view-live.png")  # for docs/reporting.md: most problems in
            if "dir" in finished or "error" in finished:
                break
            time.sleep(0.5)
        worker.join(120)
        assert "error" not in finished, finished.get("error")
        # The count rose while the run wrote, never fell, and was below the total while it ran.
        assert len(set(seen)) >= 3, seen
        assert seen == sorted(seen) and min(seen) < Q * K
        # Retries as the journal counts them (attempts beyond the first), and a token rate once samples came in.
        journal = [json.loads(line) for line in (Path(finished["dir"]) / SAMPLES_FILE).read_text().splitlines()]
        total = sum(d["attempts"] - 1 for d in journal)
        assert total > 0 and max(retries) > 0 and retries == sorted(retries) and max(retries) <= total
        assert any(re.fullmatch(r"[1-9][0-9.]* tokens/s, [0-9.]+ samples/s", r) for r in rates), rates
        # After the run: the page turns to the headline, every figure as summary.json has it.
        run_dir = Path(finished["dir"])
        result = load_run(run_dir)
        page.wait_for_selector("#headline-box:not([hidden])", timeout=60_000)
        page.wait_for_function("document.getElementById('status').textContent === 'complete'", timeout=60_000)
        cells = page.eval_on_selector_all("#headline tbody tr", "rows => rows.map(r => Object.fromEntries("
                                          "[...r.cells].map(c => [c.dataset.k, c.textContent])))")
        assert [c["task"] for c in cells] == list(result.tasks)
        for c, m in zip(cells, result.tasks.values()):
            kk = top_k(m)
            assert c["problems"] == str(m.num_problems) == str(Q)
            assert c["k"] == str(K)
            assert c["pass1"] == pct_se(m.mean, m.stderr)
            assert c["pass_k"] == f"{pct(m.pass_at_k[kk])} (K={kk})"
            assert c["maj_k"] == f"{pct(m.maj_at_k[kk])} (K={kk})"
            assert c["missing"] == str(m.num_missing) == "0"
        assert page.is_hidden("#progress-box") and page.is_hidden("#interim-box")  # the headline alone
        # The all-runs table: the numbers of `reasoneval runs` (its table, and its CLI output).
        page.goto(url)
        page.wait_for_selector("#runs tbody tr td[data-k=status]:has-text('complete')")
        head, rows, _ = table_rows(list_runs(root))
        row = page.eval_on_selector("#runs tbody tr", "r => Object.fromEntries([...r.cells].map(c => [c.dataset.k, "
                                    "c.textContent]))")
        assert row["k"] == rows[0][head.index("K")] == str(K)
        assert row["task:math500"] == rows[0][head.index("math500 pass@1 ± SE (%)")]
        assert main(["runs", str(root), "--markdown"]) == 0
        assert f"| {row['task:math500']} |" in capsys.readouterr().out
        assert row["checkpoint"] == "live-model" and row["training_run"] == "org"
        # One run: today's report.html, from the table.
        page.click("#runs tbody tr >> nth=0 >> td[data-k=model] a >> text=report")
        page.wait_for_selector("#problems tbody tr")
        assert page.eval_on_selector_all("#problems tbody tr", "rows => rows.length") == Q
        page.click("#problems tbody tr >> nth=3")
        page.wait_for_selector("#detail details.sample")  # the samples decode: inline script allowed, data: too
        assert errors == []
        page.close()
    # Mid-run, interim figures were shown apart from the headline, labelled, over only problems with all K samples in.
    covered, complete, title = finished["interim"]
    assert title == "Interim figures"
    n = int(covered.split(" of ")[0])
    assert covered == f"{n} of {Q}" and 1 <= n <= int(complete.split(" of ")[0])
