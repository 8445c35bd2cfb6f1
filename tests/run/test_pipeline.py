"""End to end: `reasoneval run` against a real loopback OpenAI server, from the CLI and the API."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.errors import RunIncomplete
from reasoneval.results.identity import sample_seed
from reasoneval.results.store import SampleStore, iter_jsonl
from reasoneval.tasks import problem_key
from tests.fixtures.openai_server import Reply

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/<area>/this file)

AIME = [("Find $x$ if $x+1=5$.", "4"), ("What is $2 \\cdot 5$?", "10"), ("Compute $3^2$.", "9")]
MATH = [("Simplify $\\frac{2}{4}$.", "\\frac{1}{2}"), ("What is $7-2$?", "5")]


def write_data_dir(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for task, rows in (("aime24", AIME), ("math500", MATH)):
        with open(d / f"{task}.jsonl", "w") as f:
            for i, (q, a) in enumerate(rows):
                f.write(json.dumps({"id": f"{task}-{i}", "problem": q, "answer": a}) + "\n")
    return d


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reasoneval.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})},
                          cwd=ROOT)


def base_args(server: Any, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "--base-url", server.base_url, "--model", "test-model", "--data-dir", str(tmp_path / "data"),
            "--output-dir", str(tmp_path / "results"), "--retry-backoff", "0.01", "--grading-workers", "1",
            "--no-progress", *extra]


def run_api(server: Any, tmp_path: Path, **kw: Any) -> Any:
    opts: dict[str, Any] = dict(base_url=server.base_url, model="test-model", data_dir=str(tmp_path / "data"),
                                output_dir=str(tmp_path / "results"), retry_backoff=0.01, grading_workers=1,
                                progress=False, print_table=False)
    opts.update(kw)
    return reasoneval.evaluate(**opts)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_data_dir(tmp_path / "data")


def test_full_run_on_two_tasks_from_the_cli(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    server = make_openai_server(script={"x+1=5": "so \\boxed{4}", "2 \\cdot 5": "\\boxed{10}",
                                        "3^2": ["\\boxed{9}", "\\boxed{6}"], "frac{2}{4}": "\\boxed{0.5}",
                                        "7-2": "\\boxed{5}"})
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "4", "--json"))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert set(summary["tasks"]) == {"aime24", "math500"}
    t = summary["tasks"]["aime24"]
    assert t["num_problems"] == 3 and t["num_samples"] == 4
    assert set(t["pass_at_k"]) == {"1", "2", "3", "4"}
    assert summary["tasks"]["math500"]["mean"] == 1.0  # 0.5 == \frac{1}{2}
    run_dir = Path(summary["config"]["run_id"]) if False else next((tmp_path / "results" / "test-model").iterdir())
    for name in ("config.json", "problems.jsonl", "samples.jsonl", "results.parquet", "summary.json", "run.log"):
        assert (run_dir / name).exists(), name
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir / "results.parquet")
    assert table.num_rows == 5
    row = table.to_pylist()[0]
    assert len(row["responses"]) == 4 and len(row["seeds"]) == 4 and len(row["correct"]) == 4
    assert summary["timing"]["requests"] == 20 and summary["complete"] is True
    # --limit takes the first N of each task
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "4", "--limit", "1", "--json"))
    assert r.returncode == 0, r.stderr
    s2 = json.loads(r.stdout)
    assert s2["tasks"]["aime24"]["num_problems"] == 1 and s2["timing"]["requests"] == 0


def test_metrics_equal_hand_computed_values(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    """aime24 problems 0 and 1, K = 4, scripted per sample index through the seeds."""
    plan = {  # problem text -> per-sample (answer text, finish reason, completion tokens)
        AIME[0][0]: [("\\boxed{4}", "stop", 10), ("\\boxed{4}", "stop", 20), ("\\boxed{5}", "stop", 30),
                     ("Let me think about this carefully. First we note that the sum is", "length", 100)],
        AIME[1][0]: [("\\boxed{10}", "stop", 40), ("\\boxed{3}", "stop", 50), ("\\boxed{3}", "stop", 60),
                     ("\\boxed{3}", "stop", 70)],
    }
    by_seed = {}
    for (q, a) in AIME[:2]:
        key = problem_key(q, a)
        for j, (text, fr, toks) in enumerate(plan[q]):
            by_seed[sample_seed(42, "aime24", key, j)] = Reply(text=text, finish_reason=fr, completion_tokens=toks)
    server = make_openai_server(responder=lambda body: by_seed[body["seed"]])
    s = run_api(server, tmp_path, tasks=["aime24"], n=4, limit=2)
    t = s.tasks["aime24"].to_json_dict()
    assert t["mean"] == pytest.approx(0.375)
    assert t["pass_at_k"]["1"] == pytest.approx(0.375)
    assert t["pass_at_k"]["2"] == pytest.approx((5 / 6 + 1 / 2) / 2)
    assert t["pass_at_k"]["3"] == pytest.approx((1 + 3 / 4) / 2)
    assert t["pass_at_k"]["4"] == pytest.approx(1.0)
    assert t["stderr"] == pytest.approx(0.125)
    assert t["maj_at_k"]["1"] == pytest.approx(0.375)
    assert t["maj_at_k"]["2"] == pytest.approx((2 / 3 + 1 / 4) / 2)
    assert t["maj_at_k"]["4"] == pytest.approx(0.5)
    assert t["truncation_rate"] == pytest.approx(1 / 8)
    assert t["no_answer_rate"] == pytest.approx(1 / 8)
    assert t["tokens"]["mean"] == pytest.approx(47.5) and t["tokens"]["max"] == 100
    assert s.aggregate.mean == pytest.approx(0.375) and s.aggregate.macro_mean == pytest.approx(0.375)


def test_seeds_distinct_per_sample_and_raising_n_reuses_old_samples(make_openai_server: Any, tmp_path: Path,
                                                                    data: Path) -> None:
    server = make_openai_server()
    s1 = run_api(server, tmp_path, tasks=["aime24"], n=2)
    assert server.count_requests() == 6
    s2 = run_api(server, tmp_path, tasks=["aime24"], n=5)
    assert server.count_requests() == 15  # only the 3 new samples of each problem
    assert s1.run_dir == s2.run_dir
    seeds_per_problem: dict[str, list[int]] = {}
    for r in SampleStore(s2.run_dir).records():
        seeds_per_problem.setdefault(r.problem_key, []).append(r.seed)
    assert all(len(v) == 5 == len(set(v)) for v in seeds_per_problem.values())
    assert sorted(server.seeds_seen()) == sorted(x for v in seeds_per_problem.values() for x in v)
    # same command again: nothing to generate
    run_api(server, tmp_path, tasks=["aime24"], n=5)
    assert server.count_requests() == 15
    # a new task joins the same run directory
    s3 = run_api(server, tmp_path, tasks=["math500"], n=5)
    assert s3.run_dir == s1.run_dir


def test_a_new_checkpoint_under_the_same_name_starts_a_new_run(make_openai_server: Any, tmp_path: Path,
                                                                data: Path) -> None:
    a = run_api(make_openai_server(root="/ckpt/step-1"), tmp_path, tasks=["aime24"], n=1)
    b = run_api(make_openai_server(root="/ckpt/step-2"), tmp_path, tasks=["aime24"], n=1)
    assert a.run_dir != b.run_dir


def test_resume_after_sigkill_loses_nothing_and_repeats_nothing(make_openai_server: Any, tmp_path: Path,
                                                                data: Path) -> None:
    server = make_openai_server(delay_s=0.05)
    args = base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "16", "--concurrency", "4")
    proc = subprocess.Popen([sys.executable, "-m", "reasoneval.cli.main", *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "results" / "test-model"
    deadline = time.monotonic() + 60
    journal = None
    while time.monotonic() < deadline:
        files = list(results.glob("*/samples.jsonl")) if results.exists() else []
        if files and sum(1 for _ in open(files[0], "rb")) >= 25:
            journal = files[0]
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert journal is not None, "the run never journaled 25 samples"
    first = [(d["task"], d["problem_key"], d["index"]) for d in iter_jsonl(journal)]
    first_seeds = {d["seed"] for d in iter_jsonl(journal)}
    assert 25 <= len(first) < 80
    server.reset()
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    keys = [(d["task"], d["problem_key"], d["index"]) for d in iter_jsonl(journal)]
    assert len(keys) == len(set(keys)) == 80  # every sample exactly once
    assert keys[:len(first)] == first
    second_seeds = server.seeds_seen()
    assert not first_seeds & set(second_seeds)  # nothing journaled was generated again
    assert len(second_seeds) == 80 - len(first)
    # metrics equal those of an uninterrupted run with the same seeds
    resumed = json.loads((journal.parent / "summary.json").read_text())
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24,math500", "--n", "16", "--json",
                       "--output-dir", str(tmp_path / "fresh")))
    fresh = json.loads(r.stdout)
    assert fresh["tasks"] == resumed["tasks"] and fresh["aggregate"] == resumed["aggregate"]


def test_second_process_on_the_same_run_is_refused(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    server = make_openai_server(delay_s=0.2)
    args = base_args(server, tmp_path, "--tasks", "aime24", "--n", "8", "--concurrency", "1")
    proc = subprocess.Popen([sys.executable, "-m", "reasoneval.cli.main", *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and server.count_requests() == 0:
            time.sleep(0.05)
        r = cli(*args)
        assert r.returncode == 2
        assert "another reasoneval process" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    finally:
        proc.kill()
        proc.wait()


def test_failed_samples_make_the_run_incomplete_and_are_retried_next_time(make_openai_server: Any, tmp_path: Path,
                                                                          data: Path) -> None:
    server = make_openai_server()
    server.fail_next(2, "http500")
    with pytest.raises(RunIncomplete) as ei:
        run_api(server, tmp_path, tasks=["aime24"], n=2, max_retries=0)
    s = ei.value.summary
    assert s.complete is False and s.tasks["aime24"].num_missing == 2
    summary = json.loads((s.run_dir / "summary.json").read_text())
    assert summary["complete"] is False
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24", "--n", "2"))
    assert r.returncode == 0, r.stderr
    assert server.count_requests() == 6 + 2


@pytest.mark.parametrize("extra,expect", [
    (["--model", "nope"], "model 'nope' is not served at .*served: test-model"),
    (["--tasks", "aime42"], "unknown task 'aime42'.*aime24"),
    (["--n", "0"], "--n must be at least 1"),
    (["--concurrency", "-3"], "--concurrency must be at least 1"),
])
def test_bad_input_is_a_one_line_error(make_openai_server: Any, tmp_path: Path, data: Path, extra: list[str],
                                       expect: str) -> None:
    import re

    server = make_openai_server()
    args = base_args(server, tmp_path, "--tasks", "aime24", *extra)
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(expect, lines[0]), r.stderr


def test_unreachable_url_is_a_one_line_error(tmp_path: Path, data: Path) -> None:
    r = cli("run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--tasks", "aime24", "--data-dir",
            str(data), "--output-dir", str(tmp_path / "r"), "--no-progress")
    assert r.returncode == 2 and "cannot reach http://127.0.0.1:9/v1/models" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_malformed_data_row_names_file_and_line(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    with open(data / "aime24.jsonl", "a") as f:
        f.write("{not json\n")
    r = cli(*base_args(make_openai_server(), tmp_path, "--tasks", "aime24"))
    assert r.returncode == 2
    assert f"{data / 'aime24.jsonl'}:4" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_report_rebuilds_everything_without_requests(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    server = make_openai_server()
    s = run_api(server, tmp_path, tasks=["aime24", "math500"], n=4)
    n_requests = server.count_requests()
    (s.run_dir / "summary.json").unlink()
    (s.run_dir / "results.parquet").unlink()
    server.stop()
    r = cli("report", str(s.run_dir), "--json", "--grading-workers", "1")
    assert r.returncode == 0, r.stderr
    rebuilt = json.loads(r.stdout)
    assert rebuilt["tasks"] == {k: m.to_json_dict() for k, m in s.tasks.items()} and (s.run_dir / "results.parquet").exists()
    # --n 2 uses only the first two samples of each problem
    r = cli("report", str(s.run_dir), "--json", "--n", "2", "--grading-workers", "1")
    assert json.loads(r.stdout)["tasks"]["aime24"]["num_samples"] == 2
    assert n_requests == 20


def test_api_key_is_sent_but_never_written(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    secret = "sk-test-SECRET-123456"
    server = make_openai_server()
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24", "--n", "1"), env={"OPENAI_API_KEY": secret})
    assert r.returncode == 0, r.stderr
    assert secret not in r.stdout + r.stderr
    for path in (tmp_path / "results").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


@pytest.mark.real_data("aime25.jsonl", "gsm8k.jsonl")
def test_real_benchmark_files_from_the_shared_data_dir(make_openai_server: Any, tmp_path: Path, real_data_dir: Path) -> None:
    server = make_openai_server()
    s = reasoneval.evaluate(base_url=server.base_url, model="test-model", data_dir=str(real_data_dir),
                            output_dir=str(tmp_path / "results"), tasks=["aime25", "gsm8k"], n=2, limit=5,
                            grading_workers=1, progress=False, print_table=False)
    assert s.tasks["aime25"].num_problems == 5 and s.tasks["gsm8k"].num_problems == 5
    assert s.complete


def test_completions_api_with_template_and_system_prompt(make_openai_server: Any, tmp_path: Path,
                                                         data: Path) -> None:
    server = make_openai_server(script={"x+1=5": "\\boxed{4}"}, default="\\boxed{0}")
    template = tmp_path / "tpl.txt"
    template.write_text("Q: {problem}\nThink, then give \\boxed{answer}.\nA:")
    s = run_api(server, tmp_path, tasks=["aime24"], n=1, limit=1, api="completions",
                prompt_template=str(template))
    body = server.requests()[-1].body
    assert body["prompt"] == "Q: Find $x$ if $x+1=5$.\nThink, then give \\boxed{answer}.\nA:"
    assert s.tasks["aime24"].mean == 1.0
    s2 = run_api(server, tmp_path, tasks=["aime24"], n=1, limit=1, system_prompt="You are terse.")
    msgs = server.requests()[-1].body["messages"]
    assert msgs[0] == {"role": "system", "content": "You are terse."}
    assert msgs[1]["content"] == AIME[0][0] + "\nPlease reason step by step, and put your final answer within \\boxed{}."
    assert s2.run_dir != s.run_dir  # prompt settings are part of the run identity


def test_user_data_file_from_the_cli(make_openai_server: Any, tmp_path: Path) -> None:
    f = tmp_path / "mine.csv"
    f.write_text("q,a,qid\nWhat is 1+1?,2,one\nWhat is 2+2?,4,two\n")
    server = make_openai_server(script={"1+1": "\\boxed{2}", "2+2": "\\boxed{5}"})
    r = cli("run", "--base-url", server.base_url, "--model", "test-model", "--data", str(f), "--problem-field", "q",
            "--answer-field", "a", "--id-field", "qid", "--n", "2", "--output-dir", str(tmp_path / "r"), "--json",
            "--grading-workers", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    (name, t), = s["tasks"].items()
    assert name == "mine" and t["num_problems"] == 2 and t["mean"] == 0.5


def test_progress_degrades_to_log_lines_off_a_terminal(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    server = make_openai_server()
    args = [a for a in base_args(server, tmp_path, "--tasks", "aime24", "--n", "2") if a != "--no-progress"]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "samples 6/6 done: 6 generated, 0 failed" in r.stderr and "tok/s" in r.stderr
    run_log = next((tmp_path / "results" / "test-model").glob("*/run.log")).read_text()
    assert "samples 6/6 done: 6 generated, 0 failed" in run_log


def test_tasks_command_lists_sizes_sources_and_local_data(tmp_path: Path, data: Path) -> None:
    r = cli("tasks", "--data-dir", str(data))
    assert r.returncode == 0, r.stderr
    lines = {line.split("│")[1].strip(): line for line in r.stdout.splitlines() if line.count("│") >= 4}
    assert "aime24" in lines and "gpqa_diamond" in lines and "arith" in lines
    assert "yes" in lines["aime24"] and " 3 " in lines["aime24"]  # our 3-row file is what would load
    assert "Idavidrein/gpqa" in lines["gpqa_diamond"] and "no" in lines["gpqa_diamond"]
    assert "group math = aime24, aime25, amc23, math500, minerva_math, olympiadbench" in r.stdout


def test_two_runs_side_by_side_in_one_event_loop_keep_their_own_logs(make_openai_server: Any, tmp_path: Path,
                                                                     data: Path) -> None:
    """evaluate_async inside a running loop; each run's run.log holds its own run's lines only."""
    server = make_openai_server(script={"x+1=5": "\\boxed{4}", "2 \\cdot 5": "\\boxed{10}", "3^2": "\\boxed{9}"})
    opts: dict[str, Any] = dict(base_url=server.base_url, model="test-model", data_dir=str(data), tasks=["aime24"],
                                output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                print_table=False, n=2)

    async def both() -> tuple[Any, Any]:
        return await asyncio.gather(reasoneval.evaluate_async(**opts, seed=1),
                                    reasoneval.evaluate_async(**opts, seed=2))

    a, b = asyncio.run(both())
    assert a.run_dir != b.run_dir and a.tasks["aime24"].mean == b.tasks["aime24"].mean == 1.0
    log_a, log_b = (a.run_dir / "run.log").read_text(), (b.run_dir / "run.log").read_text()
    assert str(a.run_dir) in log_a and str(b.run_dir) not in log_a
    assert str(b.run_dir) in log_b and str(a.run_dir) not in log_b


def test_engine_flags_belong_to_their_engine(make_openai_server: Any, tmp_path: Path, data: Path) -> None:
    server = make_openai_server()
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24", "--replicas", "2"))
    assert r.returncode == 2 and "--replicas is an option of the local, ray engine(s), not of --engine openai" in r.stderr
    r = cli(*base_args(server, tmp_path, "--tasks", "aime24", "--engine-arg", "replicas=2"))
    assert r.returncode == 2 and "the openai engine has no option 'replicas'" in r.stderr
    r = cli("engines")
    assert r.returncode == 0 and "--engine launch" in r.stdout and "startup_timeout" in r.stdout


def test_raising_n_starts_the_samples_of_the_problems_known_to_be_longest_first(make_openai_server: Any,
                                                                                 tmp_path: Path, data: Path) -> None:
    from tests.fixtures.openai_server import Reply

    # aime24's three problems answer at 10, 1000 and 100 completion tokens.
    tokens = {"x+1=5": 10, "2 \\cdot 5": 1000, "3^2": 100}
    server = make_openai_server(script={k: Reply("\\boxed{1}", completion_tokens=v) for k, v in tokens.items()})
    run_api(server, tmp_path, tasks=["aime24"], n=1, concurrency=1)
    server.reset()
    run_api(server, tmp_path, tasks=["aime24"], n=3, concurrency=1)
    order = [next(k for k in tokens if k in r.problem_text) for r in server.requests() if r.path.endswith("completions")]
    assert order == ["2 \\cdot 5"] * 2 + ["3^2"] * 2 + ["x+1=5"] * 2
    server.reset()
    run_api(server, tmp_path, tasks=["aime24"], n=5, concurrency=1, schedule="sample-major")
    order = [next(k for k in tokens if k in r.problem_text) for r in server.requests() if r.path.endswith("completions")]
    assert order == ["x+1=5", "2 \\cdot 5", "3^2"] * 2
