"""`reasoneval sweep` and `reasoneval watch` on a real Ray cluster, against the loopback OpenAI server.

The sweep runs as the CLI does, in its own process that starts its own small local Ray cluster with
2 declared GPUs (no hardware: Ray schedules them for real, the jobs talk to the loopback server).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reasoneval.errors import UserError
from tests.fixtures.openai_server import OpenAIServer, Reply
from tests.fixtures.ray_processes import clusters_started_in, ray_processes_in
from tests.plugins import register_for_the_test

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/<area>/this file)
MODELS = ("m1", "m2", "m3")


def _responder(body: dict) -> Reply:
    model, seed = body.get("model"), body.get("seed") or 0
    # m1 answers 4, m3 answers 5, m2 one or the other by seed; m1 is fast, m2 and m3 slow: m2 still generates (48
    # requests, 4 at a time: about 5 s) when m1 is scored and done, the driver's first scoring included (the CLI
    # imports pyarrow and scipy only then, a few seconds on a loaded machine).
    answer = {"m1": 4, "m3": 5}.get(str(model), 4 + seed % 2)
    return Reply(f"So the answer is \\boxed{{{answer}}}.", delay_s=0.01 if model == "m1" else 0.4)


@pytest.fixture
def server() -> Any:
    with OpenAIServer(model=list(MODELS), responder=_responder) as s:
        yield s


def _jobs(folder: Path, base_url: str, data_dir: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    jobs = folder / "jobs.yaml"
    jobs.write_text(f"""
defaults:
  tasks: [arith, aime24]
  limit: 6
  n: 4
  base_url: {base_url}
  data_dir: {data_dir}
  concurrency: 4
  max_retries: 0
models:
  - m1
  - m2
  - model: m3
    name: third
""")
    return jobs


def _data(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    with open(d / "aime24.jsonl", "w") as f:
        for i in range(6):
            f.write(json.dumps({"id": f"p{i}", "problem": f"Problem {i}: what is it?", "answer": str(4 + i % 2)}) + "\n")
    return d


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sweep(jobs: Path, *args: str, wait: bool = True, ray_tmpdir: Path | None = None) -> Any:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "RAY_ADDRESS": ""}
    env.pop("RAY_ADDRESS")
    if ray_tmpdir is not None:  # the clusters it starts name this folder (tests/fixtures/ray_processes.py)
        env["RAY_TMPDIR"] = str(ray_tmpdir)
    cmd = [sys.executable, "-m", "reasoneval", "sweep", str(jobs), "--num-gpus", "2", "--num-cpus", "2", *args]
    if not wait:
        # The test interrupts it with SIGINT: give it SIGINT's default disposition (Python then raises
        # KeyboardInterrupt), as from a terminal. Started from a background job of a script (`pytest ... &`, CI)
        # it would inherit SIGINT ignored, which reasoneval honours, and the interrupt would never arrive.
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=_sigint_default)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


def _state(jobs: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(jobs.with_name("jobs.yaml.state.json").read_text()))
    except (FileNotFoundError, ValueError):
        return {}


@pytest.mark.slow
def test_sweep_interrupted_and_rerun_resumes_skips_finished_jobs_and_gets_the_same_numbers(
        tmp_path: Path, server: OpenAIServer, ray_tmpdir: Path) -> None:
    data = _data(tmp_path)
    reference = _sweep(_jobs(tmp_path / "ref", server.base_url, data), ray_tmpdir=ray_tmpdir)
    assert reference.returncode == 0, reference.stdout + reference.stderr
    ref_table = (tmp_path / "ref" / "jobs.yaml.status.csv").read_text()
    assert ref_table.splitlines()[0] == "job,state,arith,aime24"
    assert "m1,done,0.0 ± 0.0,50.0 ± 22.4" in ref_table  # m1 always answers 4: right on half of aime24
    server.reset()

    jobs = _jobs(tmp_path / "cut", server.base_url, data)
    proc = _sweep(jobs, wait=False, ray_tmpdir=ray_tmpdir)
    deadline = time.monotonic() + 120
    while _state(jobs).get("m1", {}).get("state") != "done":
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    cut = _state(jobs)
    assert cut["m1"]["state"] == "done" and cut["m2"]["state"] != "done", cut

    seen_before = len([r for r in server.requests() if r.body and r.body.get("model") == "m2"])
    server.reset()
    again = _sweep(jobs, ray_tmpdir=ray_tmpdir)
    assert again.returncode == 0, again.stdout + again.stderr
    models_asked = [r.body.get("model") for r in server.requests() if r.body and r.path.endswith("completions")]
    assert "m1" not in models_asked  # finished: skipped
    assert 0 < models_asked.count("m2") < 48 and seen_before + models_asked.count("m2") >= 48  # resumed
    assert (tmp_path / "cut" / "jobs.yaml.status.csv").read_text() == ref_table  # the same numbers
    status = subprocess.run([sys.executable, "-m", "reasoneval", "sweep", "--status", str(jobs)], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    assert status.returncode == 0 and "third" in status.stdout and "done" in status.stdout
    assert "| m2 | done |" in (tmp_path / "cut" / "jobs.yaml.status.md").read_text()
    time.sleep(1)
    assert len(clusters_started_in(ray_tmpdir)) == 3  # each sweep started a cluster of its own
    assert ray_processes_in(ray_tmpdir) == []  # and every one is gone


@pytest.mark.slow
def test_a_gpu_marked_busy_is_left_alone_and_reported(tmp_path: Path, server: OpenAIServer) -> None:
    jobs = _jobs(tmp_path / "busy", server.base_url, _data(tmp_path))
    r = _sweep(jobs, "--busy-gpus", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "GPU 1 is busy (marked busy (--busy-gpus)): left alone" in r.stderr
    state = _state(jobs)
    assert sorted(state) == ["m1", "m2", "third"]
    assert all(e["state"] == "done" and e["gpu_ids"] == ["0"] for e in state.values()), state


def test_bad_jobs_files_are_one_line_errors(tmp_path: Path) -> None:
    from reasoneval.errors import UserError
    from reasoneval.fleet.jobs import load_jobs

    bad = tmp_path / "jobs.yaml"
    bad.write_text("defaults: {tasks: [arith], temprature: 0.5}\nmodels: [m1]\n")
    with pytest.raises(UserError, match="unknown option.*temprature"):
        load_jobs(bad)
    bad.write_text("models: [m1, m1]\n")
    with pytest.raises(UserError, match="m1 appear twice"):
        load_jobs(bad)
    bad.write_text("defaults: {n: 2}\n")
    with pytest.raises(UserError, match="needs `models:`"):
        load_jobs(bad)


def test_a_sweep_of_checkpoints_can_be_greedy_and_few_shot_for_every_job(tmp_path: Path) -> None:
    # What base-model teams run (docs/lm-eval.md): greedy, few-shot, on the completions API, over
    # checkpoint folders; the defaults apply to every job unless a job overrides them.
    from reasoneval.fleet.jobs import load_jobs

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text("defaults: {tasks: [gsm8k], greedy: true, num_fewshot: 4, api: completions}\n"
                         "models:\n  - {model: step-100, model_path: ckpt/step-100, engine: vllm}\n"
                         "  - {model: step-200, num_fewshot: 8}\n")
    first, second = load_jobs(jobs_file)
    # An engine option at the top level, as on the command line (--model-path), relative to the jobs file.
    assert first.config.engine_args == {"model_path": str(tmp_path / "ckpt" / "step-100")}
    for job in (first, second):
        assert (job.config.temperature, job.config.top_p, job.config.n) == (0.0, 1.0, 1)
        assert job.config.api == "completions"
    assert (first.config.num_fewshot, second.config.num_fewshot) == (4, 8)
    # greedy sets n = 1: an n beside it would be ignored, so it is an error (it was dropped without a word)
    jobs_file.write_text("defaults: {tasks: [gsm8k], greedy: true, n: 8}\nmodels: [step-100]\n")
    with pytest.raises(UserError, match=r"--greedy sets --temperature 0 --top-p 1 --n 1, so --n would be ignored"):
        load_jobs(jobs_file)


@pytest.mark.usefixtures("ray_cluster")
def test_watch_evaluates_a_checkpoint_written_in_stages_once_after_it_is_complete(tmp_path: Path) -> None:
    from reasoneval.fleet.state import read_state
    from reasoneval.fleet.watch import WatchOptions, watch_once

    root = tmp_path / "ckpts"
    root.mkdir()
    # The echo engine stands in for the model (a checkpoint's weights are not loaded here).
    settings = {"tasks": ["arith"], "limit": 3, "n": 2, "engine": "echo", "output_dir": str(tmp_path / "results"),
                "engine_args": {"delay_s": 0.01}}
    opts = WatchOptions(settings=settings, state_file=root / ".reasoneval-watch.json", stable_s=1.0)
    step = root / "checkpoint-200"
    step.mkdir()
    (step / "config.json").write_text("{}")
    assert watch_once(root, opts) == []  # a config and no weights yet
    (step / "model.safetensors").write_bytes(b"x" * 100)
    assert watch_once(root, opts) == []  # first seen: not known to be stable
    time.sleep(0.6)
    with open(step / "model.safetensors", "ab") as f:
        f.write(b"y" * 100)  # still being written
    time.sleep(0.6)
    assert watch_once(root, opts) == []  # changed since it was first seen 1.2 s ago
    time.sleep(1.1)
    assert watch_once(root, opts) == ["checkpoint-200"]  # unchanged for 1 s: complete, evaluated
    # A checkpoint with a marker file is complete at once; the earlier one is not evaluated again.
    marked = root / "checkpoint-100"
    marked.mkdir()
    (marked / "config.json").write_text("{}")
    (marked / "model.safetensors").write_bytes(b"z")
    (marked / "COMPLETE").write_text("")
    assert watch_once(root, opts) == ["checkpoint-100"]
    assert watch_once(root, opts) == []
    # A restarted watcher (new options object, same state file) redoes nothing.
    assert watch_once(root, WatchOptions(settings=settings, state_file=opts.state_file, stable_s=0.0)) == []
    jobs = read_state(root / ".reasoneval-watch.json.jobs.json")
    assert {k: v.state for k, v in jobs.items()} == {"checkpoint-200": "done", "checkpoint-100": "done"}
    runs = list((tmp_path / "results").glob("*/*/samples.jsonl"))
    assert len(runs) == 2 and all(len(r.read_text().splitlines()) == 6 for r in runs)
    table = (root / ".reasoneval-watch.json.status.csv").read_text().splitlines()
    assert [line.split(",")[:2] for line in table] == [["job", "state"], ["checkpoint-100", "done"],
                                                        ["checkpoint-200", "done"]]  # by step


@pytest.mark.usefixtures("ray_cluster")
def test_a_job_whose_worker_keeps_dying_is_retried_then_failed_and_the_others_finish(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reasoneval.engines import ENGINES
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.loop import run_jobs

    crashes = tmp_path / "crashes.log"
    jobs_file = tmp_path / "jobs.yaml"
    # The doomed job's engine kills its worker on every attempt (tests/plugins/dying_engine.py).
    jobs_file.write_text("defaults: {tasks: [arith], limit: 2, n: 2, engine: echo}\nmodels: [{model: doomed, engine: "
                         f"dying, engine_args: {{pid_log: {crashes}}}}}, fine]\n")
    register_for_the_test(monkeypatch, ENGINES, "dying", "tests.plugins.dying_engine")
    state = run_jobs(load_jobs(jobs_file), tmp_path / "state.json", job_retries=1)
    assert state["fine"].state == "done"
    assert state["doomed"].state == "failed" and "worker died (1 retries used)" in (state["doomed"].error or "")
    assert len(crashes.read_text().split()) == 2  # the first attempt and one retry, each in a fresh worker


@pytest.mark.usefixtures("ray_cluster")
def test_watch_once_exits_3_when_a_checkpoint_did_not_finish(tmp_path: Path, make_openai_server: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41.8: `watch --once` exited 0 when a checkpoint failed, and logged its routine progress at WARNING."""
    import logging

    from tests.reliability._helpers import cli_inprocess

    root = tmp_path / "ckpts"
    (root / "checkpoint-100").mkdir(parents=True)
    (root / "checkpoint-100" / "config.json").write_text("{}")
    (root / "checkpoint-100" / "model.safetensors").write_bytes(b"x")
    (root / "checkpoint-100" / "COMPLETE").write_text("")
    server = make_openai_server()  # it serves another model than the checkpoint: the job fails
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"tasks: [arith]\nlimit: 2\nn: 1\nbase_url: {server.base_url}\nmodel: test-model\n"
                        f"retry_backoff: 0.01\noutput_dir: {tmp_path / 'results'}\n")
    logging.getLogger("reasoneval").setLevel(logging.INFO)
    r = cli_inprocess(["watch", str(root), "--settings", str(settings), "--once", "--job-retries", "0"], capsys)
    assert r.returncode == 3, r.stderr
    assert "watch: checkpoint-100 did not finish" in r.stderr
    assert not any("WARNING" in line and "is complete: evaluating" in line for line in r.stderr.splitlines())
    # Results inside the watched folder, among the checkpoints: refused before anything is evaluated.
    inside = tmp_path / "inside.yaml"
    inside.write_text(f"tasks: [arith]\nengine: echo\noutput_dir: {root / 'results'}\n")
    r = cli_inprocess(["watch", str(root), "--settings", str(inside), "--once"], capsys)
    assert r.returncode == 2 and "the results would go inside the watched folder" in r.stderr, r.stderr
    assert not (root / "results").exists()
    # A checkpoint that finishes (the echo engine stands in for the model): exit 0.
    settings.write_text(f"tasks: [arith]\nlimit: 2\nn: 1\nengine: echo\noutput_dir: {tmp_path / 'results'}\n")
    (root / "checkpoint-200").mkdir()
    for name in ("config.json", "model.safetensors", "COMPLETE"):
        (root / "checkpoint-200" / name).write_text("{}")
    r = cli_inprocess(["watch", str(root), "--settings", str(settings), "--once"], capsys)
    assert r.returncode == 0, r.stderr
