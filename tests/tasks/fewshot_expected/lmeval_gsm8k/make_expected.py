"""Writes the expected gsm8k prompts of this folder with lm-evaluation-harness's own code (not a copy of it).

Run in a venv with lm-eval installed (it is not a reasoneval dependency), offline:
    python -m venv /tmp/lmeval-venv && /tmp/lmeval-venv/bin/pip install torch==2.13.0 lm-eval==0.4.13
    /tmp/lmeval-venv/bin/python tests/tasks/fewshot_expected/lmeval_gsm8k/make_expected.py

lm-eval's `gsm8k` task config (lm_eval/tasks/gsm8k/gsm8k.yaml) is included unchanged except for its data:
the train split is tests/fixtures/hub/gsm8k_train.jsonl (made-up rows in the Hub's layout) and the test
split is test.jsonl here. Requests are built as lm-eval's evaluator builds them (num_fewshot set, then
set_fewshot_seed(1234), then build_all_requests over the test documents in order); each request's context
is written to `<k>shot_doc<i>.txt`. A second build with limit=2 must give the first two prompts again.
Where the real splits are present, the SHA-256 of lm-eval's prompts for the first 40 real test problems
(4, 5 and 8 shots) go to real_data_sha256.json (hashes only: no benchmark text is committed).
"""

# own-environment: lm_eval (a venv of its own, as the docstring says; not a reasoneval dependency)
from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import lm_eval
from lm_eval.tasks import TaskManager

HERE = Path(__file__).resolve().parent
TRAIN = HERE.parents[2] / "fixtures" / "hub" / "gsm8k_train.jsonl"
SHARED = Path("/work/shared/datasets")  # the real splits, when present: only prompt hashes are written
REAL_DOCS = 40
SEED = 1234  # lm_eval.defaults.DEFAULT_OTHER_SEED, the evaluator's fewshot_random_seed


def build(task_dir: Path, k: int, limit: int | None) -> list[str]:
    task = TaskManager(include_path=str(task_dir)).load(["gsm8k_fixture"])["tasks"]["gsm8k_fixture"]
    task.set_config(key="num_fewshot", value=k)
    task.set_fewshot_seed(seed=SEED)
    task.build_all_requests(limit=limit)
    assert task.config.generation_kwargs["until"] == ["Question:", "</s>", "<|im_end|>"]
    return [inst.args[0] for inst in task.instances]


def write_task(d: Path, train: Path, test: Path) -> None:
    gsm8k_yaml = Path(lm_eval.__file__).parent / "tasks" / "gsm8k" / "gsm8k.yaml"
    (d / "gsm8k_fixture.yaml").write_text(
        f"include: {gsm8k_yaml}\ntask: gsm8k_fixture\ntag: []\ndataset_path: json\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    train: {train}\n    test: {test}\n")


def real_data_hashes(d: Path) -> None:
    """SHA-256 of lm-eval's prompts for the first REAL_DOCS test problems on the real GSM8K splits
    (../shared/datasets: gsm8k_train.jsonl in the Hub layout; gsm8k.jsonl rewritten to it)."""
    test = d / "gsm8k_test.jsonl"
    with open(SHARED / "gsm8k.jsonl") as f, open(test, "w") as out:
        for line in list(f)[:REAL_DOCS]:
            r = json.loads(line)
            out.write(json.dumps({"question": r["problem"], "answer": r["solution"]}) + "\n")
    write_task(d, SHARED / "gsm8k_train.jsonl", test)
    hashes = {str(k): [hashlib.sha256(p.encode()).hexdigest() for p in build(d, k, None)] for k in (4, 5, 8)}
    (HERE / "real_data_sha256.json").write_text(json.dumps(hashes, indent=1) + "\n")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_task(d, TRAIN, HERE / "test.jsonl")
        for k in (4, 8):
            prompts = build(d, k, None)
            assert build(d, k, 2) == prompts[:2], "--limit changed the first documents' prompts"
            for i, p in enumerate(prompts):
                (HERE / f"{k}shot_doc{i}.txt").write_text(p, encoding="utf-8")
        if (SHARED / "gsm8k_train.jsonl").is_file():
            real_data_hashes(d)
    print(f"lm-eval {lm_eval.__version__ if hasattr(lm_eval, '__version__') else ''}: wrote prompts to {HERE}")


if __name__ == "__main__":
    main()
