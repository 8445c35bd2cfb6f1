"""A command that fails midway leaves every file of the run as it was: one test per command (`run`, `score`,
`report`, `export`, `sweep --status`), each with a failure injected after it has written part of its output.

Where the failure is a real one it is made for real (a server that starts failing every request, a file whose
answer key was renamed); where it cannot be (a disk that fills up between two files) the write of the last file is
made to raise ENOSPC, the error a full disk gives."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, cli_inprocess, run_args, write_data

RESULT_FILES = ("summary.json", "results.parquet", "report.html", "config.json", "problems.jsonl", "samples.jsonl")


def files_of(d: Path) -> dict[str, bytes]:
    """Every file under d (the run directory and its views), by relative path; the log and lock aside."""
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
            if p.is_file() and p.name not in ("run.log", ".lock")}


def full_disk(*_: Any, **__: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def complete_run(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path,
                 capsys: pytest.CaptureFixture[str]) -> tuple[OpenAIServer, Path]:
    write_data(tmp_path / "data", {"aime24": 6, "math500": 4})
    server = make_openai_server(responder=arith_reply)
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "3"), capsys)
    assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "results" / "test-model").iterdir()
    assert all((run_dir / f).exists() for f in RESULT_FILES)
    return server, run_dir


def test_run_whose_server_starts_failing_midway_changes_no_file(complete_run: tuple[OpenAIServer, Path],
                                                                tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A K extension (3 -> 8) whose server fails every request after 10 of them: exit 4, and every result file,
    config.json and problems.jsonl as they were; the journal only gains the samples that finished."""
    server, run_dir = complete_run
    before = files_of(run_dir)
    served = server.count_requests()
    server.fault_rates = {}
    seen = {"n": 0}
    base = server.responder

    def failing_after_ten(body: dict[str, Any]) -> Any:
        seen["n"] += 1
        if seen["n"] > 10:
            server.fault_rates = {"http500": 1.0}
        return base(body)

    server.responder = failing_after_ten
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24,math500", "--n", "8", "--concurrency", "2"),
                      capsys)
    assert r.returncode == 4, r.stderr[-2000:]
    assert server.count_requests() > served
    after = files_of(run_dir)
    for name in set(before) - {"samples.jsonl"}:
        assert after[name] == before[name], name
    assert set(after) == set(before)  # no view, no half-written file
    assert after["samples.jsonl"].startswith(before["samples.jsonl"])  # the journal only gained lines
    assert not list(run_dir.glob(".*.tmp")) and not list(run_dir.glob(".*.scratch"))


def test_report_that_fails_writing_its_last_file_changes_no_file(complete_run: tuple[OpenAIServer, Path],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`report --n 2` (a view) and `report` (the headline): results.parquet and summary.json are written, then
    report.html hits a full disk: nothing of either changes, and no temporary is left."""
    import reasoneval.run.score as pipeline

    _, run_dir = complete_run
    before = files_of(run_dir)
    monkeypatch.setattr(pipeline, "write_run_html", full_disk)
    for extra in ([], ["--n", "2"], ["--tasks", "aime24"]):
        r = cli_inprocess(["report", str(run_dir), "--grading-workers", "1", *extra], capsys)
        assert r.returncode == 2 and "No space left on device" in r.stderr, r.stderr[-2000:]
        assert files_of(run_dir) == before, extra
    assert not [p for p in run_dir.rglob(".*") if p.name != ".lock"]


def test_score_of_a_run_directory_that_fails_midway_changes_no_file(complete_run: tuple[OpenAIServer, Path],
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import reasoneval.run.score as pipeline

    _, run_dir = complete_run
    before = files_of(run_dir)
    monkeypatch.setattr(pipeline, "write_summary", full_disk)  # after results.parquet is written
    r = cli_inprocess(["score", str(run_dir), "--grading-workers", "1"], capsys)
    assert r.returncode == 2 and "cannot write" in r.stderr, r.stderr[-2000:]
    assert files_of(run_dir) == before


def test_a_failed_rescore_of_a_file_loses_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's repro: `score m.jsonl` (12 samples), then the same command on the file with its answer key
    renamed. It errors, and samples.jsonl, summary.json and results.parquet are the first import's: `export`
    writes its 12 rows and `report` reports it."""
    f = tmp_path / "m.jsonl"
    rows = [{"problem": f"What is ${i} + 1$?", "answer": str(i + 1), "gen": [f"\\boxed{{{i + 1}}}", "\\boxed{0}", "x"]}
            for i in range(4)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = cli_inprocess(["score", str(f), "--grading-workers", "1"], capsys)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "m.jsonl.reasoneval"
    before = files_of(out)
    assert len(before["samples.jsonl"].splitlines()) == 12
    f.write_text("".join(json.dumps({**{k: v for k, v in r.items() if k != "answer"}, "target_value": r["answer"]}) + "\n"
                         for r in rows))
    r = cli_inprocess(["score", str(f), "--grading-workers", "1"], capsys)
    assert r.returncode == 2 and "no answer field" in r.stderr
    assert files_of(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # the half-built folder is gone
    r = cli_inprocess(["export", str(out), "-o", str(tmp_path / "x.jsonl"), "--keep-truncated"], capsys)
    assert r.returncode == 0 and len((tmp_path / "x.jsonl").read_text().splitlines()) == 12
    r = cli_inprocess(["report", str(out), "--grading-workers", "1"], capsys)
    assert r.returncode == 0 and "re-run" not in r.stderr


def test_export_that_fails_midway_leaves_the_earlier_export(complete_run: tuple[OpenAIServer, Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import reasoneval.run.export as export

    _, run_dir = complete_run
    rows = export.iter_export_rows

    def failing(*a: Any, **kw: Any) -> Any:
        for i, row in enumerate(rows(*a, **kw)):
            if i == 5:
                full_disk()
            yield row

    for name in ("x.jsonl", "x.parquet"):
        target = tmp_path / name
        r = cli_inprocess(["export", str(run_dir), "-o", str(target)], capsys)
        assert r.returncode == 0, r.stderr
        before = target.read_bytes()
        monkeypatch.setattr(export, "iter_export_rows", failing)
        r = cli_inprocess(["export", str(run_dir), "-o", str(target), "--correct-only"], capsys)
        monkeypatch.setattr(export, "iter_export_rows", rows)
        assert r.returncode != 0
        assert target.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_sweep_status_that_fails_midway_changes_none_of_its_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import reasoneval
    import reasoneval.report.text as text
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.state import JobState, state_path, write_state

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text("defaults: {tasks: [arith], limit: 3, n: 2, engine: echo}\nmodels:\n  - m1\n  - m2\n")
    jobs = load_jobs(jobs_file)
    result = reasoneval.evaluate(jobs[0].config)
    write_state(state_path(jobs_file), {jobs[0].name: JobState(state="done", run_dir=str(result.run_dir))})
    r = cli_inprocess(["sweep", "--status", str(jobs_file)], capsys)
    assert r.returncode == 3  # m2 not done
    tables = sorted(p for p in tmp_path.glob("jobs.yaml.*.*") if "state" not in p.name)
    assert [p.name for p in tables] == ["jobs.yaml.checkpoints.csv", "jobs.yaml.checkpoints.md",
                                        "jobs.yaml.status.csv", "jobs.yaml.status.md"]
    before = {p.name: p.read_bytes() for p in tables}
    write_state(state_path(jobs_file), {jobs[0].name: JobState(state="done", run_dir=str(result.run_dir)),
                                        jobs[1].name: JobState(state="failed", error="x")})  # the tables would change
    calls = {"n": 0}
    markdown = text.markdown_table

    def failing(*a: Any, **kw: Any) -> str:
        calls["n"] += 1
        if calls["n"] == 2:  # the status tables are written, the checkpoint table is not
            full_disk()
        return markdown(*a, **kw)

    monkeypatch.setattr(text, "markdown_table", failing)
    r = cli_inprocess(["sweep", "--status", str(jobs_file)], capsys)
    assert r.returncode != 0 and calls["n"] == 2
    assert {p.name: p.read_bytes() for p in tables} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".jobs.yaml")]
    shutil.rmtree(result.run_dir)
