"""report.html in a real headless Chromium: no console errors, every problem in the table, filter and
sort work, a click shows the samples (decoded from the compressed payload), inline and sidecar modes;
the comparison page. A screenshot is saved as a test artifact."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from reasoneval.analysis.compare import compare_runs
from reasoneval.cli.main import main
from reasoneval.report.html_page import write_compare_html, write_run_html
from reasoneval.results.schema import load_run
from reasoneval.run_files import REPORT_FILE, REPORT_SIDECAR_DIR
from tests.analysis.runs import loopback_servers, make_run
from tests.report.browser import browser  # noqa: F401  (fixture)

Q, K = 15, 4
ARTIFACTS = Path(os.environ.get("REASONEVAL_TEST_ARTIFACTS", "")) if os.environ.get("REASONEVAL_TEST_ARTIFACTS") else None


def right(i: int, j: int) -> bool:
    return j < i % 5  # problem i: i % 5 of 4 right (p000 and p005, p010 never)


def cut(i: int, j: int) -> bool:
    return i == 3 and j == 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("html")
    with loopback_servers() as make:
        a = make_run(make, tmp, "model-a", right, q=Q, n=K, truncated=cut)
        make_run(make, tmp, "model-b", lambda i, j: j < (i + 1) % 5, q=Q, n=K)
    return a


def open_page(browser: Any, path: Path) -> tuple[Any, list[str]]:  # noqa: F811
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("#problems tbody tr")
    return page, errors


def ids(page: Any) -> list[str]:
    return page.eval_on_selector_all("#problems tbody tr", "rows => rows.map(r => r.cells[0].textContent)")


def check_page(page: Any, errors: list[str]) -> None:
    assert sorted(ids(page)) == [f"p{i:03d}" for i in range(Q)]  # every problem
    assert page.text_content("#count") == f"{Q} of {Q} problems"
    # filter by id, then by answer text
    page.fill("#filter", "p007")
    assert ids(page) == ["p007"]
    page.fill("#filter", "")
    page.check("#wrong")
    assert set(ids(page)) == {f"p{i:03d}" for i in range(Q) if i % 5 != 4}
    page.uncheck("#wrong")
    # sort by accuracy: ascending, then descending on the second click
    page.click('#problems th[data-k="acc"]')
    accs = [float(x) for x in page.eval_on_selector_all("#problems tbody tr", "rs => rs.map(r => r.cells[2].textContent)")]
    assert accs == sorted(accs) and accs[0] == 0.0
    page.click('#problems th[data-k="acc"]')
    accs = [float(x) for x in page.eval_on_selector_all("#problems tbody tr", "rs => rs.map(r => r.cells[2].textContent)")]
    assert accs == sorted(accs, reverse=True) and accs[0] == 100.0
    # a click opens the problem with its samples
    page.fill("#filter", "p003")
    page.click("#problems tbody tr")
    page.wait_for_selector("#detail details.sample")
    assert "What is 3 plus 6?" in page.text_content("#detail pre.problem")
    summaries = page.eval_on_selector_all("#detail details.sample > summary", "s => s.map(x => x.textContent)")
    assert len(summaries) == K
    assert sum("correct" in s for s in summaries) == 3 and sum("wrong" in s for s in summaries) == 1
    assert any("finish: length" in s for s in summaries) and all("seed" in s and "tokens" in s for s in summaries)
    page.click("#detail details.sample >> nth=0")
    assert page.text_content("#detail details.sample >> nth=0 >> mark") == "9"  # the extracted answer highlighted
    assert "\\boxed{9}" in page.text_content("#detail details.sample >> nth=0 >> pre")
    assert errors == []


def test_report_html_in_chromium(run: Path, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    html = run / REPORT_FILE
    assert html.exists() and not (run / REPORT_SIDECAR_DIR).exists()  # written by the run; small: all inline
    text = html.read_text()
    assert "<svg" in text and "pass@k" in text and "maj@k" in text and "response length" in text
    assert "accuracy by subject" in text and "accuracy by level" in text and "truncated: 1" in text
    page, errors = open_page(browser, html)
    check_page(page, errors)
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if ARTIFACTS:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, ARTIFACTS / "report.png")
    page.close()


def test_sidecar_mode_loads_samples_on_demand(run: Path, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "copy"
    shutil.copytree(run, out)
    write_run_html(load_run(out), inline_limit=0)
    files = sorted((out / REPORT_SIDECAR_DIR).iterdir())
    assert len(files) == Q
    assert '"re-samples">null<' in (out / REPORT_FILE).read_text()
    page, errors = open_page(browser, out / REPORT_FILE)
    check_page(page, errors)
    page.close()


def test_report_cli_html_and_model_output_stays_text(run: Path, browser: Any, tmp_path: Path,  # noqa: F811
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    page_path = tmp_path / "r.html"
    assert main(["report", str(run), "--html", str(page_path), "--grading-workers", "1"]) == 0
    assert "HTML report" in capsys.readouterr().err
    page, errors = open_page(browser, page_path)
    assert page.evaluate("document.querySelectorAll('script').length") == 3  # nothing from the data became a script
    page.close()
    assert errors == []


def test_comparison_page(run: Path, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    other = next(p for p in (run.parent.parent / "model-b").iterdir())
    out = write_compare_html(compare_runs([run, other]), tmp_path / "cmp.html")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    cells = page.eval_on_selector_all("#compare tbody tr", "rs => rs.map(r => r.cells[1].textContent)")
    assert cells == ["A", "B"]
    assert page.locator("svg").count() >= 2 and "flipped" in page.content()
    assert errors == []
    page.close()


def test_page_json_cannot_close_its_script_element() -> None:
    from reasoneval.report.html_page import _script_json

    s = _script_json({"text": "</script><script>alert(1)</script><!-- \u2028"})
    assert "</" not in s and "<!--" not in s and "\u2028" not in s
    import json

    assert json.loads(s)["text"] == "</script><script>alert(1)</script><!-- \u2028"


def test_html_in_model_output_stays_text(make_openai_server: Any, tmp_path: Path, browser: Any) -> None:  # noqa: F811
    evil = '<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script> so \\boxed{{{}}}'
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        run = pool.submit(make_run, make_openai_server, tmp_path, "model-x", right, q=3, n=2,
                          response=lambda i, j, said: evil.format(said)).result()
    page, errors = open_page(browser, run / REPORT_FILE)
    page.click("#problems tbody tr >> nth=0")
    page.wait_for_selector("#detail details.sample")
    page.click("#detail details.sample >> nth=0")
    assert "<img src=x" in page.text_content("#detail details.sample >> nth=0 >> pre")  # shown as text
    assert page.evaluate("window.pwned === undefined && document.querySelectorAll('#detail img').length === 0")
    assert errors == []
    page.close()
