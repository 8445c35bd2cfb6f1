"""Writes the expected hendrycks_math prompts of this folder with lm-evaluation-harness's own code (not a copy of it).

Run in a venv with lm-eval installed (it is not a reasoneval dependency), offline:
    python -m venv /tmp/lmeval-venv && /tmp/lmeval-venv/bin/pip install torch==2.13.0 "lm-eval[math]==0.4.13"
    /tmp/lmeval-venv/bin/python tests/tasks/fewshot_expected/lmeval_hendrycks_math/make_expected.py

lm-eval's seven `hendrycks_math_<subject>` task configs (lm_eval/tasks/hendrycks_math/) are included unchanged
except for their data: each subject's train split is that subject's rows of
tests/fixtures/hub/hendrycks_math_train.jsonl and its test split that subject's rows of
tests/fixtures/hub/hendrycks_math.jsonl (made-up rows in the Hub's layout). Requests are built as lm-eval's
evaluator builds them (num_fewshot set, then set_fewshot_seed(1234) per task, then build_all_requests over the
test documents in order); each request's context goes to `<subtask>_<k>shot_doc<i>.txt`, and a build with
limit=1 must give the first prompt again. 4 shots again with the few-shot seed 42 (what `lm_eval --seed 42` sets)
go to `<subtask>_4shot_seed42_doc<i>.txt`. The stop sequences go to until.json.
"""

# own-environment: lm_eval (a venv of its own, as the docstring says; not a reasoneval dependency)
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import lm_eval
from lm_eval.tasks import TaskManager

HERE = Path(__file__).resolve().parent
HUB = HERE.parents[2] / "fixtures" / "hub"
SEED = 1234  # lm_eval.defaults.DEFAULT_OTHER_SEED, the evaluator's fewshot_random_seed
SUBTASKS = {"Algebra": "algebra", "Counting & Probability": "counting_and_prob", "Geometry": "geometry",
            "Intermediate Algebra": "intermediate_algebra", "Number Theory": "num_theory",
            "Prealgebra": "prealgebra", "Precalculus": "precalc"}
SHOTS = (0, 4)


def rows(name: str, subject: str) -> list[dict]:
    return [r for r in map(json.loads, (HUB / f"{name}.jsonl").read_text().splitlines()) if r["type"] == subject]


def build(task_dir: Path, name: str, k: int, limit: int | None, seed: int = SEED) -> tuple[list[str], list[str]]:
    task = TaskManager(include_path=str(task_dir)).load([name])["tasks"][name]
    task.set_config(key="num_fewshot", value=k)
    task.set_fewshot_seed(seed=seed)
    task.build_all_requests(limit=limit)
    return [inst.args[0] for inst in task.instances], list(task.config.generation_kwargs["until"])


def main() -> None:
    lm_tasks = Path(lm_eval.__file__).parent / "tasks" / "hendrycks_math"
    until = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for subject, suffix in SUBTASKS.items():
            files = {}
            for split, name in (("train", "hendrycks_math_train"), ("test", "hendrycks_math")):
                files[split] = d / f"{suffix}_{split}.jsonl"
                files[split].write_text("".join(json.dumps(r) + "\n" for r in rows(name, subject)))
            task = f"fixture_{suffix}"
            (d / f"{task}.yaml").write_text(
                f"include: {lm_tasks / f'hendrycks_math_{suffix}.yaml'}\ntask: {task}\ntag: []\ndataset_path: json\n"
                f"dataset_name: null\ndataset_kwargs:\n  data_files:\n    train: {files['train']}\n"
                f"    test: {files['test']}\n")
            for k in SHOTS:
                prompts, until[suffix] = build(d, task, k, None)
                assert build(d, task, k, 1)[0] == prompts[:1], "--limit changed the first document's prompt"
                for i, p in enumerate(prompts):
                    (HERE / f"hendrycks_math_{suffix}_{k}shot_doc{i}.txt").write_text(p, encoding="utf-8")
            for i, p in enumerate(build(d, task, 4, None, seed=42)[0]):
                (HERE / f"hendrycks_math_{suffix}_4shot_seed42_doc{i}.txt").write_text(p, encoding="utf-8")
    (HERE / "until.json").write_text(json.dumps(until, indent=1) + "\n")
    print(f"wrote lm-eval's hendrycks_math prompts to {HERE}")


if __name__ == "__main__":
    main()
