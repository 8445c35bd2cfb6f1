"""Few-shot prompt styles: prompts byte for byte against hand-written files, chat form, style choice, stops."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.errors import UserError
from reasoneval.prompts import FEWSHOT_STYLES, PromptConfig, build_messages, build_prompt
from reasoneval.records import Problem, SamplingParams
from reasoneval.run.plan import LoadedTask, plan
from reasoneval.tasks import TASKS, TaskSpec

EXPECTED = Path(__file__).parent / "fewshot_expected"
GSM = Problem("gsm8k", "gsm8k-0", "Janet's ducks lay 16 eggs per day. How many does she sell?", "18", "k-gsm")
MATH = Problem("math500", "math500-0", "What is $\\frac{1}{2} + \\frac{1}{3}$?", "\\frac{5}{6}", "k-math")


@pytest.mark.parametrize("style, k, problem, expected", [
    ("gsm8k_cot", 8, GSM, "gsm8k_cot_8shot.txt"),
    ("gsm8k_wei", 2, GSM, "gsm8k_wei_2shot.txt"),
    ("minerva", 4, MATH, "minerva_4shot.txt"),
    ("qwen", 2, MATH, "qwen_2shot.txt"),
])
def test_completion_prompt_is_byte_for_byte_the_hand_written_one(style: str, k: int, problem: Problem,
                                                                 expected: str) -> None:
    assert build_prompt(problem, PromptConfig(style=style, num_fewshot=k)) == (EXPECTED / expected).read_text()


def test_default_shots_and_zero_shot() -> None:
    assert build_prompt(GSM, PromptConfig(style="gsm8k_cot")) == (EXPECTED / "gsm8k_cot_8shot.txt").read_text()
    assert build_prompt(GSM, PromptConfig(style="gsm8k", num_fewshot=0)) == f"Question: {GSM.problem}\nAnswer:"
    assert FEWSHOT_STYLES["minerva"].default_shots == 4 and FEWSHOT_STYLES["gsm8k"].default_shots == 5
    assert FEWSHOT_STYLES["gsm8k_wei"].default_shots == 5


def test_chat_form_is_one_user_and_assistant_turn_per_exemplar() -> None:
    msgs = build_messages(GSM, PromptConfig(style="gsm8k_cot", num_fewshot=2, system_prompt="Be brief."))
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[1]["content"] == ("Q: There are 15 trees in the grove. Grove workers will plant trees in the grove "
                                  "today. After they are done, there will be 21 trees. How many trees did the grove "
                                  "workers plant today?\nA:")
    assert msgs[4]["content"] == "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."
    assert msgs[5]["content"] == f"Q: {GSM.problem}\nA:"


def test_exemplar_files_cite_their_sources() -> None:
    for name, style in FEWSHOT_STYLES.items():
        assert style.source and all(s.strip() for s in style.source), name
    assert any("2201.11903" in s for s in FEWSHOT_STYLES["gsm8k_cot"].source)
    assert any("2206.14858" in s for s in FEWSHOT_STYLES["minerva"].source)
    for e in FEWSHOT_STYLES["minerva"].exemplars:
        assert e.answer.endswith(". I hope it is correct.") and "Final Answer: The final answer is" in e.answer
    for e in FEWSHOT_STYLES["gsm8k_wei"].exemplars:
        assert "\n#### " in e.answer
    for e in FEWSHOT_STYLES["gsm8k_cot"].exemplars:
        assert e.answer.rsplit(". ", 1)[-1].startswith("The answer is ")
    for e in FEWSHOT_STYLES["qwen"].exemplars:
        assert e.answer.rstrip(".$").endswith("}") and "\\boxed{" in e.answer


def test_style_choice_per_task() -> None:
    cfg = PromptConfig(num_fewshot=4)
    assert cfg.for_task("gsm8k", "boxed", TASKS.get("gsm8k").fewshot).style == "gsm8k"
    assert cfg.for_task("arith", "boxed", TASKS.get("arith").fewshot).style == "gsm8k_wei"  # no train split
    assert cfg.for_task("math500", "boxed", TASKS.get("math500").fewshot).style == "minerva"
    assert PromptConfig().for_task("gsm8k", "boxed", "gsm8k").style == "boxed"  # no few-shot asked
    assert PromptConfig(style_override="qwen").for_task("gsm8k", "boxed", "gsm8k").style == "qwen"
    with pytest.raises(UserError, match="gpqa_diamond has no few-shot prompt style"):
        cfg.for_task("gpqa_diamond", "choice", TASKS.get("gpqa_diamond").fewshot)


@pytest.mark.parametrize("task", ["humaneval", "mbpp", "ifeval"])
def test_a_task_that_is_not_math_gets_no_math_exemplars(task: str) -> None:
    """--num-fewshot without --prompt-style takes the task's own few-shot style; a task without one (the code and
    IFEval tasks, and a plugin's TaskSpec that names none: the default) is told so, never given Minerva's math
    exemplars."""
    spec = TASKS.get(task)
    assert spec.fewshot is None
    with pytest.raises(UserError, match=f"task {task} has no few-shot prompt style: pass --prompt-style NAME"):
        PromptConfig(num_fewshot=4).for_task(task, spec.prompt, spec.fewshot)
    plugin_like = TaskSpec("riddles", "a plugin's task that names no few-shot style")
    assert plugin_like.fewshot is None
    # The shipped math benchmarks (from the Hub) name Minerva's or gsm8k's exemplars; a task made in code may name
    # none (docs/architecture.md's example task: the recipe check adds it as a built-in).
    math_tasks = [n for n in TASKS.names() if TASKS.origin(n) is None and TASKS.get(n).scoring.scorer == "math"
                  and TASKS.get(n).hub is not None]
    assert math_tasks and all(TASKS.get(n).fewshot in ("minerva", "gsm8k", "gsm8k_wei") for n in math_tasks)
    with pytest.raises(UserError, match="unknown --prompt-style 'nope'"):
        PromptConfig(style_override="nope")
    with pytest.raises(UserError, match="--num-fewshot 9 is out of range"):
        build_prompt(GSM, PromptConfig(style="gsm8k_cot", num_fewshot=9))
    with pytest.raises(UserError, match="--prompt-template replaces the prompt style"):
        PromptConfig(template="{problem}", num_fewshot=2)


def test_plan_sends_the_style_stop_sequences_after_the_users() -> None:
    task = LoadedTask(TASKS.get("gsm8k"), [GSM])
    sampling = SamplingParams(stop=("\n\n\n",))
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions",
                  prompt=PromptConfig(num_fewshot=2, style_override="gsm8k_wei")).requests
    assert req.params.stop == ("\n\n\n", "Question:", "</s>", "<|im_end|>")
    assert req.prompt == (EXPECTED / "gsm8k_wei_2shot.txt").read_text()
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions",
                  prompt=PromptConfig(num_fewshot=2, style_override="gsm8k_wei", style_stop=False)).requests
    assert req.params.stop == ("\n\n\n",)
    (req,) = plan([task], n=1, seed=0, sampling=sampling, api="completions", prompt=PromptConfig()).requests
    assert req.params.stop == ("\n\n\n",) and req.prompt.startswith("Problem: ")


def _gsm_data(d: Path, rows: list[tuple[str, str]]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "gsm8k.jsonl", "w") as f:
        for i, (q, a) in enumerate(rows):
            f.write(json.dumps({"id": f"gsm8k-{i}", "problem": q, "answer": a}) + "\n")


def test_stop_sequence_ends_generation_at_the_next_exemplar_on_the_server(make_openai_server: Any,
                                                                         tmp_path: Path) -> None:
    # A base model goes on to write the next exemplar; the style's stop ("Question:") cuts it there.
    rambling = ("She sells 16 - 3 - 4 = 9 eggs.\n#### 9\n\nQuestion: A robe takes 2 bolts of blue fiber. "
                "How many bolts in total?\nAnswer: 2 + 1 = 3.\n#### 3")
    server = make_openai_server(script={"Janet's ducks": rambling})
    _gsm_data(tmp_path / "data", [("Janet's ducks lay 16 eggs per day. How many does she sell?", "9")])
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="completions", tasks=["gsm8k"],
                                 num_fewshot=3, prompt_style="gsm8k_wei", greedy=True, data_dir=str(tmp_path / "data"),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False)
    (rec,) = [r for r in server.requests() if r.path == "/v1/completions"]
    assert rec.body["stop"] == ["Question:", "</s>", "<|im_end|>"]
    assert rec.body["temperature"] == 0 and rec.body["prompt"].count("Question: ") == 4
    samples = [json.loads(line) for line in open(result.run_dir / "samples.jsonl")]
    assert samples[0]["text"] == "She sells 16 - 3 - 4 = 9 eggs.\n#### 9\n\n"
    m = result.tasks["gsm8k"]
    assert m.mean == 1.0 and m.extra["strict-match"].mean == 1.0 and m.extra["flexible-extract"].mean == 1.0
    # Without the style's stop the next exemplar's number is the last one: flexible-extract reads 3.
    again = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="completions", tasks=["gsm8k"],
                                num_fewshot=3, prompt_style="gsm8k_wei", greedy=True, style_stop=False, data_dir=str(tmp_path / "data"),
                                output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                print_table=False)
    assert again.run_id != result.run_id
    assert again.tasks["gsm8k"].extra["flexible-extract"].mean == 0.0
    assert again.tasks["gsm8k"].extra["strict-match"].mean == 1.0  # the first "#### N"


def test_chat_models_get_the_exemplars_as_turns(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(script={"Janet's ducks": "16 - 7 = 9. The answer is 9.\n\nQ: next"})
    _gsm_data(tmp_path / "data", [("Janet's ducks lay 16 eggs per day. How many does she sell?", "9")])
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="chat", tasks=["gsm8k"],
                                 prompt_style="gsm8k_cot", num_fewshot=3, greedy=True, data_dir=str(tmp_path / "data"),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False)
    (rec,) = [r for r in server.requests() if r.path == "/v1/chat/completions"]
    assert [m["role"] for m in rec.body["messages"]] == ["user", "assistant"] * 3 + ["user"]
    assert rec.body["messages"][-1]["content"] == "Q: Janet's ducks lay 16 eggs per day. How many does she sell?\nA:"
    assert rec.body["stop"] == ["Q:", "</s>", "<|im_end|>"]
    # strict-match follows the style: gsm8k_cot's "The answer is N."
    m = result.tasks["gsm8k"]
    assert m.extra["strict-match"].mean == 1.0
    assert result.config.scoring["gsm8k"].extra["strict-match"].settings == {
        "pattern": FEWSHOT_STYLES["gsm8k_cot"].strict_pattern}


# lm-eval's gsm8k: exemplars drawn per problem from the train split. The expected prompts were written by
# lm-eval 0.4.13's own code (fewshot_expected/lmeval_gsm8k/make_expected.py) on a made-up train split
# (fixtures/hub/gsm8k_train.jsonl, the Hub's layout) and five made-up test problems.
LMEVAL_GSM8K = EXPECTED / "lmeval_gsm8k"
HUB_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hub"


def _lmeval_data(d: Path) -> Path:
    """A data dir with the fixture's train split as it is (the Hub's layout, like ../shared's
    gsm8k_train.jsonl) and the five test problems in the uniform schema."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "gsm8k_train.jsonl").write_text((HUB_FIXTURES / "gsm8k_train.jsonl").read_text())
    with open(d / "gsm8k.jsonl", "w") as f:
        for i, line in enumerate((LMEVAL_GSM8K / "test.jsonl").read_text().splitlines()):
            r = json.loads(line)
            f.write(json.dumps({"id": f"gsm8k-{i}", "problem": r["question"], "solution": r["answer"],
                                "answer": r["answer"].rsplit("#### ", 1)[1]}) + "\n")
    return d


def _prompts(data: Path, k: int | None, limit: int | None = None, api: str = "completions") -> list[Any]:
    from reasoneval.run.generation import load_tasks
    from reasoneval.run.options import EvalConfig

    cfg = EvalConfig(tasks=["gsm8k"], num_fewshot=k, data_dir=str(data), limit=limit, model="m", api=api)
    reqs = plan(load_tasks(cfg), n=1, seed=0, sampling=SamplingParams(), api=api, prompt=cfg.prompt()).requests
    return [r.prompt if api == "completions" else r.messages for r in reqs]


@pytest.mark.parametrize("k", [4, 8])
def test_gsm8k_prompts_are_lm_evals_exemplar_draw_byte_for_byte(k: int, tmp_path: Path) -> None:
    data = _lmeval_data(tmp_path / "data")
    expected = [(LMEVAL_GSM8K / f"{k}shot_doc{i}.txt").read_text() for i in range(5)]
    assert _prompts(data, k) == expected
    # Each problem has its own draw (the sampler runs on from problem to problem) ...
    assert len({p.split("\n\n")[0] for p in expected}) > 1
    # ... and --limit keeps the first problems' prompts, as lm-eval's --limit does.
    assert _prompts(data, k, limit=2) == expected[:2]
    # As chat (lm-eval's --fewshot_as_multiturn): the same exemplars as turns.
    msgs = _prompts(data, k, api="chat")[3]
    assert [m["role"] for m in msgs] == ["user", "assistant"] * k + ["user"]
    assert "".join(m["content"] + (" " if m["role"] == "user" else "\n\n") for m in msgs).rstrip() == expected[3]


def test_gsm8k_default_is_five_drawn_shots_and_wei_stays_available(tmp_path: Path) -> None:
    data = _lmeval_data(tmp_path / "data")
    (first, *_) = _prompts(data, None)
    assert first.startswith("Problem: ")  # no few-shot asked: the zero-shot boxed default
    from reasoneval.run.generation import load_tasks
    from reasoneval.run.options import EvalConfig

    cfg = EvalConfig(tasks=["gsm8k"], prompt_style="gsm8k", data_dir=str(data), model="m", api="completions")
    (req, *_) = plan(load_tasks(cfg), n=1, seed=0, sampling=SamplingParams(), api="completions",
                     prompt=cfg.prompt()).requests
    assert req.prompt is not None and req.prompt.count("Question: ") == 6 and "<<" in req.prompt
    cfg = EvalConfig(tasks=["gsm8k"], prompt_style="gsm8k_wei", num_fewshot=2, data_dir=str(data), model="m",
                     api="completions")
    (req, *_) = plan(load_tasks(cfg), n=1, seed=0, sampling=SamplingParams(), api="completions",
                     prompt=cfg.prompt()).requests
    assert req.prompt is not None and req.prompt.startswith("Question: There are 15 trees in the grove.")


def test_gsm8k_without_its_train_split_is_a_one_line_error(tmp_path: Path) -> None:
    data = _lmeval_data(tmp_path / "data")
    (data / "gsm8k_train.jsonl").unlink()
    with pytest.raises(UserError, match="no local data for task 'gsm8k_train'"):
        _prompts(data, 4)


@pytest.mark.real_data("gsm8k.jsonl", "gsm8k_train.jsonl")
def test_gsm8k_prompts_equal_lm_evals_on_the_real_splits(tmp_path: Path, real_data_dir: Path) -> None:
    """The first 40 real test problems' prompts against the SHA-256 of lm-eval's (make_expected.py)."""
    shared = real_data_dir
    want = json.loads((LMEVAL_GSM8K / "real_data_sha256.json").read_text())
    for k, hashes in want.items():
        got = [hashlib.sha256(p.encode()).hexdigest() for p in _prompts(shared, int(k), limit=len(hashes))]
        assert got == hashes, k


def test_gsm8k_eight_shot_run_sends_lm_evals_prompts_to_the_server(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(script={"Ivy bakes": "4 * 6 = 24.\n#### 24"})
    result = reasoneval.evaluate(base_url=server.base_url, model="test-model", api="completions", tasks=["gsm8k"],
                                 num_fewshot=8, greedy=True, data_dir=str(_lmeval_data(tmp_path / "data")),
                                 output_dir=str(tmp_path / "results"), grading_workers=1, progress=False,
                                 print_table=False)
    sent = sorted(r.body["prompt"] for r in server.requests() if r.path == "/v1/completions")
    assert sent == sorted((LMEVAL_GSM8K / f"8shot_doc{i}.txt").read_text() for i in range(5))
    assert result.tasks["gsm8k"].extra["strict-match"].num_problems == 5


# lm-eval's hendrycks_math: "Problem: ...\nAnswer:", exemplars (bare answers) drawn per subject from the MATH train
# split. Expected prompts written by lm-eval 0.4.13's own code (fewshot_expected/lmeval_hendrycks_math/
# make_expected.py) on the made-up Hub-layout fixtures (fixtures/hub/hendrycks_math{,_train}.jsonl).
LMEVAL_HENDRYCKS = EXPECTED / "lmeval_hendrycks_math"
MATH_SUBTASKS = ("algebra", "counting_and_prob", "geometry", "intermediate_algebra", "num_theory", "prealgebra",
                 "precalc")


def _math_data(d: Path) -> Path:
    """hendrycks_math and hendrycks_math_train as the Hub path caches them (the fixtures' rows mapped)."""
    from reasoneval.tasks.loading import convert_hub_rows

    d.mkdir(parents=True, exist_ok=True)
    for name in ("hendrycks_math", "hendrycks_math_train"):
        rows = [json.loads(line) for line in (HUB_FIXTURES / f"{name}.jsonl").read_text().splitlines()]
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in convert_hub_rows(TASKS.get(name), rows)))
    return d


def _math_requests(data: Path, k: int | None, limit: int | None = None, seed: int | None = None) -> list[Any]:
    from reasoneval.run.generation import load_tasks
    from reasoneval.run.options import EvalConfig

    cfg = EvalConfig(tasks=["hendrycks_math"], prompt_style="hendrycks_math", num_fewshot=k, data_dir=str(data),
                     limit=limit, model="m", api="completions", fewshot_seed=seed)
    return list(plan(load_tasks(cfg), n=1, seed=0, sampling=SamplingParams(), api="completions",
                     prompt=cfg.prompt()).requests)


@pytest.mark.parametrize("k", [0, 4])
def test_hendrycks_math_prompts_are_lm_evals_per_subject_draw_byte_for_byte(k: int, tmp_path: Path) -> None:
    reqs = _math_requests(_math_data(tmp_path / "data"), k)
    # The task's problems come in the Hub's config order, two per subject: lm-eval's seven subtasks in turn.
    expected = [(LMEVAL_HENDRYCKS / f"hendrycks_math_{s}_{k}shot_doc{i}.txt").read_text()
                for s in MATH_SUBTASKS for i in range(2)]
    assert [r.prompt for r in reqs] == expected
    until = json.loads((LMEVAL_HENDRYCKS / "until.json").read_text())
    assert all(list(r.params.stop) == until[s] for r, s in zip(reqs, [s for s in MATH_SUBTASKS for _ in range(2)]))
    if k:
        # Each subject draws from its own rows (the fixture's answers are 100·(subject index + 1) + ...) ...
        for j, p in enumerate(expected):
            shots = [line for line in p.split("\n") if line.startswith("Answer: ")]
            assert len(shots) == k and all(s[len("Answer: ")] == str(j // 2 + 1) or "frac" in s for s in shots)
        # ... with a generator of its own: a subject's first problem draws what a one-subject run draws.
        assert expected[0].split("\n\nProblem: ")[0] != expected[1].split("\n\nProblem: ")[0]


def test_fewshot_seed_is_lm_evals_seed_option(tmp_path: Path) -> None:
    """`lm_eval --seed 42` seeds the few-shot draw with 42 too; --fewshot-seed 42 gives its prompts, and a run id of
    its own."""
    from reasoneval.run.options import EvalConfig

    reqs = _math_requests(_math_data(tmp_path / "data"), 4, seed=42)
    expected = [(LMEVAL_HENDRYCKS / f"hendrycks_math_{s}_4shot_seed42_doc{i}.txt").read_text()
                for s in MATH_SUBTASKS for i in range(2)]
    assert [r.prompt for r in reqs] == expected
    assert expected != [(LMEVAL_HENDRYCKS / f"hendrycks_math_{s}_4shot_doc{i}.txt").read_text()
                        for s in MATH_SUBTASKS for i in range(2)]
    assert EvalConfig(num_fewshot=4, fewshot_seed=42).prompt().identity()["fewshot_seed"] == 42
    assert "fewshot_seed" not in EvalConfig(num_fewshot=4).prompt().identity()


def test_hendrycks_math_limit_keeps_the_first_prompts_and_a_missing_subject_is_one_line(tmp_path: Path) -> None:
    data = _math_data(tmp_path / "data")
    assert [r.prompt for r in _math_requests(data, 4, limit=1)] == [
        (LMEVAL_HENDRYCKS / "hendrycks_math_algebra_4shot_doc0.txt").read_text()]
    train = data / "hendrycks_math_train.jsonl"
    train.write_text("".join(line + "\n" for line in train.read_text().splitlines() if '"Geometry"' not in line))
    with pytest.raises(UserError, match="none with subject 'Geometry'"):
        _math_requests(data, 4)
    train.unlink()
    with pytest.raises(UserError, match="no local data for task 'hendrycks_math_train'"):
        _math_requests(data, 4)
