"""Write tests/prompts/lcb_expected/*.txt with lcb_runner's own prompt builder (run with the python of an environment
holding the PyPI package `nvidia-livecodebench`, never reasoneval's): the text tests/prompts/test_contest_prompts.py
pins reasoneval's `livecodebench` prompt style against.

    python -m venv /tmp/lcbvenv && /tmp/lcbvenv/bin/pip install nvidia-livecodebench
    /tmp/lcbvenv/bin/python bench/lcb_prompt_files.py
"""

# own-environment: livecodebench, anthropic (nvidia-livecodebench in a venv of its own, as the docstring says)
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace


def _lcb_prompts():  # type: ignore[no-untyped-def]
    """lcb_runner's prompt module. Its package imports `anthropic.HUMAN_PROMPT`, which newer anthropic releases
    dropped: the two old constants are set first (the code generation prompts do not use them)."""
    import anthropic

    for name, value in (("HUMAN_PROMPT", "\n\nHuman:"), ("AI_PROMPT", "\n\nAssistant:")):
        if not hasattr(anthropic, name):
            setattr(anthropic, name, value)
    from livecodebench.prompts import code_generation

    return code_generation

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "prompts" / "lcb_expected"


def main() -> int:
    lcb = _lcb_prompts()
    OUT.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in open(ROOT / "tests" / "fixtures" / "hub" / "livecodebench.jsonl")]
    for i, row in enumerate(rows):
        q = SimpleNamespace(question_content=row["question_content"], starter_code=row["starter_code"])
        (OUT / f"livecodebench-{i}.txt").write_text(lcb.get_generic_question_template_answer(q), encoding="utf-8")
    (OUT / "system.txt").write_text(lcb.PromptConstants.SYSTEM_MESSAGE_GENERIC, encoding="utf-8")
    print(f"wrote {len(rows) + 1} files to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
