"""The configuration is typed where users touch it: mypy checks `EvalConfig(...)`, its attributes and
`evaluate(...)` / `evaluate_async(...)` against EvalConfig's fields, SamplingParams' among them (inherited, so a new
sampling option is typed with no other edit). A notebook's misspelt option fails type checking, not only the run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import reasoneval

ROOT = Path(reasoneval.__file__).parents[2]

SNIPPET = textwrap.dedent('''
    import asyncio

    from reasoneval import EvalConfig, evaluate, evaluate_async

    good = EvalConfig(tasks=["aime24"], temperature=0.7, top_k=20, n=4)
    t: float = good.temperature
    evaluate(good, n=8, min_p=0.05, stop=("</answer>",))
    evaluate(tasks=["aime24"], extra_body={"repetition_penalty": 1.05})
    asyncio.run(evaluate_async(tasks=["aime24"], top_p=0.9))

    EvalConfig(temprature=0.7)  # error 1
    EvalConfig(temperature="hot")  # error 2
    good.no_such_option  # error 3
    evaluate(temprature=0.7)  # error 4
    evaluate(good, top_k="twenty")  # error 5
    asyncio.run(evaluate_async(tasks=["aime24"], temprature=0.7))  # error 6
''')


@pytest.mark.slow
def test_mypy_rejects_a_misspelt_option_and_a_wrong_type(tmp_path: Path) -> None:
    snippet = tmp_path / "notebook.py"
    snippet.write_text(SNIPPET)
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--python-version", "3.10", "--follow-imports", "silent",
         "--ignore-missing-imports", "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"), str(snippet)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    errors: dict[int, str] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r".*notebook\.py:(\d+): error: (.*)", line)
        if m:
            errors[int(m.group(1))] = errors.get(int(m.group(1)), "") + m.group(2)
    # The lines marked `# error N`, and no other (the first lines are right and type-check).
    marked = {int(m.group(1)): i for i, line in enumerate(SNIPPET.splitlines(), start=1)
              if (m := re.search(r"# error (\d)", line))}
    assert sorted(errors) == sorted(marked.values()), proc.stdout + proc.stderr
    error = {k: errors[line] for k, line in marked.items()}
    assert 'Unexpected keyword argument "temprature"' in error[1]
    assert '"temperature"' in error[2] and '"str"' in error[2] and '"float"' in error[2]
    assert '"EvalConfig" has no attribute "no_such_option"' in error[3]
    assert 'Unexpected keyword argument "temprature"' in error[4]
    assert '"top_k"' in error[5] and '"str"' in error[5]
    assert 'Unexpected keyword argument "temprature"' in error[6]
