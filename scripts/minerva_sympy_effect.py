"""How much lm-eval's sympy step moves minerva_math's exact_match, on a run's real responses.

    python scripts/minerva_sympy_effect.py RUN_DIR [--task hendrycks_math]

Scores every sample of the task twice with the `exact_match` scorer (the Minerva answer, lm-eval's normalisation):
the string part alone (what reasoneval reported before the step) and lm-eval's whole is_equiv (identical strings,
then sympy's parse_latex + simplify in the grading workers); prints both figures, the difference, and every
response whose verdict the step changes. Run it on a run made with Minerva's prompt (`--num-fewshot 4`), e.g. the
embedded model on MATH-500 (docs/lm-eval.md, "The sympy step").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reasoneval.records import SampleRecord
from reasoneval.results.schema import load_config
from reasoneval.results.store import iter_samples, read_problems
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--task", default=None, help="the task (default: the run's first)")
    a = ap.parse_args()
    config = load_config(a.run_dir)
    task = a.task or config.tasks[0]
    scoring = (config.scoring.get(task) or TaskScoring()).extra.get("exact_match")
    if scoring is None:
        raise SystemExit(f"{a.run_dir}: task {task} was not scored with lm-eval's exact_match (use Minerva's prompt)")
    problems = {p.key: p for p in read_problems(a.run_dir) if p.task == task}
    records = (SampleRecord.from_json_dict(d) for d in iter_samples(a.run_dir / "samples.jsonl"))
    samples = [s for s in records if s.task == task and s.status == "ok" and s.problem_key in problems]
    refs = [problems[s.problem_key] for s in samples]
    pattern = {k: v for k, v in scoring.settings.items() if k == "pattern"}
    with ScoringContext(workers=2) as context:
        strings = create_scorer(TaskScoring("exact_match", pattern), context).score_many(refs, samples)
        whole = create_scorer(TaskScoring("exact_match", {**pattern, "sympy": True}), context).score_many(refs, samples)
    n = len(samples)
    a_, b_ = sum(s.correct for s in strings), sum(s.correct for s in whole)
    print(f"{a.run_dir} {task}: {n} responses; exact_match strings only {a_}/{n} = {100 * a_ / max(n, 1):.1f}%, "
          f"with lm-eval's sympy step {b_}/{n} = {100 * b_ / max(n, 1):.1f}% ({b_ - a_:+d} responses)")
    print(f"responses with a Minerva answer: {sum(s.answer is not None for s in strings)}; sympy timeouts: "
          f"{sum(s.status == 'timeout' for s in whole)}")
    for x, y, p in zip(strings, whole, refs):
        if x.correct != y.correct:
            print(f"  {p.id}: answer {x.answer!r} vs reference {p.answer!r}: strings {x.correct}, with sympy {y.correct}")


if __name__ == "__main__":
    main()
