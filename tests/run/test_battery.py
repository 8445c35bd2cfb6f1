"""`reasoneval run --battery lmeval-base` on the loopback server: every row of lm-eval's base-model table, each
from a run with lm-eval's setting (greedy, seed 42, its shots, stops and max_gen_toks), the table's figures equal
to a recomputation from the runs' per-problem verdicts, and a re-run that resumes (no request sent)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reasoneval.analysis.battery import HUMANEVAL_UNTIL, get_battery, metric_name
from reasoneval.tasks import TASKS
from reasoneval.tasks.loading import convert_hub_rows
from tests.run.test_pipeline import cli

HUB = Path(__file__).resolve().parents[1] / "fixtures" / "hub"
MBPP_RIGHT = "def double(x):\n    return 2 * x\n[DONE]"


def respond(body: dict[str, Any]) -> str:
    """An answer in the format each prompt asks for (a few right, most wrong)."""
    prompt = str(body.get("prompt", ""))
    if "[BEGIN]" in prompt:  # mbpp: task 11 right, task 510 wrong
        return MBPP_RIGHT if "double a number" in prompt.rsplit("[BEGIN]", 2)[-2] else "def neg(x):\n    return x\n[DONE]"
    if prompt.rstrip().endswith('"""'):  # humaneval: a body that returns None, and the next function
        return "    return None\n\ndef helper():\n    pass\n"
    if prompt.endswith("\nAnswer:"):
        if "Problem: " in prompt:  # hendrycks_math: the bare answer; right for "Solve $2x+3=11$"
            return " $4$\n\nProblem: What is 1+1?"
        return " He has 3 * 4 = 12 pens.\n#### 12\n\nQuestion: next"  # gsm8k: right for the first problem
    if prompt.endswith("\nA:"):
        return " 3 * 4 = 12. The answer is 12.\n\nQ: next"  # gsm8k_cot
    if prompt.endswith("Solution:"):  # minerva: 4 (right for the first algebra problem) and 0.5 (right by sympy)
        return " It is 4.\nFinal Answer: The final answer is $4$. I hope it is correct."
    return "A short summary without any commas at all."  # ifeval


def _data(d: Path) -> Path:
    d.mkdir(parents=True)
    (d / "gsm8k_train.jsonl").write_text((HUB / "gsm8k_train.jsonl").read_text())
    for name in ("gsm8k", "hendrycks_math", "hendrycks_math_train", "ifeval", "mbpp"):
        rows = [json.loads(line) for line in (HUB / f"{name}.jsonl").read_text().splitlines()]
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in convert_hub_rows(TASKS.get(name), rows)))
    return d


@pytest.mark.slow
def test_battery_runs_every_row_with_lm_evals_settings_and_resumes(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(responder=respond)
    args = ["run", "--battery", "lmeval-base", "--base-url", server.base_url, "--model", "test-model",
            "--data-dir", str(_data(tmp_path / "data")), "--output-dir", str(tmp_path / "results"), "--limit", "14",
            "--grading-workers", "1", "--no-progress"]
    r = cli(*args, timeout=600)
    assert r.returncode == 0, r.stderr
    battery = get_battery("lmeval-base")
    out = tmp_path / "results" / "test-model"
    table = list(csv.DictReader((out / "lmeval-base.csv").open()))
    # Every row of the table, in its layout, with a figure.
    assert [(t["task"], t["setting"], t["metric"]) for t in table] == [
        (row.task, row.setting, row.metric) for row in battery.rows]
    assert all(t["value"] != "" for t in table), [t for t in table if t["value"] == ""]
    for row in battery.rows:
        assert row.task in r.stdout and row.metric in r.stdout

    # What was sent: greedy, lm-eval's shots, stops and max_gen_toks, each sample's seed from run seed 42.
    sent = [q.body for q in server.requests() if q.path == "/v1/completions"]
    assert all(b["temperature"] == 0 for b in sent)
    by_kind = {"humaneval": [b for b in sent if b["prompt"].rstrip().endswith('"""')],
               "ifeval": [b for b in sent if not b["prompt"].rstrip().endswith(('"""', "Answer:", "A:", "Solution:"))
                          and "[BEGIN]" not in b["prompt"]]}
    assert by_kind["humaneval"] and all(b["stop"] == list(HUMANEVAL_UNTIL) and b["max_tokens"] == 1024
                                        for b in by_kind["humaneval"])
    assert by_kind["ifeval"] and all(b["max_tokens"] == 1280 for b in by_kind["ifeval"])
    assert all(b["max_tokens"] == 256 for b in sent if b not in by_kind["humaneval"] + by_kind["ifeval"])
    shots = sorted({(b["prompt"].count("Question: "), b["prompt"].count("Q: "), b["prompt"].count("Problem:"))
                    for b in sent if b["prompt"].endswith(("Answer:", "A:", "Solution:"))})
    assert shots == [(0, 0, 5), (0, 5, 0), (0, 9, 0), (5, 0, 0), (9, 0, 0)]  # 4 or 8 exemplars + the problem
    record = json.loads((out / "lmeval-base.json").read_text())
    assert record["deviations"] == {}
    assert {r["seed"] for r in record["runs"].values()} == {42}
    assert all(r["sampling"]["temperature"] == 0 and r["n"] == 1 for r in record["runs"].values())

    # Each figure recomputed from the run's per-problem verdicts (results.parquet), or for IFEval's named figures
    # from the run's summary.json.
    subjects = {json.loads(line)["id"]: json.loads(line)["subject"]
                for line in (tmp_path / "data" / "hendrycks_math.jsonl").read_text().splitlines()}
    for row, t in zip(battery.rows, table):
        run = record["runs"][row.run]
        rows = [x for x in pq.read_table(Path(run["run_dir"]) / "results.parquet").to_pylist() if x["task"] == row.source]
        if row.source == "ifeval":  # IFEval's figures are its scorer's named values (tests/scoring/ifeval check them)
            summary = json.loads((Path(run["run_dir"]) / "summary.json").read_text())
            assert float(t["value"]) == pytest.approx(summary["tasks"]["ifeval"]["extra"][row.figure]["mean"])
            continue
        if row.subject is not None:
            rows = [x for x in rows if subjects[x["id"]] == row.subject]
        verdicts = [x["correct"][0] if row.figure == "mean" else dict(x["extra_correct"])[row.figure][0] for x in rows]
        assert float(t["value"]) == pytest.approx(sum(verdicts) / len(verdicts)), metric_name(row)
        assert int(t["n"]) == len(rows)
    figures = {metric_name(row): float(t["value"]) for row, t in zip(battery.rows, table)}
    assert figures["gsm8k/4-shot/exact_match,strict-match"] == 0.5
    assert figures["hendrycks_math/4-shot/exact_match"] == pytest.approx(1 / 14)
    assert figures["mbpp/3-shot/pass_at_1"] == 0.5

    # Re-running resumes: nothing is generated again, the table is the same.
    before = server.count_requests()
    again = cli(*args, timeout=600)
    assert again.returncode == 0, again.stderr
    assert server.count_requests() == before
    assert list(csv.DictReader((out / "lmeval-base.csv").open())) == table


def test_battery_refuses_options_that_would_change_its_rows(tmp_path: Path) -> None:
    r = cli("run", "--battery", "lmeval-base", "--tasks", "gsm8k", "--num-fewshot", "2", "--model", "m",
            "--base-url", "http://127.0.0.1:9/v1")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].endswith(
        "--battery lmeval-base sets --tasks, --num-fewshot itself (each row is lm-eval's setting); drop them, "
        "or run the task on its own")
    r = cli("run", "--battery", "nope", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert r.returncode == 2 and "unknown --battery 'nope'; known: lmeval-base" in r.stderr


@pytest.mark.slow
@pytest.mark.usefixtures("ray_cluster")
def test_a_sweep_runs_the_battery_per_checkpoint_into_a_matrix_and_the_dashboards(make_openai_server: Any,
                                                                                   tmp_path: Path) -> None:
    """Two training runs that both have a `checkpoint-100` stay two checkpoints (keyed by the job's name, not the
    folder's last part); each checkpoint's column is its runs' figures, and the dashboard gets the same figures at
    the checkpoint's step under the battery's names."""
    from reasoneval.analysis.battery import row_figures
    from reasoneval.fleet.jobs import load_jobs
    from reasoneval.fleet.loop import run_jobs
    from reasoneval.fleet.status import show_status
    from reasoneval.results.schema import load_run
    from tests.report.test_dashboards import tensorboard_scalars

    server = make_openai_server(responder=respond)
    data = _data(tmp_path / "data")
    jobs_file = tmp_path / "jobs.yaml"
    jobs_file.write_text(f"""
defaults: {{battery: lmeval-base, base_url: "{server.base_url}", data_dir: {data}, limit: 2, grading_workers: 1,
            gpus_per_job: 0, log_to: tensorboard, log_args: {{tensorboard_dir: {tmp_path / 'tb'}}}}}
models:
  - {{model: test-model, name: run-a/checkpoint-100, step: 100}}
  - {{model: test-model, name: run-b/checkpoint-100, step: 100}}
""")
    jobs = load_jobs(jobs_file)
    battery = get_battery("lmeval-base")
    assert [j.name for j in jobs] == [f"run-{x}/checkpoint-100/{run.name}" for x in "ab" for run in battery.runs]
    assert {j.checkpoint for j in jobs} == {"run-a/checkpoint-100", "run-b/checkpoint-100"}
    state = run_jobs(jobs, tmp_path / "jobs.yaml.state.json")
    assert {e.state for e in state.values()} == {"done"}
    show_status(jobs_file, jobs)

    md = (tmp_path / "jobs.yaml.lmeval-base.md").read_text().splitlines()
    assert md[2] == "| task | setting | metric | run-a/checkpoint-100 (step 100) | run-b/checkpoint-100 (step 100) |"
    assert len(md) == 4 + len(battery.rows)
    rows = list(csv.DictReader((tmp_path / "jobs.yaml.lmeval-base.csv").open()))
    assert [r["checkpoint"] for r in rows] == ["run-a/checkpoint-100", "run-b/checkpoint-100"]
    runs = {j.battery_run: load_run(Path(state[j.name].run_dir)) for j in jobs if j.checkpoint == "run-a/checkpoint-100"}
    figures = row_figures(battery, runs)
    for f in figures:
        want = "" if f.value is None else pytest.approx(f.value)
        assert (float(rows[0][metric_name(f.row)]) if rows[0][metric_name(f.row)] else "") == want, metric_name(f.row)
    assert rows[0]["gsm8k/8-shot/exact_match,strict-match"] != "" and rows[0]["humaneval/0-shot/pass@1,create_test"] != ""
    tb = tensorboard_scalars(tmp_path / "tb" / "jobs")
    for f in figures:
        if f.value is not None:
            assert tb[f"lmeval-base/{metric_name(f.row)}"][0] == (100, pytest.approx(f.value)), metric_name(f.row)


def test_runs_with_the_same_settings_are_one_run_and_given_options_are_recorded() -> None:
    from reasoneval.run.battery import battery_configs, deviations, merged_runs
    from reasoneval.run.options import EvalConfig

    battery = get_battery("lmeval-base")
    plain = EvalConfig(model="m", base_url="http://127.0.0.1:9/v1")
    runs = merged_runs(battery_configs(plain, battery))
    assert [names for names, _ in runs] == [[run.name] for run in battery.runs]
    assert {(c.temperature, c.n, c.seed, c.fewshot_seed, c.api) for _, c in runs} == {(0.0, 1, 42, 42, "completions")}
    assert [c.max_tokens for _, c in runs] == [256, 256, 256, 256, 256, 1280, 256, 1024]
    assert deviations(plain, battery) == {}
    # --max-tokens given: every run uses it, so ifeval's and mbpp's runs have one setting and become one run.
    given = EvalConfig(model="m", base_url="http://127.0.0.1:9/v1", max_tokens=96, seed=7,
                       engine_args={"tensor_parallel_size": 2})
    runs = merged_runs(battery_configs(given, battery))
    assert (["ifeval 0-shot", "mbpp 3-shot"], ["ifeval", "mbpp"]) in [(n, list(c.tasks)) for n, c in runs]
    assert {c.max_tokens for _, c in runs} == {96} and {c.seed for _, c in runs} == {7}
    assert deviations(given, battery) == {"seed": 7, "max_tokens": 96, "tensor_parallel_size": 2}
