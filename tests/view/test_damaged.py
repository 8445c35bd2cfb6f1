"""Issue 52.6: a damaged run (summary.json or config.json that cannot be read) and one stopped before scoring stay
listed by `view` and `runs`, marked with what is wrong and the command that repairs it; each repair command, run as
printed, repairs it; `report` never advises the command that just failed."""

from __future__ import annotations

import json
import os
import shlex
import threading
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import reasoneval
from reasoneval.view.folder import COMPLETE, FAILED, Folder
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data
from tests.report.browser import browser  # noqa: F401  (fixture)
from tests.view.helpers import get, viewing


def _new_run(root: Path, before: set[Path]) -> Path:
    (d,) = [p for p in root.glob("*/*") if p.is_dir() and p not in before]
    return d


def test_damaged_and_unscored_runs_stay_listed_with_the_command_that_repairs_them(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path, capsys: Any) -> None:
    server = make_openai_server(responder=arith_reply)
    write_data(tmp_path / "data", {"aime24": 3})
    results = tmp_path / "results"
    dirs: dict[str, Path] = {}
    for name, seed in (("summary", 1), ("config", 2), ("unscored", 3), ("no samples", 4)):
        before = set(results.glob("*/*"))
        if name == "no samples":  # every request fails: config.json is written, no sample is
            server.fail_next(1000, "http500")
        r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2", "--seed", str(seed),
                                   "--max-retries", "0"), capsys)
        assert (r.returncode == 0) == (name != "no samples"), r.stderr[-2000:]
        server.reset()
        dirs[name] = _new_run(results, before)
    means = {name: json.loads((d / "summary.json").read_text())["tasks"]["aime24"]["mean"]
             for name, d in dirs.items() if name != "no samples"}
    assert not [line for line in (dirs["no samples"] / "samples.jsonl").read_text().splitlines() if '"ok"' in line]
    (dirs["summary"] / "summary.json").write_text('{"schema_version": 2, "tasks": {"aime')  # cut short
    (dirs["config"] / "config.json").write_text("")
    for d in (dirs["unscored"], dirs["no samples"]):  # killed before scoring (SIGKILL: nothing written after)
        (d / "summary.json").unlink()
    old = time.time() - 3600  # its journal last changed an hour ago: it stopped before scoring
    for d in (dirs["unscored"], dirs["no samples"]):
        os.utime(d / "samples.jsonl", (old, old))

    want = {"summary": ("damaged", "summary.json cannot be read", f"reasoneval report {dirs['summary']}"),
            "config": ("damaged", "config.json cannot be read", f"reasoneval report {dirs['config']}"),
            "unscored": (FAILED, "stopped before scoring", f"reasoneval report {dirs['unscored']}"),
            "no samples": (FAILED, "stopped before its first sample", "reasoneval run --model test-model")}
    listed = {r.dir: r for r in Folder(results).runs()}
    assert set(listed) == set(dirs.values())
    for name, (status, problem, repair) in want.items():
        run = listed[dirs[name]]
        assert run.status == status and run.damage is not None, (name, run.status)
        assert run.damage.problem.startswith(problem) and run.damage.repair.startswith(repair), (name, run.damage)

    # `runs` lists them under its table (issue 52.5: a folder whose only run has no sample said "no runs"); `view`
    # lists them and serves each one's page with both
    r = cli_inprocess(["runs", str(dirs["no samples"])], capsys)
    assert r.returncode == 0 and "no runs" not in r.stdout + r.stderr and "stopped before its first sample" in r.stdout
    r = cli_inprocess(["runs", str(results)], capsys)
    assert r.returncode == 0 and "no runs" not in r.stdout + r.stderr
    for name, (_, problem, repair) in want.items():
        line = next(ln for ln in r.stdout.splitlines() if str(dirs[name]) + ":" in ln)
        assert problem in line and "repair: " + repair in line, line
    with viewing(results) as (_, base):
        status, body, _ = get(base, "/api/runs")
        assert status == 200, body
        rows = {row["href"]: row for row in json.loads(body)["rows"]}
        for name, (status_, problem, repair) in want.items():
            href = "/run/" + quote(dirs[name].relative_to(results).as_posix())
            assert rows[href]["status"] == status_ and rows[href]["problem"].startswith(problem)
            assert rows[href]["repair"].startswith(repair)
            code, page, _ = get(base, href)
            assert code == 200 and json.dumps(repair)[1:-1] in page, (name, code, page[:300])

    # each repair, as printed (plus the data and grading flags a command line adds), repairs its run
    for name, d in dirs.items():
        argv = shlex.split(listed[d].damage.repair)[1:]  # type: ignore[union-attr]
        if argv[0] == "run":
            argv += ["--data-dir", str(tmp_path / "data"), "--no-progress", "--retry-backoff", "0.01"]
        r = cli_inprocess([*argv, "--grading-workers", "1"], capsys)
        assert r.returncode == 0, (name, r.stderr[-2000:])
    listed = {r.dir: r for r in Folder(results).runs()}
    for name, d in dirs.items():
        assert listed[d].status == COMPLETE and listed[d].damage is None, (name, listed[d].status)
        json.loads((d / "config.json").read_text())
        if name in means:
            assert json.loads((d / "summary.json").read_text())["tasks"]["aime24"]["mean"] == means[name]
    r = cli_inprocess(["runs", str(results)], capsys)
    assert "without a readable headline" not in r.stdout

    # config.json unreadable with no copy to restore it from: `report` fails and names another command than itself
    (dirs["config"] / "config.json").write_text("")
    (dirs["config"] / "summary.json").unlink()
    r = cli_inprocess(["report", str(dirs["config"]), "--grading-workers", "1"], capsys)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode != 0 and "config.json" in last and "reasoneval report" not in last, last
    assert "`reasoneval run` command that made this run" in last, last
    run = Folder(results).run(dirs["config"])
    assert run is not None and run.status == "damaged" and run.damage is not None
    assert "reasoneval report" not in run.damage.repair and "reasoneval run" in run.damage.repair


def test_a_damaged_run_in_chromium(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path,
                                   browser: Any) -> None:  # noqa: F811
    """The all-runs table marks a damaged run with what is wrong and its repair; its own page says both."""
    server = make_openai_server(responder=arith_reply)
    write_data(tmp_path / "data", {"aime24": 2})
    # in a thread of its own: Playwright's sync API holds an event loop in this one
    worker = threading.Thread(target=lambda: reasoneval.evaluate(
        base_url=server.base_url, model="test-model", data_dir=str(tmp_path / "data"), tasks=["aime24"], n=1,
        output_dir=str(tmp_path / "results"), grading_workers=1, progress=False, print_table=False))
    worker.start()
    worker.join(120)
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    (run_dir / "summary.json").write_text("{")
    with viewing(tmp_path / "results") as (url, _):
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.wait_for_selector("#runs tbody tr td[data-k=status]")
        cell = page.locator("#runs tbody tr td[data-k=status]")
        assert cell.locator(".problem").text_content().startswith("summary.json cannot be read")
        assert cell.locator("code.repair").text_content() == f"reasoneval report {run_dir}"
        assert "damaged" in cell.text_content()
        page.click("#runs tbody tr td[data-k=model] a")
        page.wait_for_selector("#damage-box:not([hidden])")
        assert page.text_content("#repair") == f"reasoneval report {run_dir}"
        assert page.text_content("#status") == "damaged" and errors == []
        page.close()
