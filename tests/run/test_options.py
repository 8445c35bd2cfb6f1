"""The run options' schema (reasoneval.run.options): one declaration per option gives its flag, its default,
its help, its place in jobs files; adding an option is one edit."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from reasoneval.errors import UserError
from reasoneval.records import SamplingParams
from reasoneval.run.flags import cli_of, field_default, flag_of, rename_old_keys, run_option
from reasoneval.run.options import EvalConfig, add_run_options, config_from_args, default_engine


def _run_parser() -> argparse.ArgumentParser:
    from reasoneval.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices["run"]
    return parser


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def test_every_field_has_a_flag_a_help_and_the_parsers_default() -> None:
    parser = _run_parser()
    flags = _flags(parser)
    parsed = config_from_args(parser.parse_args([]))
    for f in dataclasses.fields(EvalConfig):
        opt = cli_of(f)
        assert opt is not None, f"{f.name} is not declared with run_option(...)"
        assert flag_of(f) in flags, f"{f.name}: {flag_of(f)} is not a flag of `reasoneval run`"
        assert opt.help_text().strip(), f"{f.name} has no help"
        assert getattr(parsed, f.name) == field_default(f), f"{f.name}: the flag's default differs from the field's"
    assert parsed == EvalConfig()


def test_the_sampling_defaults_are_stated_once() -> None:
    assert EvalConfig().sampling() == SamplingParams()
    parsed = config_from_args(_run_parser().parse_args([]))
    assert parsed.sampling() == SamplingParams()


@dataclasses.dataclass(frozen=True)
class WithANewOption(EvalConfig):
    """What a contributor's one edit looks like: a field declared with run_option, nothing else."""

    beam_width: int = run_option(3, group="sampling", parse=int, help="beams per request (default 3)")


def test_a_new_field_is_a_flag_that_reaches_the_config_with_no_other_edit() -> None:
    parser = argparse.ArgumentParser(prog="reasoneval run")
    add_run_options(parser, WithANewOption)
    assert "--beam-width" in parser.format_help() and "beams per request" in parser.format_help()
    cfg = config_from_args(parser.parse_args(["--beam-width", "5", "--tasks", "arith", "--n", "2"]), WithANewOption)
    assert isinstance(cfg, WithANewOption) and (cfg.beam_width, list(cfg.tasks), cfg.n) == (5, ["arith"], 2)
    assert config_from_args(parser.parse_args([]), WithANewOption).beam_width == 3
    # A jobs file (or a Python caller) may name it too; a misspelling names the known options.
    assert rename_old_keys(WithANewOption, {"beam-width": 7}, "jobs.yaml") == {"beam_width": 7}
    with pytest.raises(UserError, match=r"jobs.yaml: unknown option\(s\) beam_widht; known: .*beam_width"):
        rename_old_keys(WithANewOption, {"beam_widht": 7}, "jobs.yaml")


@pytest.mark.parametrize("old, new, field", [
    ("--question-key", "--problem-field", "problem_field"), ("--problem-key", "--problem-field", "problem_field"),
    ("--answer-key", "--answer-field", "answer_field"), ("--id-key", "--id-field", "id_field")])
def test_old_spellings_still_work_and_say_the_new_one(old: str, new: str, field: str,
                                                      caplog: pytest.LogCaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # `problem_key` is the problem's hash (samples.jsonl); the --data column options are the *_field ones.
    from reasoneval.run import flags

    monkeypatch.setattr(flags, "_WARNED_OLD_KEYS", set())
    def messages() -> list[str]:  # a record reaches caplog twice where the logger also propagates: once each
        return list({id(r): r.getMessage() for r in caplog.records}.values())

    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    try:
        cfg = config_from_args(_run_parser().parse_args(["--data", "d.jsonl", old, "q"]))
        assert messages() == [f"{old} is an old spelling of {new}; it still works, but use {new}"]
        caplog.clear()
        old_key = old.lstrip("-").replace("-", "_")
        assert rename_old_keys(EvalConfig, {old_key: "q"}, "jobs.yaml") == {field: "q"}
        assert messages() == [f"jobs.yaml: {old_key} is an old name of {field}; it still works, but use {field}"]
    finally:
        logger.removeHandler(caplog.handler)
    assert getattr(cfg, field) == "q"
    assert getattr(config_from_args(_run_parser().parse_args(["--data", "d.jsonl", new, "q"])), field) == "q"
    assert not hasattr(cfg, "problem_key") and not hasattr(cfg, "answer_key")


def test_the_default_engine_rule_is_one_function(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import make_job

    assert (default_engine(), default_engine("m"), default_engine(None, "http://x/v1")) == ("local", "openai", "openai")
    assert EvalConfig(model="m").engine_name() == "openai" and EvalConfig().engine_name() == "local"
    # A jobs file takes the same rule: a served model's engine options are the openai engine's, not local's.
    with pytest.raises(UserError, match="unknown option.*replicas"):
        make_job({"model": "m", "replicas": 2}, {}, tmp_path, where="jobs.yaml: models[0]")
    job = make_job({"model": "m", "engine": "local", "replicas": 2}, {}, tmp_path, where="jobs.yaml: models[0]")
    assert job.config.engine_args == {"replicas": 2}


def test_jobs_file_values_are_checked_like_flags(tmp_path: Path) -> None:
    from reasoneval.fleet.jobs import make_job

    for entry, error in [({"model": "m", "n": "16"}, "n must be an integer, got '16'"),
                         ({"model": "m", "temperature": "hot"}, "temperature must be a number"),
                         ({"model": "m", "api": "grpc"}, "api must be one of chat, completions"),
                         ({"model": "m", "greedy": "yes"}, "greedy must be true or false")]:
        with pytest.raises(UserError, match=error):
            make_job(entry, {}, tmp_path, where="jobs.yaml: models[0]")


# ---- run --data FILE --scorer NAME ------------------------------------------------------------------

def _user_data(tmp_path: Path) -> Path:
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps({"q": "What is 1+1?", "a": "2"}) + "\n" + json.dumps({"q": "What is 2+2?", "a": "4"}) + "\n")
    return f


def _run(server: Any, tmp_path: Path, data: Path, *extra: str,
         capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], dict[str, list[bool]]]:
    """`reasoneval run --data` with `extra` flags: the summary, and each problem's verdicts (results.parquet)."""
    import pyarrow.parquet as pq

    from reasoneval.cli.main import main

    assert main(["run", "--base-url", server.base_url, "--model", "test-model", "--data", str(data), "--problem-field",
                 "q", "--answer-field", "a", "--n", "1", "--output-dir", str(tmp_path / "r"), "--json",
                 "--grading-workers", "1", "--no-progress", *extra]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    (parquet,) = (tmp_path / "r").glob(f"*/{summary['run_id']}/results.parquet")
    return summary, {r["id"]: r["correct"] for r in pq.read_table(parquet).to_pylist()}


def test_run_data_with_a_scorer_gives_that_scorers_verdicts(make_openai_server: Any, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # lm-eval's strict-match takes the answer after "#### " only; the math scorer also reads \boxed{}.
    server = make_openai_server(script={"1+1": "1+1 makes two.\n#### 2", "2+2": "So it is \\boxed{4}."})
    data = _user_data(tmp_path)
    strict, strict_verdicts = _run(server, tmp_path, data, "--scorer", "strict_match", capsys=capsys)
    assert list(strict["scorers"]) == ["strict_match"]
    assert strict_verdicts == {"mine-0": [True], "mine-1": [False]}
    math, math_verdicts = _run(server, tmp_path, data, capsys=capsys)  # the default scorer, on the same samples
    assert list(math["scorers"]) == ["math"] and math["run_id"] == strict["run_id"]
    assert math_verdicts == {"mine-0": [True], "mine-1": [True]}
    assert server.count_requests() == 2  # the second run scored the samples the first generated


def test_scorer_needs_user_data_and_a_known_name() -> None:
    with pytest.raises(UserError, match="--scorer says how a --data file is scored"):
        EvalConfig(tasks=["aime24"], scorer="choice").validate()
    with pytest.raises(UserError, match="unknown scorer 'nope'"):
        EvalConfig(data="x.jsonl", scorer="nope").validate()


def test_evaluate_takes_the_old_name_and_names_the_known_ones_on_a_typo(tmp_path: Path) -> None:
    import reasoneval

    data = _user_data(tmp_path)
    common: dict[str, Any] = dict(data=str(data), answer_field="a", engine="echo", n=1, output_dir=str(tmp_path / "r"),
                                  progress=False, print_table=False, grading_workers=1)
    for old in ("question_key", "problem_key"):  # the two old names of problem_field
        result = reasoneval.evaluate(**{old: "q"}, **common)
        assert result.tasks["mine"].num_problems == 2
    assert reasoneval.evaluate(problem_field="q", **common).run_id == result.run_id
    with pytest.raises(UserError, match=r"evaluate\(\): unknown option\(s\) problem_fiel; known: .*problem_field"):
        reasoneval.evaluate(problem_fiel="q", **common)
