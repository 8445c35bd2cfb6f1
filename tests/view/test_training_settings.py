"""Issue 52.2: the training page joined runs of one checkpoint with different settings (two seeds at one step) on one
line, two points joined by a vertical segment, and nothing named the setting. Each setting is a line of its own now,
named by it, as `runs --by-checkpoint` keeps them apart; no line has two points at one step."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from reasoneval.view.folder import Folder
from reasoneval.view.pages import curve_series, training_runs, training_table
from tests.analysis.runs import loopback_servers, make_run
from tests.report.browser import browser  # noqa: F401  (fixture)
from tests.view.helpers import get, viewing

Q, K = 6, 2


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("settings")
    with loopback_servers() as make:
        for step, seed in ((100, 42), (100, 7), (200, 42), (200, 7)):
            make_run(make, tmp / f"s{step}-{seed}", f"/ckpt/run7/checkpoint-{step}",
                     lambda i, j, s=seed: (i + j + s) % 3 == 0, q=Q, n=K, seed=seed)
    out = tmp / "results"
    out.mkdir()
    for d in tmp.glob("s*/results/*/*"):  # one results folder with all four runs
        (out / d.parent.name).mkdir(exist_ok=True)
        d.rename(out / d.parent.name / d.name)
    return out


def test_each_setting_is_a_line_of_its_own(root: Path) -> None:
    runs = training_runs(Folder(root).runs())["/ckpt/run7"]
    head, _, records = training_table(runs)
    assert "settings" in head and len(records) == 4
    series = curve_series(head, records)["pass@1"]
    assert sorted(series) == ["math500 [seed=42]", "math500 [seed=7]"], list(series)
    for name, points in series.items():
        xs = [x for x, _, _, _ in points]
        assert xs == [100.0, 200.0], (name, xs)  # one point per step
        seed = name.split("seed=")[1].rstrip("]")
        for x, y, _, _ in points:  # each point is that seed's run's figure at that step
            (rec,) = [r for r in records if r["step"] == int(x) and r["settings"] == f"seed={seed}"]
            assert y == rec["math500/pass@1"]

    with viewing(root) as (_, base):
        status, page, _ = get(base, "/training?name=" + quote("/ckpt/run7"))
        assert status == 200
        drawn = re.findall(r'data-series="([^"]*)"', page)
        names = [f"math500{m} [seed={seed}]" for m in ("", " pass@2", " maj@2") for seed in (42, 7)]
        assert sorted(drawn) == sorted(names), drawn  # each line once, named by its setting


def test_the_lines_in_chromium(root: Path, browser: Any) -> None:  # noqa: F811
    """The legend names each line by its setting, and each line has one point per step."""
    with viewing(root) as (url, _):
        page = browser.new_page()
        page.goto(url.split("?")[0].rstrip("/") + "/training?name=" + quote("/ckpt/run7"))
        page.wait_for_selector("#plot-pass-1 g.series")
        lines = page.eval_on_selector_all("#plot-pass-1 g.series", "gs => gs.map(g => [g.dataset.series, "
                                          "[...g.querySelectorAll('circle.pt')].map(c => c.dataset.x)])")
        assert sorted(lines) == [["math500 [seed=42]", ["100", "200"]], ["math500 [seed=7]", ["100", "200"]]]
        page.close()
