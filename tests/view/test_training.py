"""The training-run page on a folder with two training runs that share checkpoint names: one point per checkpoint
with its error bar, equal to `runs --by-checkpoint`; choosing two checkpoints opens the paired comparison."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Callable

import pytest

from reasoneval.analysis.compare import compare_runs
from reasoneval.analysis.outcomes import read_problem_rows
from reasoneval.cli.main import main
from reasoneval.report.compare import rows as compare_rows
from tests.analysis.runs import loopback_servers, make_run
from tests.report.browser import browser  # noqa: F401  (fixture)
from tests.view.helpers import shot, viewing

Q, K = 10, 4
# training run -> checkpoint step -> which samples are right
CHECKPOINTS: dict[str, dict[int, Callable[[int, int], bool]]] = {
    "/ckpt/run7": {100: lambda i, j: j < i % 3, 200: lambda i, j: j < (i + 1) % 5, 300: lambda i, j: j < 1 + i % 4},
    "/ckpt/run8": {100: lambda i, j: j < 4 * (i % 2), 200: lambda i, j: j < 3},
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("training")
    dirs = {}
    with loopback_servers() as make:
        for run, points in CHECKPOINTS.items():
            for step, right in points.items():
                model = f"{run}/checkpoint-{step}"
                dirs[model] = make_run(make, tmp, model, right, q=Q, n=K)
    return dirs


def by_checkpoint_csv(root: Path, capsys: Any) -> list[dict[str, str]]:
    assert main(["runs", str(root), "--by-checkpoint", "--csv"]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_training_page_points_and_error_bars(folder: dict[str, Path], browser: Any, capsys: Any) -> None:  # noqa: F811
    root = next(iter(folder.values())).parents[1]
    records = by_checkpoint_csv(root, capsys)
    assert len(records) == 5  # run7 and run8 both have checkpoint-100 and -200: five rows, not three
    with viewing(root) as (url, base):
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        page.wait_for_selector("#runs tbody tr")
        shown = page.eval_on_selector_all("#runs tbody tr", "rs => rs.map(r => [r.querySelector('[data-k=training_run]')"
                                          ".textContent, r.querySelector('[data-k=checkpoint]').textContent])")
        assert sorted(map(tuple, shown)) == sorted((r["training_run"], r["checkpoint"]) for r in records)
        shot(page, "view-runs.png")
        # sortable (a click on a header, again to reverse) and filterable, in the page
        page.click("#runs th[data-k='task:math500']")
        means = [float(r["math500/pass@1"]) for r in records]
        cells = page.eval_on_selector_all("#runs tbody td[data-k='task:math500']", "ts => ts.map(t => t.textContent)")
        assert [float(c.split(" ± ")[0]) for c in cells] == pytest.approx(sorted(100 * m for m in means), abs=0.05)
        page.click("#runs th[data-k='task:math500']")
        cells = page.eval_on_selector_all("#runs tbody td[data-k='task:math500']", "ts => ts.map(t => t.textContent)")
        assert [float(c.split(" ± ")[0]) for c in cells] == pytest.approx(sorted((100 * m for m in means), reverse=True),
                                                                           abs=0.05)
        page.fill("#filter", "run8")
        assert page.text_content("#count") == "2 of 5 runs"
        for run, points in CHECKPOINTS.items():
            page.goto(url + "training")
            page.click(f"#training-runs a >> text='{run}'")
            page.wait_for_selector("#plot-pass-1")
            assert page.text_content("#training-name") == run
            mine = [r for r in records if r["training_run"] == run]
            assert [int(r["step"]) for r in mine] == sorted(points)
            dots = page.eval_on_selector_all(
                "#plot-pass-1 g.series[data-series='math500'] circle",
                "cs => cs.map(c => ({x: c.dataset.x, y: c.dataset.y, se: c.dataset.se, ck: c.dataset.checkpoint}))")
            bars = page.eval_on_selector_all("#plot-pass-1 g.series[data-series='math500'] line.eb", "ls => ls.length")
            assert len(dots) == len(points) and bars == len(points)  # one point and one error bar per checkpoint
            for dot, rec in zip(dots, mine):
                assert dot["ck"] == rec["checkpoint"] and float(dot["x"]) == float(rec["step"])
                assert float(dot["y"]) == pytest.approx(float(rec["math500/pass@1"]), abs=1e-12)
                assert float(dot["se"]) == pytest.approx(float(rec["math500/pass@1_stderr"]), abs=1e-12)
            # pass@K and maj@K curves: one point per checkpoint too
            for plot, col in (("#plot-pass-k", f"math500/pass@{K}"), ("#plot-maj-k", f"math500/maj@{K}")):
                ys = page.eval_on_selector_all(f"{plot} circle", "cs => cs.map(c => Number(c.dataset.y))")
                assert ys == pytest.approx([float(r[col]) for r in mine])
            # the table is the checkpoint table's rows of this training run
            table = page.eval_on_selector_all("#checkpoints tbody tr", "rs => rs.map(r => r.cells[1].textContent)")
            assert table == [r["checkpoint"] for r in mine]
            if run == "/ckpt/run7":
                shot(page, "view-training.png")
        assert errors == []
        page.close()


def test_comparing_two_checkpoints(folder: dict[str, Path], browser: Any) -> None:  # noqa: F811
    root = next(iter(folder.values())).parents[1]
    a, b = folder["/ckpt/run7/checkpoint-100"], folder["/ckpt/run7/checkpoint-200"]
    with viewing(root) as (url, base):
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.goto(url + "training?name=/ckpt/run7")
        page.select_option("#cmp-a", a.relative_to(root).as_posix())
        page.select_option("#cmp-b", b.relative_to(root).as_posix())
        page.click("#compare-form button")
        page.wait_for_selector("#compare")
        head, expected = compare_rows(compare_runs([a, b]))
        got = page.eval_on_selector_all("#compare tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
        assert got == expected  # difference ± SE, CI, p, flips: `reasoneval compare`'s own table
        assert "Δ vs A ± SE" in head and expected[1][3]  # B's row has a difference
        c = compare_runs([a, b])
        flips = c.tasks[0].flips[0]
        assert flips
        shown = page.eval_on_selector_all("table.flips tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
        rows_a = {r.problem_key: r for r in read_problem_rows(a)}
        assert [s[0] for s in shown] == [f.id for f in flips]
        for s, f in zip(shown, flips):  # with each run's majority answer and the reference
            assert s[5] == rows_a[f.problem_key].answer
            assert s[3] and s[4]
        shot(page, "view-compare.png")
        page.close()
