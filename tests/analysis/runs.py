"""Real run directories for the reader tests: `reasoneval.evaluate` against the loopback OpenAI server.

Each sample's reply is chosen by its seed, so which samples are right is known exactly:
`correct(i, j)` says whether sample j of problem i answers right.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Callable, Iterator

import reasoneval
from reasoneval.results.identity import sample_seed
from reasoneval.tasks import problem_key
from tests.fixtures.openai_server import OpenAIServer, Reply

TASK = "math500"
SUBJECTS = ("Algebra", "Geometry", "Number Theory")


@contextlib.contextmanager
def loopback_servers() -> Iterator[Callable[..., OpenAIServer]]:
    """A factory of started loopback servers (for module-scoped fixtures); all are stopped on exit."""
    servers: list[OpenAIServer] = []

    def make(**kw: Any) -> OpenAIServer:
        server = OpenAIServer(**kw).start()
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()


def problems(q: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [(f"What is {i} plus {i + 3}?", str(2 * i + 3), {"subject": SUBJECTS[i % 3], "level": 1 + i % 5})
            for i in range(q)]


def write_data(data_dir: Path, q: int) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / f"{TASK}.jsonl", "w") as f:
        for i, (text, answer, meta) in enumerate(problems(q)):
            f.write(json.dumps({"id": f"p{i:03d}", "problem": text, "answer": answer, **meta}) + "\n")
    return data_dir


def make_run(make_server: Callable[..., Any], tmp_path: Path, model: str, correct: Callable[[int, int], bool],
             q: int = 12, n: int = 8, truncated: Callable[[int, int], bool] = lambda i, j: False,
             tokens: Callable[[int, int], int] = lambda i, j: 100 + 10 * j, seed: int = 42,
             response: Callable[[int, int, str], str] = lambda i, j, said: f"Adding gives \\boxed{{{said}}}.",
             **options: Any) -> Path:
    """A finished run of `model` on q problems x n samples; returns its run directory. options: more
    `evaluate` options (e.g. num_fewshot)."""
    data_dir = write_data(tmp_path / "data", q)
    replies = {}
    for i, (text, answer, _) in enumerate(problems(q)):
        key = problem_key(text, answer)
        for j in range(n):
            if truncated(i, j):
                reply = Reply(text="Let me think step by step about " * 5, finish_reason="length",
                              completion_tokens=tokens(i, j))
            else:
                said = answer if correct(i, j) else str(int(answer) + 1)
                reply = Reply(text=response(i, j, said), completion_tokens=tokens(i, j))
            replies[sample_seed(seed, TASK, key, j)] = reply
    server = make_server(model=model, responder=lambda body: replies[body["seed"]])
    # n: the sample indices the replies cover; an adaptive run (target_se) draws its own number of them
    sampled = {} if "target_se" in options else {"n": n}
    result = reasoneval.evaluate(base_url=server.base_url, model=model, data_dir=str(data_dir), tasks=[TASK],
                                 seed=seed, output_dir=str(tmp_path / "results"), retry_backoff=0.01,
                                 grading_workers=1, progress=False, print_table=False, **sampled, **options)
    return Path(result.run_dir)
