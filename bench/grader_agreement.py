"""Agreement of reasoneval's grader with the labelled cases of public graders' test suites.

    PYTHONPATH=src python bench/grader_agreement.py --cases ../shared/grader_cases/dev.jsonl

Rows: category math or mcq, no dup_of, no label_conflict. A row of kind "response" is graded with grade(),
one of kind "answer" with is_equivalent() (kind="choice" for mcq rows); the reference goes in as given
(grade() and is_equivalent() extract it themselves when it is a whole solution). A row whose test passed a
`precision` setting is graded with rel_tol = 10^-precision, our equivalent of that setting (--no-settings:
the default tolerance everywhere). Math-Verify's own figure on the same rows is printed beside ours:
verify(parse(gold), parse(pred)) with bare answers wrapped in \\boxed{}, run in this process with its own
SIGALRM timeouts (these are fixed test strings, not model output).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

from reasoneval.scoring.maths import grade, is_equivalent


def _rows(path: pathlib.Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    return [r for r in rows if r["category"] in ("math", "mcq") and r.get("dup_of") is None
            and not r.get("label_conflict")]


def _ours(r: dict[str, Any], use_settings: bool) -> bool:
    kind = "choice" if r["category"] == "mcq" else "math"
    settings = r.get("settings") or {}
    tol = 10.0 ** -int(settings["precision"]) if use_settings and "precision" in settings else None
    if r["kind"] == "response":
        return grade(r["pred"], r["gold"], kind, rel_tol=tol).correct
    return is_equivalent(r["pred"], r["gold"], kind, rel_tol=tol)


def _math_verify(r: dict[str, Any]) -> bool:
    from math_verify import parse, verify

    gold = r["gold"] if r["gold_kind"] == "response" else "\\boxed{" + r["gold"] + "}"
    pred = r["pred"] if r["kind"] == "response" else "\\boxed{" + r["pred"] + "}"
    try:
        return bool(verify(parse(gold), parse(pred)))
    except Exception:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=pathlib.Path, default=pathlib.Path("../shared/grader_cases/dev.jsonl"))
    ap.add_argument("--no-settings", action="store_true", help="ignore the rows' precision settings")
    ap.add_argument("--no-baseline", action="store_true", help="skip math-verify's figure")
    a = ap.parse_args()
    if not a.cases.exists():
        sys.exit(f"error: {a.cases} not found: pass --cases PATH to the grader cases JSONL")
    rows = _rows(a.cases)
    ours = [_ours(r, not a.no_settings) for r in rows]
    agree = sum(o == r["equal"] for o, r in zip(ours, rows))
    print(f"rows: {len(rows)} (category math/mcq, no dup_of, no label_conflict)")
    print(f"reasoneval:  {agree}/{len(rows)} = {agree / len(rows):.1%}")
    if not a.no_baseline:
        import logging

        logging.disable(logging.WARNING)
        mv = [_math_verify(r) for r in rows]
        mv_agree = sum(m == r["equal"] for m, r in zip(mv, rows))
        print(f"math-verify: {mv_agree}/{len(rows)} = {mv_agree / len(rows):.1%}")
    print("disagreements (id, label, ours, pred | gold):")
    for o, r in zip(ours, rows):
        if o != r["equal"]:
            print(f"  {r['id']:>4} label={r['equal']!s:5} ours={o!s:5} {r['pred'][-70:]!r} | {r['gold'][-70:]!r}")


if __name__ == "__main__":
    main()
