"""plan(): the missing samples, sample-index-major, each with its own seed and its task's prompt style."""

from __future__ import annotations

from reasoneval.prompts import PromptConfig
from reasoneval.records import Problem, SamplingParams
from reasoneval.results.identity import sample_seed
from reasoneval.run.plan import LoadedTask, plan
from reasoneval.scoring import TaskScoring
from reasoneval.tasks import TaskSpec

MATH = TaskSpec("m", "math task")
MC = TaskSpec("c", "choice task", scoring=TaskScoring("choice"), prompt="choice")


def problem(task: str, i: int, **payload: object) -> Problem:
    return Problem(task=task, id=f"{task}-{i}", problem=f"question {i}", answer="A", key=f"{task}{i}", payload=payload)


def test_plan_orders_by_sample_index_skips_done_and_seeds_each_sample() -> None:
    tasks = [LoadedTask(MATH, [problem("m", 0), problem("m", 1)])]
    p = plan(tasks, n=3, seed=7, sampling=SamplingParams(), api="chat", prompt=PromptConfig(), done={("m", "m0", 0)})
    assert [(r.problem_key, r.index) for r in p.requests] == [("m1", 0), ("m0", 1), ("m1", 1), ("m0", 2), ("m1", 2)]
    assert all(r.seed == sample_seed(7, "m", r.problem_key, r.index) for r in p.requests)
    assert p.total == 6
    # Raising K adds only the new indices, with the same seeds for the old ones.
    more = plan(tasks, n=4, seed=7, sampling=SamplingParams(), api="chat", prompt=PromptConfig(),
                done={(r.task, r.problem_key, r.index) for r in p.requests} | {("m", "m0", 0)})
    assert [(r.problem_key, r.index) for r in more.requests] == [("m0", 3), ("m1", 3)]


def test_each_task_is_asked_in_its_own_prompt_style() -> None:
    tasks = [LoadedTask(MATH, [problem("m", 0)]), LoadedTask(MC, [problem("c", 0, choices=["Argon", "Neon"])])]
    p = plan(tasks, n=1, seed=0, sampling=SamplingParams(), api="chat", prompt=PromptConfig(system_prompt="S"))
    math_msgs, mc_msgs = (r.messages for r in p.requests)
    assert math_msgs is not None and mc_msgs is not None
    assert math_msgs[0] == {"role": "system", "content": "S"} and "\\boxed{}" in math_msgs[1]["content"]
    assert "A) Argon" in mc_msgs[1]["content"] and "Answer: LETTER" in mc_msgs[1]["content"]
    completions = plan(tasks, n=1, seed=0, sampling=SamplingParams(), api="completions", prompt=PromptConfig())
    assert all(r.prompt is not None and r.messages is None for r in completions.requests)


def _requests(problems: int, n: int) -> list:
    tasks = [LoadedTask(MATH, [problem("m", i) for i in range(problems)])]
    return list(plan(tasks, n=n, seed=0, sampling=SamplingParams(), api="chat", prompt=PromptConfig()).requests)


def test_longest_first_starts_one_pilot_per_unknown_problem_then_the_longest_expected() -> None:
    from reasoneval.run.plan import longest_first

    reqs = _requests(3, 3)
    # m1 is known to be long, m2 short, m0 unknown: m0 gets a pilot first; then the unknown m0 ranks as
    # the longest (its pilot is still running), then m1 before m2.
    order = [(r.problem_key, r.index) for r in longest_first(reqs, {("m", "m1"): 900.0, ("m", "m2"): 10.0})]
    assert order == [("m0", 0), ("m0", 1), ("m0", 2), ("m1", 0), ("m1", 1), ("m1", 2), ("m2", 0), ("m2", 1), ("m2", 2)]


def test_request_queue_reranks_as_samples_finish() -> None:
    from reasoneval.run.plan import RequestQueue

    q = RequestQueue(_requests(3, 3))
    pilots = [q.pop() for _ in range(3)]
    assert [(r.problem_key, r.index) for r in pilots] == [("m0", 0), ("m1", 0), ("m2", 0)]
    for r, length in zip(pilots, (5, 500, 50)):
        q.finished(r, length)
    nxt = q.pop()
    assert (nxt.problem_key, nxt.index) == ("m1", 1)
    # m1's second sample came out short: its mean (500 + 20) / 2 = 260 still beats m2's 50.
    q.finished(nxt, 20)
    assert [(r.problem_key, r.index) for r in (q.pop(), q.pop())] == [("m1", 2), ("m2", 1)]
    assert [(r.problem_key, r.index) for r in (q.pop(), q.pop(), q.pop())] == [("m2", 2), ("m0", 1), ("m0", 2)]
    assert not q


def test_sample_major_queue_keeps_plan_order() -> None:
    from reasoneval.run.plan import RequestQueue

    reqs = _requests(2, 2)
    q = RequestQueue(reqs, {("m", "m1"): 1000.0}, schedule="sample-major")
    assert [q.pop() for _ in range(len(q))] == reqs
