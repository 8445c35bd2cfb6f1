"""Options that would do nothing, or contradict another: a one-line error before any request (or a warning where
the rest of the command stands as asked). Every `run` option is listed here, as one that always applies or with
the combination that is checked, so a new option must be placed in one of the two."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any, Callable

import pytest

from reasoneval.records import SamplingParams
from reasoneval.run.options import EvalConfig
from tests.fixtures.openai_server import OpenAIServer
from tests.reliability._helpers import arith_reply, assert_clean_error, cli_inprocess, run_args, write_data

# Options that apply whatever else is given (each engine checks its own capabilities and --engine-arg keys).
ALWAYS = {"tasks", "limit", "data", "model", "engine", "api", "engine_args", "seed", "system_prompt",
          "prompt_template", "prompt_style", "num_fewshot", "greedy", "target_se", "concurrency", "schedule", "timeout",
          "max_retries", "retry_backoff", "rate_limit_window", "output_dir", "grading_workers", "grading_timeout",
          "progress", "print_table", "log_to"}
# The sampling options, read from the schema (SamplingParams' fields, records.py): each is sent by every engine that
# takes it and refused at start by one that does not (engines' Capabilities; tests/engines/test_every_option.py), so
# a new one is placed with no edit here; those a combination makes idle (--greedy's) are in ERRORS too.
SAMPLING = {f.name for f in dataclasses.fields(SamplingParams)}

# field -> (flags added to a run of aime24, the error it gets)
ERRORS: dict[str, tuple[list[str], str]] = {
    "task_arg": (["--task-arg", "release=v5"], r"--task-arg 'release=v5': none of this run's tasks \(aime24\) takes options"),
    "n": (["--n", "8", "--target-se", "1"], r"--n sets how many samples .* --target-se .* give one of them"),
    "max_n": (["--max-n", "32"], r"--max-n only apply with --target-se"),
    "budget_samples": (["--budget-samples", "100"], r"--budget-samples only apply with --target-se"),
    "temperature": (["--greedy", "--temperature", "0.7"], r"--greedy sets --temperature 0 --top-p 1 --n 1, so "
                                                          r"--temperature would be ignored"),
    "top_p": (["--greedy", "--top-p", "0.9"], r"so --top-p would be ignored"),
    "problem_field": (["--problem-field", "q"], r"--problem-field say which fields of a --data file to read"),
    "answer_field": (["--answer-field", "a"], r"--answer-field say which fields of a --data file"),
    "id_field": (["--id-field", "i"], r"--id-field say which fields"),
    "split": (["--split", "test"], r"--split say which fields"),
    "scorer": (["--scorer", "choice"], r"--scorer says how a --data file is scored"),
    "base_url": (["--engine", "echo"], r"--base-url are for a server the openai engine talks to; --engine echo does "
                                       r"not use them"),
    "api_key_env": (["--engine", "echo", "--api-key-env", "MY_KEY"], r"--base-url, --api-key-env are for a server"),
    "log_args": (["--tensorboard-dir", "tb"], r"--tensorboard-dir is a setting of --log-to tensorboard, which is not "
                                              r"asked for"),
    "battery": (["--battery", "lmeval-base"], r"--battery lmeval-base sets --tasks itself \(each row is lm-eval's "
                                              r"setting\)"),
}
ERRORS["judge_model"] = (["--judge-model", "judge"], r"--judge-model and --judge-base-url go together")
ERRORS["judge_base_url"] = (["--judge-base-url", "http://127.0.0.1:9/v1"], r"--judge-model and --judge-base-url go")
ERRORS_TARGET_SE = [
    (["--target-se", "inf"], r"--target-se is the re-run SE to reach, in points of accuracy, above 0 and below 25"),
    (["--target-se", "1000"], r"below 25 .* \(got 1000.0\)"),
    (["--target-se", "nan"], r"below 25"),
    (["--target-se", "1", "--log-to", "mlflow", "--tensorboard-dir", "tb"], r"--tensorboard-dir is a setting of "
                                                                            r"--log-to tensorboard"),
]
# field -> (flags, the warning logged; the run goes on)
WARNINGS: dict[str, tuple[list[str], str]] = {
    "style_stop": (["--tasks", "aime24", "--no-style-stop"], "--no-style-stop has no effect without a few-shot prompt"),
    "lmeval_metrics": (["--data", "MINE", "--lmeval-metrics"],
                       "--lmeval-metrics has no effect here: none of mine has lm-eval's columns"),
    "data_dir": (["--data", "MINE"], "--data-dir is where catalog tasks' files are read from"),
    "fewshot_seed": (["--tasks", "aime24", "--fewshot-seed", "42"], "--fewshot-seed has no effect without a few-shot prompt"),
}


def test_every_run_option_is_placed() -> None:
    fields = {f.name for f in dataclasses.fields(EvalConfig)}
    placed = ALWAYS | SAMPLING | set(ERRORS) | set(WARNINGS)
    assert placed == fields, (fields - placed, placed - fields)


@pytest.fixture
def server(make_openai_server: Callable[..., OpenAIServer], tmp_path: Path) -> OpenAIServer:
    write_data(tmp_path / "data", {"aime24": 4})
    return make_openai_server(responder=arith_reply)


@pytest.mark.parametrize("extra,pattern", [*ERRORS.values(), *ERRORS_TARGET_SE], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_an_option_that_would_do_nothing_is_a_one_line_error(server: OpenAIServer, tmp_path: Path, extra: list[str],
                                                             pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--n", "1", *extra)
                      if "--n" not in extra and "--greedy" not in extra and "--target-se" not in extra
                      else run_args(server.base_url, tmp_path, "--tasks", "aime24", *extra), capsys)
    assert_clean_error(r, 2, pattern)
    assert server.count_requests() == 0 and not (tmp_path / "results").exists()


@pytest.mark.parametrize("field", list(WARNINGS))
def test_an_option_without_effect_here_is_a_warning_and_the_run_goes_on(
        server: OpenAIServer, tmp_path: Path, field: str, capsys: pytest.CaptureFixture[str]) -> None:
    extra, warning = WARNINGS[field]
    (tmp_path / "mine.jsonl").write_text(json.dumps({"problem": "What is $3 + 1$?", "answer": "4"}) + "\n")
    args = run_args(server.base_url, tmp_path, "--n", "1", *[str(tmp_path / "mine.jsonl") if a == "MINE" else a for a in extra])
    r = cli_inprocess(args, capsys)
    assert r.returncode == 0, r.stderr
    assert warning in r.stderr and r.stderr.count(warning) == 1


def test_a_target_met_by_the_pilot_is_a_warning(server: OpenAIServer, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_inprocess(run_args(server.base_url, tmp_path, "--tasks", "aime24", "--target-se", "20"), capsys)
    assert r.returncode == 0, r.stderr
    assert ("aime24: --target-se 20 is met by the pilot of 4 samples per problem whatever the answers "
            "(4 problems: re-run SE at most 12.50 points then)") in r.stderr
    assert "0 samples wanted" not in r.stderr and "then one plan per task for a re-run SE of 20 points" in r.stderr


def test_jobs_files_are_checked_the_same_way_and_a_job_may_override_the_defaults_sampling(tmp_path: Path) -> None:
    from reasoneval.errors import UserError
    from reasoneval.fleet.jobs import load_jobs

    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("defaults: {tasks: [arith], n: 8, engine: echo}\nmodels:\n  - m1\n  - {model: m2, target_se: 1.0}\n")
    first, second = load_jobs(jobs)  # the job's own target_se replaces the defaults' n: no contradiction
    assert first.config.n == 8 and second.config.target_se == 1.0
    jobs.write_text("defaults: {tasks: [arith], engine: echo}\nmodels:\n  - {model: m1, n: 8, target_se: 1.0}\n")
    with pytest.raises(UserError, match=r"models\[0\]: --n sets how many samples"):
        load_jobs(jobs)
    jobs.write_text("defaults: {tasks: [arith], engine: echo, max_n: 16}\nmodels:\n  - m1\n")
    with pytest.raises(UserError, match=r"--max-n only apply with --target-se"):
        load_jobs(jobs)


def test_evaluate_checks_the_options_it_is_given(tmp_path: Path) -> None:
    import reasoneval
    from reasoneval.errors import UserError

    with pytest.raises(UserError, match="--max-n only apply with --target-se"):
        reasoneval.evaluate(tasks=["arith"], engine="echo", max_n=8, output_dir=str(tmp_path))
    assert not tmp_path.joinpath("echo").exists()


@pytest.mark.parametrize("argv,pattern", [
    (["report", "RUN", "--step", "100"], r"--step is the training step results are logged at with --log-to"),
    (["report", "RUN", "--tensorboard-dir", "tb"], r"--tensorboard-dir are settings of --log-to"),
    (["runs", "RESULTS", "--metric", "pass@1"], r"--metric picks the columns of --by-checkpoint's table"),
    (["runs", "RESULTS", "--csv", "--markdown"], r"--csv and --markdown are alternatives"),
    (["compare", "RUN", "RUN", "--json", "--markdown"], r"--json and --markdown are alternatives"),
    (["analyze", "RUN", "--json", "--markdown"], r"--json and --markdown are alternatives"),
    (["analyze", "RUN", "--target-se", "1"], r"analyze --target-se is a fraction of 1 \(0\.01 = 1 point; `run "
                                             r"--target-se` takes points\), above 0 and below 0\.5 .*got 1; for 1 "
                                             r"points give 0\.01"),
    (["analyze", "RUN", "--target-se", "inf"], r"analyze --target-se is a fraction of 1"),
    (["export", "RUN", "-o", "x.jsonl", "--format", "parquet"], r"-o x\.jsonl names a \.jsonl file but --format is "
                                                                  r"parquet"),
    (["export", "RUN", "--max-per-problem", "0"], r"--max-per-problem must be at least 1"),
    (["export", "RUN", "--min-response-tokens", "10", "--max-response-tokens", "5"], r"no response could pass"),
    (["score", "RUN", "--task", "aime24"], r"--task describe a file of generations; .* is a run directory"),
    (["score", "RUN", "--scorer", "choice"], r"--scorer describe a file of generations; .* to grade its responses "
                                             r"with another scorer, write them as a file of generations"),
    (["analyze", "RUN", "--draws", "0"], r"--draws must be at least 2 \(got 0\)"),
    (["score", "FILE", "--task", "humaneval", "--answer-field", "x"], r"--answer-field name a file's own problems and "
                                                                      r"answers; rows of humaneval are joined"),
    (["score", "FILE", "--task", "humanevl"], r"--task 'humanevl' is no task; did you mean humaneval\?"),
    (["run", "--tasks", "aime42", "--engine", "echo"], r"unknown task 'aime42'; did you mean aime26\?"),
])
def test_other_commands_refuse_options_that_would_do_nothing(tiny_run: Path, tmp_path: Path, argv: list[str],
                                                             pattern: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gens.jsonl").write_text(json.dumps({"task_id": "HumanEval/0", "completion": "pass"}) + "\n")
    subst = {"RUN": str(tiny_run), "RESULTS": str(tiny_run.parents[1]), "FILE": str(tmp_path / "gens.jsonl")}
    r = cli_inprocess([subst.get(a, a) for a in argv], capsys)
    assert_clean_error(r, 2, pattern)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import reasoneval

    out = tmp_path_factory.mktemp("tiny")
    result = reasoneval.evaluate(tasks=["arith"], limit=2, n=2, engine="echo", output_dir=str(out), print_table=False,
                                 progress=False, grading_workers=1)
    logging.getLogger("reasoneval").handlers[:] = [h for h in logging.getLogger("reasoneval").handlers
                                                   if not getattr(h, "_reasoneval", False)]
    return Path(result.run_dir)


def test_data_pull_offline_fails_fast_naming_the_ways_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: Any) -> None:
    import socket
    import time

    with socket.socket() as s:  # a port nothing listens on: a Hub that cannot be reached
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("REASONEVAL_CACHE_DIR", str(tmp_path / "cache"))
    for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "REASONEVAL_OFFLINE"):
        monkeypatch.delenv(v, raising=False)
    t0 = time.monotonic()
    r = cli_inprocess(["data", "pull", "hendrycks_math"], capsys)
    assert time.monotonic() - t0 < 10
    last = assert_clean_error(r, 2, r"cannot reach the Hugging Face Hub at http://127\.0\.0\.1:\d+")
    assert "--data-dir" in last and "HF_HUB_OFFLINE=1" in last and "REASONEVAL_DATA_DIR" in last
    assert "task 'hendrycks_math' has no local data" in last  # the task named (a battery loads many; issue 41.8)
