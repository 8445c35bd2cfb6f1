"""Issue 52: one evaluation per summary entry (item 1) and messages that say what a command did (item 5), on real
runs against the loopback server, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data
from tests.reliability._helpers import only_run_dir as _run_dir
from tests.reliability._helpers import run_in as _run

FIGURES = ("num_samples", "mean", "stderr", "ci95", "stderr_resample", "pass_at_k", "maj_at_k", "samples_per_problem")


@pytest.fixture
def server(make_openai_server: Callable[..., OpenAIServer]) -> OpenAIServer:
    return make_openai_server(responder=arith_reply)


def _verdicts(run_dir: Path, n: int) -> dict[str, list[bool]]:
    """Each problem's verdicts of sample indices < n, from samples.jsonl and problems.jsonl (the arith model's
    answer is right when its boxed number is the row's answer)."""
    answers = {json.loads(x)["key"]: str(json.loads(x)["answer"])
               for x in (run_dir / "problems.jsonl").read_text().splitlines()}
    out: dict[str, list[bool]] = {k: [] for k in answers}
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["status"] == "ok" and d["index"] < n:
            text = d["text"] or ""
            said = text.rsplit("\\boxed{", 1)[1].split("}")[0] if "\\boxed{" in text else None
            out[d["problem_key"]].append(said == answers[d["problem_key"]])
    return out


@pytest.mark.parametrize("k", [6, 8])
def test_a_fixed_k_after_an_adaptive_run_mixes_nothing_into_the_headline(
        server: OpenAIServer, tmp_path: Path, capsys: Any, k: int) -> None:
    """Issue 52.1: an adaptive run that stopped at its pilot (4 samples a problem), then `--n 8` (or 6) on the same
    folder: the headline kept K, pass@k and maj@k at 4 while its mean, SE, CI and re-run SE were recomputed over 8.
    Now the headline's entry is the adaptive evaluation's own, figure for figure as before, and says so; the fixed-K
    table is a view whole (every figure over K samples), and the message says why it is one."""
    write_data(tmp_path / "data", {"aime24": 6})
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "20", "--concurrency", "4")
    assert r.returncode == 0, r.stderr
    run_dir = _run_dir(tmp_path)
    before = json.loads((run_dir / "summary.json").read_text())
    assert before["adaptive"]["aime24"]["n_max"] == 4 and before["adaptive"]["aime24"]["stopped"] == "target"
    entry = before["tasks"]["aime24"]
    assert entry["evaluation"] == {"kind": "adaptive", "samples_per_problem": [4, 4]}
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", str(k))
    assert r.returncode == 0, r.stderr
    after = json.loads((run_dir / "summary.json").read_text())
    for name in FIGURES:
        assert after["tasks"]["aime24"].get(name) == entry.get(name), name
    assert after["adaptive"]["aime24"]["se"] == before["adaptive"]["aime24"]["se"]
    assert after["tasks"]["aime24"]["evaluation"] == entry["evaluation"] and after["n"] == before["n"]
    # the view: every figure over the K samples of each problem, and it says it is a fixed K
    view = json.loads((run_dir / "views" / f"aime24-n{k}" / "summary.json").read_text())
    got = view["tasks"]["aime24"]
    verdicts = _verdicts(run_dir, k)
    assert got["evaluation"] == {"kind": "fixed", "k": k, "samples_per_problem": [k, k]}
    assert got["mean"] == pytest.approx(sum(sum(v) / k for v in verdicts.values()) / 6)
    assert max(int(x) for x in got["pass_at_k"]) == k and "adaptive" not in view
    line = " ".join(r.stdout.split())
    assert "covers less than the run's headline" not in line, line
    assert (f"a fixed K = {k} evaluation of aime24 is a view beside the run's headline, the adaptive evaluation "
            "(--target-se) it does not replace") in line, line


def test_an_adaptive_run_after_a_fixed_k_becomes_the_headline_whole(
        server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 52.1, the other order: `--n 8`, then `--target-se` on the same folder. The adaptive evaluation holds
    every index a fixed K may (up to 2 x --max-n): it becomes the headline whole and says it replaced it. Its design
    counts the 8 samples a problem the run's history asked for (a problem holds the most any command asked for): every
    figure of the entry is over those 8."""
    write_data(tmp_path / "data", {"aime24": 6})
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "8").returncode == 0
    run_dir = _run_dir(tmp_path)
    r = _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "20")
    assert r.returncode == 0, r.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    entry = summary["tasks"]["aime24"]
    assert entry["evaluation"] == {"kind": "adaptive", "samples_per_problem": [8, 8]} and "adaptive" in summary
    assert summary["adaptive"]["aime24"]["samples"] == 6 * 8 and max(int(x) for x in entry["pass_at_k"]) == 8
    assert entry["num_samples"] == 8 and entry.get("samples_per_problem") in (None, [8, 8])
    assert "replaces the run's headline, a fixed K = 8 evaluation" in " ".join(r.stdout.split()), r.stdout


def test_a_narrower_command_on_an_adaptive_headline_says_it_left_it_unchanged(
        server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 52.5: `--n 2` on an adaptive headline said "which this command updated too" when only timestamps
    changed, and narrower commands rewrote config.json's `updated` while saying "unchanged"."""
    write_data(tmp_path / "data", {"aime24": 6})
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--target-se", "20").returncode == 0
    run_dir = _run_dir(tmp_path)
    config = json.loads((run_dir / "config.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    for argv in (run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "2"),
                 ["report", str(run_dir), "--n", "3", "--grading-workers", "1"]):
        r = cli_inprocess(argv, capsys)
        assert r.returncode == 0, r.stderr
        line = " ".join(r.stdout.split())
        assert "updated too" not in line and "which is unchanged" in line, line
        assert json.loads((run_dir / "config.json").read_text())["updated"] == config["updated"]
        now = json.loads((run_dir / "summary.json").read_text())
        assert now["tasks"] == summary["tasks"] and now["adaptive"] == summary["adaptive"]


def test_compare_of_a_run_with_itself_is_an_error(server: OpenAIServer, tmp_path: Path, capsys: Any) -> None:
    """Issue 52.5: `compare RUN RUN` exited 0 with a table of zero differences."""
    write_data(tmp_path / "data", {"aime24": 3})
    assert _run(server, tmp_path, capsys, "--tasks", "aime24", "--n", "2").returncode == 0
    run_dir = _run_dir(tmp_path)
    r = cli_inprocess(["compare", str(run_dir), str(run_dir) + "/"], capsys)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and "given twice" in last and "two different runs" in last, (r.returncode, r.stderr)
