"""A run's headline is its widest complete evaluation; a narrower command is a view beside it (results/scope.py).
The issue's repros, against the loopback server: a smoke test after a full run, a K extension, one that fails."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Callable

import pytest

from reasoneval.results.scope import TaskScope, choose_headline, view_name
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data


def files(run_dir: Path) -> dict[str, object]:
    """What the headline is: its files, and what config.json says it covers (config.json also records the last
    generation's timing, which every run updates)."""
    config = json.loads((run_dir / "config.json").read_text())
    return {**{n: (run_dir / n).read_bytes() for n in ("summary.json", "results.parquet", "report.html")},
            "headline": {k: config.get(k) for k in ("tasks", "problem_keys", "n", "task_n", "adaptive")}}


@pytest.fixture
def server(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> OpenAIServer:
    write_data(tmp_path / "data", {"aime24": 6, "math500": 4})
    return make_openai_server(responder=arith_reply)


def test_a_narrower_rerun_is_a_view_and_the_headline_stays(server: OpenAIServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's repro: a full run (aime24 + math500, K = 4), then the smoke test `--tasks aime24 --limit 3 --n 1`
    with the same settings (the same run directory). It printed and wrote n = 1, aime24 only, everywhere."""
    tb = ["--log-to", "tensorboard", "--tensorboard-dir", str(tmp_path / "tb")]
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "4", *tb), capsys)
    assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    before = files(run_dir)
    full = json.loads(before["summary.json"])
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--limit", "3", "--n", "1", *tb), capsys)
    assert r.returncode == 0, r.stderr
    assert "K=1, view aime24-limit3-n1" in r.stdout and "it is also in " in r.stdout
    assert files(run_dir) == before  # summary.json, results.parquet, report.html, config.json's scope: the K = 4 run's
    view = json.loads((run_dir / "views" / "aime24-limit3-n1" / "summary.json").read_text())
    assert view["view"] == "aime24-limit3-n1" and view["n"] == 1 and list(view["tasks"]) == ["aime24"]
    assert view["tasks"]["aime24"]["num_problems"] == 3 and (run_dir / "views" / "aime24-limit3-n1" / "report.html").exists()
    # `runs` shows the headline, and the view beside it
    r = cli_inprocess(["runs", str(tmp_path / "results"), "--csv"], capsys)
    (row,) = csv.DictReader(io.StringIO(r.stdout))
    assert row["n"] == "4" and row["views"] == "aime24-limit3-n1"
    assert float(row["aime24_pass1"]) == full["tasks"]["aime24"]["mean"] and row["math500_pass1"] != ""
    # the dashboard: the smoke test logged nothing, neither its own n = 1 figures nor the headline again (issue 52.3)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb" / f"test-model-{full['run_id']}"))
    acc.Reload()
    assert [e.value for e in acc.Scalars("aime24/pass@1")] == [pytest.approx(full["tasks"]["aime24"]["mean"])]
    assert "math500/pass@1" in acc.Tags()["scalars"]


def test_a_k_extension_becomes_the_headline_once_complete(server: OpenAIServer, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "2"), capsys)
    assert r.returncode == 0
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    # K 2 -> 4 whose new samples of one problem fail: exit 3, a view; the complete K = 2 result stays
    server.fail_next(20, "http500", contains="$4 + 3$")
    before = files(run_dir)
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "4", "--max-retries", "0"),
                      capsys)
    assert r.returncode == 3 and "view " in r.stdout
    assert files(run_dir) == before
    server.reset()
    # the same command again: complete, the headline now
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "4"), capsys)
    assert r.returncode == 0 and "view " not in r.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n"] == 4 and summary["complete"] and list(summary["tasks"]["aime24"]["pass_at_k"]) == ["1", "2", "3", "4"]
    # one task extended further: the headline holds both tasks, each at its own K, and says so
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "6"), capsys)
    assert r.returncode == 0 and "view " in r.stdout  # the headline (both tasks) is wider than this command
    summary = json.loads((run_dir / "summary.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    assert config["task_n"] == {"aime24": 6, "math500": 4} and summary["n"] == 6
    assert summary["aggregate"]["samples_per_problem"] == [4, 6] and list(summary["aggregate"]["pass_at_k"]) == ["1", "2", "3", "4"]
    assert "4–6 per problem (samples)" in (run_dir / "report.html").read_text()


def test_the_headline_rule() -> None:
    full, smoke = TaskScope(("a", "b", "c"), 4), TaskScope(("a",), 1)
    wider = TaskScope(("a", "b", "c"), 8)
    assert choose_headline({"t": full}, {"t": True}, {"t": smoke}, {"t": True}) == {"t": full}
    assert choose_headline({"t": full}, {"t": True}, {"t": wider}, {"t": True}) == {"t": wider}
    assert choose_headline({"t": full}, {"t": True}, {"t": wider}, {"t": False}) == {"t": full}  # not complete
    assert choose_headline({"t": full}, {"t": False}, {"t": wider}, {"t": False}) == {"t": wider}
    odd = TaskScope(("a",), 8)  # more samples of fewer problems: neither wider nor narrower
    assert choose_headline({"t": full}, {"t": True}, {"t": odd}, {"t": True}) == {"t": full}
    assert choose_headline({"t": full}, {"t": True}, {"u": smoke}, {"u": True}) == {"t": full, "u": smoke}
    adaptive = TaskScope(("a", "b", "c"), 512, adaptive=True)
    assert choose_headline({"t": full}, {"t": True}, {"t": adaptive}, {"t": True}) == {"t": adaptive}
    assert choose_headline({"t": adaptive}, {"t": True}, {"t": full}, {"t": True}) == {"t": adaptive}
    assert view_name({"t": smoke}, {"t": full}) == "t-limit1-n1"
    other = view_name({"t": TaskScope(("b",), 2)}, {"t": full})
    assert re.fullmatch(r"t-1p[0-9a-f]{6}-n2", other)
    assert view_name({"t": TaskScope(("c",), 2)}, {"t": full}) != other  # two subsets of one size: two views
    assert view_name({"t": TaskScope(("a", "b", "c"), 2)}, {"t": full, "u": full}) == "t-n2"


def test_uneven_sample_counts_are_said_in_every_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`score FILE` with 3 rows for one problem and 1 for another: pass@1 over both, no pass@2 or maj@3 (they were
    100.0 over the one problem with 3 rows), exit 0 with a note instead of "re-run the same command"."""
    f = tmp_path / "uneven.jsonl"
    f.write_text(json.dumps({"problem": "What is $1 + 1$?", "answer": "2", "gen": ["\\boxed{2}", "\\boxed{2}", "\\boxed{2}"]})
                 + "\n" + json.dumps({"problem": "What is $2 + 2$?", "answer": "4", "gen": ["\\boxed{5}"]}) + "\n")
    r = cli_inprocess(["score", str(f), "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    assert "re-run" not in r.stderr + r.stdout
    assert "1–3 per problem: pass@k and maj@k are shown for k up to the fewest samples a problem of the row has" in r.stdout
    summary = json.loads((tmp_path / "uneven.jsonl.reasoneval" / "summary.json").read_text())
    t = summary["tasks"]["uneven"]
    assert t["pass_at_k"] == {"1": 0.5} and list(t["maj_at_k"]) == ["1"] and t["samples_per_problem"] == [1, 3]
    assert summary["complete"] is True and t["num_missing"] == 0
    page = (tmp_path / "uneven.jsonl.reasoneval" / "report.html").read_text()
    assert '<span id="samples">1–3 per problem (samples)</span>' in page and "K = 3" not in page


def test_an_aggregate_over_tasks_with_different_k_reports_the_k_every_task_has(
        make_openai_server: Callable[..., OpenAIServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's adaptive repro in small: aime24 sampled to 8 per problem, math500 at 4; the `all` row's pass@k and
    maj@k stop at 4 (they jumped to 100.0 over the few problems that had more)."""
    write_data(tmp_path / "data", {"aime24": 6, "math500": 4})
    server = make_openai_server(responder=arith_reply)
    for extra in (["--tasks", "aime24,math500", "--n", "4"], ["--tasks", "aime24", "--n", "8"]):
        r = cli_inprocess(run_args(server.base_url, tmp_path, *extra), capsys)
        assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert list(summary["tasks"]["aime24"]["pass_at_k"]) == [str(k) for k in range(1, 9)]
    assert list(summary["aggregate"]["pass_at_k"]) == ["1", "2", "3", "4"] and list(summary["aggregate"]["maj_at_k"]) == ["1", "2", "4"]
    r = cli_inprocess(["report", str(run_dir), "--grading-workers", "1"], capsys)
    table = r.stdout
    assert "4–8 per problem" in table and "aime24 8, math500 4, all (micro) 4" in table
    all_row = next(line for line in table.splitlines() if "all (micro)" in line)
    cells = [c.strip() for c in all_row.strip("│").split("│")]
    head = next(line for line in table.splitlines() if "┃ task" in line)
    columns = [c.strip() for c in head.strip("┃").split("┃")]
    assert dict(zip(columns, cells))["pass@8"] == "-" and dict(zip(columns, cells))["maj@8"] == "-"




def test_a_wider_command_that_becomes_the_headline_keeps_the_headlines_task_order(
        server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--tasks math500`, then `--tasks aime24,math500` (adaptive) with the same settings: the second is the new
    headline, whose tasks are the old headline's first (choose_headline); summary.json lists them in the order
    config.json does (it listed the command's order before: found by tests/reliability/test_every_view.py)."""
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "math500", "--n", "2"), capsys)
    assert r.returncode == 0, r.stderr
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--target-se", "9",
                               "--max-n", "6"), capsys)
    assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    config = json.loads((run_dir / "config.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert config["tasks"] == ["math500", "aime24"]
    assert list(summary["tasks"]) == config["tasks"] and summary["config"]["tasks"] == config["tasks"]
    assert list(summary["adaptive"]) == config["adaptive"]["tasks"] == ["math500", "aime24"]
