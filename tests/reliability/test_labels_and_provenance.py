"""Issue 41: every message, label and provenance field describes what happened (the repros of items 3-6), on real
runs against the loopback server, through the CLI."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, cli_inprocess, write_data
from tests.reliability._helpers import only_run_dir as _run_dir
from tests.reliability._helpers import run_in as _run

TASKS = {"aime24": 6, "math500": 4}


@pytest.fixture
def server(make_openai_server: Callable[..., OpenAIServer]) -> OpenAIServer:
    return make_openai_server(responder=arith_reply)


def _headline_files(run_dir: Path) -> dict[str, Any]:
    """The headline's figures and what config.json says it covers (not when the run was last updated)."""
    config = json.loads((run_dir / "config.json").read_text())
    config.pop("updated")
    return {"summary.json": (run_dir / "summary.json").read_bytes(),
            "results.parquet": (run_dir / "results.parquet").read_bytes(), "config.json": config}


def test_unchanged_only_when_the_headline_did_not_change(server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 41.3: `--tasks aime24`, then `--tasks math500` printed "... which is unchanged" while summary.json and
    `runs` then had math500. Now the line says it changed, and what the headline covers; a narrower command that
    leaves the files as they were still says "unchanged"."""
    write_data(tmp_path / "data", TASKS)
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "2").returncode == 0
    run_dir = _run_dir(tmp_path)
    before = _headline_files(run_dir)
    r = _run(server, tmp_path, capsys, "--tasks", "math500", "--n", "2")
    assert r.returncode == 0, r.stderr
    after = _headline_files(run_dir)
    assert after != before and list(json.loads(after["summary.json"])["tasks"]) == ["aime24", "math500"]
    assert "it is also in" in r.stdout
    line = " ".join(r.stdout.split())
    assert "which is unchanged" not in line
    assert "which this command updated too: it now covers aime24 (6 problems, K = 2), math500 (4 problems, K = 2)" in line

    # A smoke test: a view, and the headline's files byte for byte as they were: "unchanged".
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--limit", "2", "--n", "1")
    assert r.returncode == 0, r.stderr
    assert _headline_files(run_dir) == after
    assert "which is unchanged" in " ".join(r.stdout.split())


def test_an_adaptive_label_only_on_an_adaptive_table(server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 41.4: `report --n 4` of an adaptive run was written as the view `aime24-adaptive` and said the target
    was "planned for ... measured above it". It is a fixed-K view of the first 4 samples, named and labelled so."""
    write_data(tmp_path / "data", {"aime24": 6})
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "9", "--max-n", "6", "--concurrency", "2")
    assert r.returncode == 0, r.stderr
    assert "adaptive: --target-se" in r.stdout and "target re-run SE" in r.stdout
    run_dir = _run_dir(tmp_path)
    r = cli_inprocess(["report", str(run_dir), "--n", "4", "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    title = next(line for line in r.stdout.splitlines() if "(run " in line)
    assert "adaptive:" not in r.stdout and "target re-run SE" not in r.stdout and "K=4" in title, r.stdout
    assert "view aime24-n4" in title and (run_dir / "views" / "aime24-n4" / "summary.json").exists()
    view = json.loads((run_dir / "views" / "aime24-n4" / "summary.json").read_text())
    assert "adaptive" not in view and view["tasks"]["aime24"]["num_samples"] == 4
    # The headline is still the adaptive run, and says so.
    r = cli_inprocess(["report", str(run_dir), "--grading-workers", "1"], capsys)
    assert r.returncode == 0 and "adaptive: --target-se" in r.stdout


def test_a_fixed_k_that_replaces_an_adaptive_headline_drops_the_adaptive_label(
        server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 41.4: `--target-se 6 --max-n 4`, then `--n 8`, then `report`: the report said "adaptive: --target-se,
    K = 8 ... target met ... 96 samples" of samples the adaptive run never drew. The uniform K = 8 holds every
    sample the adaptive run did: it is the headline now, labelled K = 8, with no target line."""
    write_data(tmp_path / "data", {"aime24": 12})
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "6", "--max-n", "4")
    assert r.returncode == 0, r.stderr
    run_dir = _run_dir(tmp_path)
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "8")
    assert r.returncode == 0, r.stderr
    assert "it is also in" not in r.stdout and "adaptive:" not in r.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "adaptive" not in summary and summary["n"] == 8 and summary["tasks"]["aime24"]["num_samples"] == 8
    r = cli_inprocess(["report", str(run_dir), "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    assert "adaptive:" not in r.stdout and "target re-run SE" not in r.stdout and "K=8" in r.stdout, r.stdout


def test_an_adaptive_headline_counts_only_the_samples_it_drew(server: OpenAIServer, tmp_path: Path,
                                                             capsys: Any) -> None:
    """A narrower uniform run (`--n 12` after `--target-se 9 --max-n 16`, whose headline covers indices < 32) adds
    samples to problems the plan gave 6: the adaptive headline's counts, samples and pass@k stay its own (they
    became 72 samples, 12 per problem)."""
    write_data(tmp_path / "data", {"aime24": 6})
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "9", "--max-n", "16", "--concurrency", "2")
    assert r.returncode == 0, r.stderr
    run_dir = _run_dir(tmp_path)
    before = json.loads((run_dir / "summary.json").read_text())
    assert before["adaptive"]["aime24"]["n_max"] < 12
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "12")
    assert r.returncode == 0 and "it is also in" in r.stdout, r.stderr
    r = cli_inprocess(["report", str(run_dir), "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    after = json.loads((run_dir / "summary.json").read_text())
    for key in ("samples", "n_min", "n_max", "n_histogram", "se"):
        assert after["adaptive"]["aime24"][key] == before["adaptive"]["aime24"][key], key
    assert after["tasks"]["aime24"]["pass_at_k"] == before["tasks"]["aime24"]["pass_at_k"]
    assert after["tasks"]["aime24"]["mean"] == before["tasks"]["aime24"]["mean"]


def test_a_smoke_test_keeps_its_provenance_in_its_view(server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 41.5: after `--limit 3 --n 1`, config.json's datasets said 3 problems with the subset's hash, and after
    `report` the headline's summary.json carried it (its task: 6 problems) with a timing of 0 requests."""
    write_data(tmp_path / "data", {"aime24": 6})
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "2").returncode == 0
    run_dir = _run_dir(tmp_path)
    config = json.loads((run_dir / "config.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert config["datasets"]["aime24"]["num_problems"] == 6 and summary["timing"]["requests"] >= 12
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--limit", "3", "--n", "1")
    assert r.returncode == 0, r.stderr
    view = json.loads((run_dir / "views" / "aime24-limit3-n1" / "summary.json").read_text())
    assert view["config"]["datasets"]["aime24"]["num_problems"] == 3  # the view's own provenance
    assert view["timing"]["requests"] == 0  # it generated nothing: every sample was there
    for argv in ([], ["report", str(run_dir), "--grading-workers", "1"]):
        if argv:
            assert cli_inprocess(argv, capsys).returncode == 0
        now = json.loads((run_dir / "config.json").read_text())
        assert now["datasets"] == config["datasets"]
        headline = json.loads((run_dir / "summary.json").read_text())
        assert headline["config"]["datasets"]["aime24"] == config["datasets"]["aime24"]
        assert headline["tasks"]["aime24"]["num_problems"] == 6
        assert headline["timing"] == summary["timing"]
    # A wider command brings its own: its problems and its generation's timing.
    write_data(tmp_path / "data", {"aime24": 8})
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "2")
    assert r.returncode == 0, r.stderr
    now = json.loads((run_dir / "summary.json").read_text())
    assert now["config"]["datasets"]["aime24"]["num_problems"] == 8 and now["tasks"]["aime24"]["num_problems"] == 8
    assert now["timing"]["generated"] == 4  # the two new problems' samples
    assert json.loads((run_dir / "config.json").read_text())["datasets"]["aime24"]["num_problems"] == 8


def test_advice_for_missing_samples_names_a_command_that_generates_them(
        server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 41.6: `report RUN --n 6` of a K = 4 run and `score RUN --n 99` said "Re-run the same command to generate
    them"; neither generates. The advice is a `reasoneval run` command, which does generate them (the same run
    directory), and then the report is complete."""
    write_data(tmp_path / "data", {"aime24": 3})
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "4", "--temperature", "0.7",
                "--seed", "5").returncode == 0
    run_dir = _run_dir(tmp_path)
    for argv in (["report", str(run_dir), "--n", "6"], ["score", str(run_dir), "--n", "99"]):
        r = cli_inprocess([*argv, "--grading-workers", "1"], capsys)
        assert r.returncode == 3, r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert "Re-run the same command" not in last and "only read the samples a run has" in last, last
        assert re.search(r"reasoneval run --model test-model --base-url \S+ --api chat --tasks aime24 --n \d+ --seed 5 "
                         r"--temperature 0.7 --output-dir \S+$", last), last
    command = shlex.split(last.rsplit(": ", 1)[1].replace(" --n 99", " --n 6"))
    assert command[:2] == ["reasoneval", "run"]
    r = cli_inprocess([*command[1:], "--data-dir", str(tmp_path / "data"), "--grading-workers", "1", "--no-progress",
                       "--retry-backoff", "0.01"], capsys)
    assert r.returncode == 0, r.stderr
    assert _run_dir(tmp_path) == run_dir  # the same run, resumed: 2 more samples per problem
    r = cli_inprocess(["report", str(run_dir), "--n", "6", "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
