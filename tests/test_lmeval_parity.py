"""lm-eval's battery: the full MATH test set as lm-eval's minerva_math (exact_match, math_verify, a
per-subject table) and lm-eval's rows only where lm-eval defines the task (docs/lm-eval.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from reasoneval.prompts import FEWSHOT_STYLES
from reasoneval.results.schema import load_run
from reasoneval.tasks import TASKS
from reasoneval.tasks.loading import convert_hub_rows
from tests.run.test_pipeline import base_args, cli

HUB = Path(__file__).parent / "fixtures" / "hub"
FINAL = "Final Answer: The final answer is ${}$. I hope it is correct."
# A distinctive piece of each fixture problem -> the model's answer (Minerva's format unless noted).
RESPONSES = {
    "Solve $2x+3=11$": "2x = 8, so x = 4.\n" + FINAL.format("4"),
    "slope of the line": FINAL.format("0.5"),  # right, not the same string: exact_match by lm-eval's sympy step
    "3 different books": FINAL.format("6"),
    "two heads": "The probability is $\\boxed{\\frac{1}{4}}$.",  # no Final Answer line: exact_match no
    "side length $5$": FINAL.format("25"),
    "interior angles": FINAL.format("180"),  # the reference's ^\circ is normalised away
    "roots of $x^2-5x+6=0$": FINAL.format("6"),  # wrong
    "minimum value": "(x-2)^2+3.\n" + FINAL.format("3"),
    "divided by $5$": "Final Answer: The final answer is $2$",  # cut before ". I hope": no match
    "greatest common divisor": FINAL.format("6"),  # reference written "\boxed 6"
    "$7\\times 8$": FINAL.format("56"),
    "$0.75$ as a fraction": FINAL.format("\\frac34"),  # Minerva's normalisation rewrites \frac34
    "Compute $\\cos 0$": FINAL.format("1"),
    "Compute $\\sin": FINAL.format("\\frac{1}{2}"),
}
# exact_match by lm-eval subtask (two problems each), worked out by hand from the rules above.
EXACT_MATCH = {"minerva_math_algebra": 1.0, "minerva_math_counting_and_prob": 0.5, "minerva_math_geometry": 1.0,
               "minerva_math_intermediate_algebra": 0.5, "minerva_math_num_theory": 0.5,
               "minerva_math_prealgebra": 1.0, "minerva_math_precalc": 1.0}


def _math_data(tmp_path: Path) -> None:
    """hendrycks_math.jsonl as the Hub path caches it: the fixture's rows (the Hub's own columns) mapped."""
    rows = [json.loads(line) for line in (HUB / "hendrycks_math.jsonl").read_text().splitlines()]
    (tmp_path / "data").mkdir()
    with open(tmp_path / "data" / "hendrycks_math.jsonl", "w") as f:
        for r in convert_hub_rows(TASKS.get("hendrycks_math"), rows):
            f.write(json.dumps(r) + "\n")


def _table_rows(stdout: str) -> dict[str, list[str]]:
    return {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in stdout.splitlines() if line.count("│") > 3}


def test_hendrycks_math_minerva_four_shot_reports_lm_evals_columns_by_subject(make_openai_server: Any,
                                                                              tmp_path: Path) -> None:
    server = make_openai_server(script=RESPONSES)
    _math_data(tmp_path)
    r = cli(*base_args(server, tmp_path, "--api", "completions", "--tasks", "hendrycks_math", "--num-fewshot", "4",
                       "--greedy"))
    assert r.returncode == 0, r.stderr
    rows = _table_rows(r.stdout)
    assert rows["hendrycks_math [exact_match]"][:2] == ["14", "78.6 ± 11.4"]
    assert "hendrycks_math [math_verify]" in rows
    # The per-subject table lm-eval users quote: the group, then one row per subject config.
    assert "as lm-eval's minerva_math (by subject)" in r.stdout
    assert rows["minerva_math"][:2] == ["14", "78.6 ± 11.4"]
    for subtask, em in EXACT_MATCH.items():
        assert rows[subtask][0] == "2" and rows[subtask][1].startswith(f"{100 * em:.1f}"), subtask

    # What was sent: lm-eval's minerva_math prompt (Minerva's 4 exemplars) and stop sequence.
    sent = [q for q in server.requests() if q.path == "/v1/completions"]
    assert len(sent) == 14
    assert all(q.body["stop"] == ["Problem:"] and q.body["temperature"] == 0 for q in sent)
    minerva = FEWSHOT_STYLES["minerva"]
    assert all(q.body["prompt"].startswith("Problem:\n" + minerva.exemplars[0].question + "\n\nSolution: ")
               and q.body["prompt"].count("Problem:\n") == 5 and q.body["prompt"].endswith("\n\nSolution:")
               for q in sent)

    # math_verify is lm-eval's exact call, verify(gold=parse(solution), target=parse(response)), per problem.
    from math_verify import parse, verify

    run = load_run(next((tmp_path / "results" / "test-model").iterdir()))
    solutions = {p["id"]: p["solution"] for p in map(json.loads, (tmp_path / "data" / "hendrycks_math.jsonl")
                                                       .read_text().splitlines())}
    table = pq.read_table(run.run_dir / "results.parquet").to_pylist()
    assert len(table) == 14
    for row in table:
        want = bool(verify(gold=parse(solutions[row["id"]]), target=parse(row["responses"][0])))
        assert dict(row["extra_correct"])["math_verify"] == [want], row["id"]
    by_id = {row["id"]: dict(row["extra_correct"]) for row in table}
    assert by_id["hendrycks_math-1"] == {"exact_match": [True], "math_verify": [True]}  # 0.5 vs \frac{1}{2}: sympy
    assert by_id["hendrycks_math-6"] == {"exact_match": [False], "math_verify": [False]}  # wrong
    summary = json.loads((run.run_dir / "summary.json").read_text())["tasks"]["hendrycks_math"]
    assert summary["breakdown"]["subject [exact_match]"]["Geometry"]["mean"] == 1.0
    assert set(summary["extra"]) == {"exact_match", "math_verify"}


def test_math_full_is_an_alias_and_tasks_say_which_minerva_is_which(tmp_path: Path) -> None:
    _math_data(tmp_path)
    r = cli("tasks", "--data-dir", str(tmp_path / "data"))
    assert r.returncode == 0, r.stderr
    assert "math_full" in r.stdout and "hendrycks_math" in r.stdout
    assert "lm-eval's name for minerva_math: none" in r.stdout and "not lm-eval's minerva_math" in r.stdout
    assert "lm-eval's name for hendrycks_math: minerva_math (" in r.stdout


QUICKSTART = {"What is": "Let me add. The answer is \\boxed{7}."}


def _arith_run(server: Any, tmp_path: Path, *extra: str) -> dict[str, list[str]]:
    r = cli(*base_args(server, tmp_path, "--tasks", "arith", "--limit", "4", "--n", "1", *extra))
    assert r.returncode == 0, r.stderr
    return _table_rows(r.stdout)


def test_lmeval_rows_only_where_lmeval_defines_the_task_or_on_request(make_openai_server: Any,
                                                                      tmp_path: Path) -> None:
    server = make_openai_server(default="The answer is \\boxed{7}.")
    # The README's quick start (arith, chat, the zero-shot boxed prompt): no lm-eval rows.
    rows = _arith_run(server, tmp_path)
    assert "arith" in rows and not any("[" in name for name in rows)
    # Asked for: the rows are there.
    rows = _arith_run(server, tmp_path, "--lmeval-metrics")
    assert "arith [strict-match]" in rows and "arith [flexible-extract]" in rows


def test_lmeval_columns_follow_the_task_and_prompt_style() -> None:
    from reasoneval.prompts import PromptConfig
    from reasoneval.run.generation import task_scoring
    from reasoneval.run.plan import LoadedTask

    gsm, math, aime = (LoadedTask(TASKS.get(t), []) for t in ("gsm8k", "hendrycks_math", "aime24"))
    both = {"strict-match", "flexible-extract"}
    assert set(task_scoring(gsm, PromptConfig(num_fewshot=4)).extra) == both  # lm-eval's gsm8k
    assert set(task_scoring(gsm, PromptConfig(style_override="gsm8k_cot")).extra) == both  # its gsm8k_cot
    assert task_scoring(gsm, PromptConfig()).extra == {}  # zero-shot boxed: not an lm-eval setup
    assert set(task_scoring(gsm, PromptConfig(), lmeval_metrics=True).extra) == both
    assert set(task_scoring(math, PromptConfig(num_fewshot=4)).extra) == {"exact_match", "math_verify"}
    assert task_scoring(math, PromptConfig(style_override="qwen")).extra == {}
    assert task_scoring(aime, PromptConfig(num_fewshot=4)).extra == {}
    assert set(task_scoring(aime, PromptConfig(num_fewshot=4), lmeval_metrics=True).extra) == {"exact_match"}
