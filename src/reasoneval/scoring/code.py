"""`code`: a response's program, run against the problem's tests in the sandbox (reasoneval.sandbox).

The program is the extracted code (HumanEval: after the problem's prompt, which brings the imports and the
signature; MBPP: after the source's setup code / test imports), then the tests, then a completion marker
(a random nonce) printed by the harness's epilogue. A sample is correct only when the sandboxed process
exits 0 AND printed the marker with every test passed: a program that exits early (`sys.exit(0)`,
`os._exit(0)`) before the tests never prints it. Programs run in the sandbox pool (bounded concurrency,
one fresh sandbox each); results are cached in the run's `code_runs.jsonl`, keyed by program, tests,
limits and versions, so a resumed or re-scored run does not run them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import UserError
from ..sandbox import SANDBOX_VERSION, Limits, ProgramResult, SandboxPool
from ..types import Problem, SampleRecord
from .base import SCORERS, Score, ScoringContext

CODE_SCORER_VERSION = "1"
CODE_RUNS_FILE = "code_runs.jsonl"
STDERR_EXCERPT = 1200
HUMANEVAL_STOPS = ("\nclass ", "\ndef ", "\n#", "\nif __name__", "\nprint(")

# A fence's info string: the language word after the backticks (```python, ``` py3, ```c++ ...).
_FENCE_LANG = re.compile(r"[ \t]*([\w+#.-]*)")
_PY_LANGS = {"", "python", "py", "python3", "py3"}


def strip_reasoning(text: str) -> str:
    """The answer part of a response: what follows the last `</think>` (reasoning is not code)."""
    return text.rsplit("</think>", 1)[1] if "</think>" in text else text


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each ``` fenced block, in order; an unclosed last fence runs to the end.

    A fence opens at ``` followed by an info string and a newline, and closes at the next ``` (a newline
    before it is not part of the body). Plain `str.find` scans, each character looked at a bounded number
    of times, so a degenerate response (a million backticks on one line, a fence of blank lines) costs
    linear time; the regex this replaces rescanned the rest of the line from every ```.
    """
    out: list[tuple[str, str]] = []
    pos = 0
    while True:
        start = text.find("```", pos)
        if start < 0:
            return out
        eol = text.find("\n", start + 3)
        if eol < 0:  # no newline after any later ``` either: no more blocks
            return out
        lang_m = _FENCE_LANG.match(text, start + 3, eol)
        lang = lang_m.group(1) if lang_m else ""
        body_start = eol + 1
        close = text.find("```", body_start)
        if close < 0:
            out.append((lang, text[body_start:]))
            return out
        body_end = close - 1 if close > body_start and text[close - 1] == "\n" else close
        out.append((lang, text[body_start:body_end]))
        pos = close + 3


def extract_code(text: str, entry_point: str | None = None) -> tuple[str, bool]:
    """(code, fenced): the Python code of a response.

    Fenced blocks (```python ... ```, an unclosed last fence counts up to the end) are preferred: the first
    one defining `entry_point`, else the first defining any function, else the first Python block. Without a
    fence, the text itself up to MBPP's `[DONE]` (and after a leading `[BEGIN]`).
    """
    text = strip_reasoning(text).split("[DONE]", 1)[0]
    blocks = [body for lang, body in fenced_blocks(text) if lang.lower() in _PY_LANGS]
    if blocks:
        if entry_point:
            for b in blocks:
                if _defines(b, entry_point):
                    return b, True
        for b in blocks:
            if _DEFINES_ANY.search(b):
                return b, True
        return blocks[0], True
    text = text.strip("\n")
    if text.lstrip().startswith("[BEGIN]"):
        text = text.lstrip()[len("[BEGIN]"):].lstrip("\n")
    return text, False


def _truncate_at_stops(text: str, stops: Sequence[str]) -> str:
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))
    return text[:cut]


# A line defining a function. Leading blanks are [^\S\n]* (not \s*, which also crosses newlines and made the
# search quadratic on runs of blank lines); a def after blank lines still matches, at its own line.
_DEFINES_ANY = re.compile(r"^[^\S\n]*def\s+\w+\s*\(", re.MULTILINE)


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^[^\S\n]*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


@dataclass(frozen=True)
class TestProgram:
    """What runs for one sample: the candidate code and its tests (the marker is added per run)."""

    code: str
    tests: tuple[str, ...]
    imports: str = ""  # before the code (MBPP sanitized: test_imports)
    setup: str = ""  # between the code and the tests (MBPP: test_setup_code, which may use the code's classes)
    # the response's own code (the Score's answer; `code` may have the problem's prompt before it)
    candidate: str = ""

    def key(self, limits: Limits, mode: str) -> str:
        blob = json.dumps([CODE_SCORER_VERSION, SANDBOX_VERSION, mode, limits.key(), self.imports, self.code,
                           self.setup, list(self.tests)])
        return hashlib.sha256(blob.encode()).hexdigest()

    def source(self, marker: str) -> str:
        # Each test runs on its own, so the details can say how many passed; an exception is one failed test,
        # anything that ends the process (SystemExit, os._exit, a signal) means no marker: failed.
        epilogue = (
            "\n\n# --- reasoneval test epilogue ---\n"
            "import sys as _re_sys, traceback as _re_tb\n"
            "_re_passed = 0\n"
            f"for _re_test in {list(self.tests)!r}:\n"
            "    try:\n"
            "        exec(compile(_re_test, '<test>', 'exec'), globals())\n"
            "        _re_passed += 1\n"
            "    except Exception:\n"
            "        _re_tb.print_exc(limit=3)\n"
            f"print({marker!r}, _re_passed, {len(self.tests)}, flush=True)\n"
        )
        return f"{self.imports}\n{self.code}\n{self.setup}{epilogue}"


def build_program(problem: Problem, response: str) -> TestProgram | None:
    """The test program for a HumanEval or MBPP problem and a response; None if the response has no code."""
    pl = problem.payload
    if "entry_point" in pl:  # HumanEval
        entry = str(pl["entry_point"])
        code, fenced = extract_code(response, entry)
        if not fenced:
            # completions API: the response continues the prompt's function body
            code = _truncate_at_stops(strip_reasoning(response), HUMANEVAL_STOPS)
        if not code.strip():
            return None
        prompt = str(pl.get("prompt", problem.problem))
        # a complete function overrides the prompt's stub; a body continues it
        body = f"{prompt}\n\n{code}" if _defines(code, entry) else prompt + code
        return TestProgram(code=body, tests=(str(pl["test"]) + f"\ncheck({entry})\n",), candidate=code)
    if "test_list" in pl:  # MBPP (full: test_setup_code; sanitized: test_imports)
        code, _ = extract_code(response)
        if not code.strip():
            return None
        return TestProgram(code=code, tests=tuple(str(t) for t in pl["test_list"]),
                           imports="\n".join(map(str, pl.get("test_imports") or [])),
                           setup=str(pl.get("test_setup_code") or ""), candidate=code)
    raise UserError(f"code scorer: problem {problem.id} of task {problem.task} has neither HumanEval fields "
                    "(prompt, test, entry_point) nor MBPP fields (test_list)")


@dataclass(frozen=True)
class RunOutcome:
    result: str  # "passed" | "failed" | "exited_early" | "timeout" | "sandbox_error"
    tests_passed: int | None
    tests_total: int
    returncode: int | None
    stderr: str

    def to_json(self) -> dict[str, Any]:
        return {"result": self.result, "tests_passed": self.tests_passed, "tests_total": self.tests_total,
                "returncode": self.returncode, "stderr": self.stderr}


def judge(r: ProgramResult, marker: str, total: int) -> RunOutcome:
    """A sandboxed run -> its outcome. Passed = exit 0, and the marker line says every test passed."""
    stderr = r.stderr[-STDERR_EXCERPT:]
    if r.status == "error":
        return RunOutcome("sandbox_error", None, total, r.returncode, stderr)
    if r.status == "timeout":
        return RunOutcome("timeout", None, total, r.returncode, stderr)
    passed: int | None = None
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    if lines and lines[-1].startswith(marker + " "):
        # exactly `MARKER <passed> <total>` in ASCII digits: a non-ASCII digit ("²".isdigit()) or a 5,000-digit
        # count (over int()'s limit) would otherwise raise here; anything else is no marker
        parts = lines[-1].rstrip("\r").split(" ")
        if (len(parts) == 3 and all(p.isascii() and p.isdigit() and len(p) <= 9 for p in parts[1:])
                and int(parts[2]) == total):
            passed = int(parts[1])
    if passed is None:
        return RunOutcome("exited_early" if r.status == "ok" else "failed", None, total, r.returncode, stderr)
    ok = r.status == "ok" and passed == total
    return RunOutcome("passed" if ok else "failed", passed, total, r.returncode, stderr)


class CodeRunCache:
    """The run's code_runs.jsonl: program key -> outcome, appended as programs finish."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if path is not None and path.exists():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        d = json.loads(line)
                        self.entries[d["key"]] = d["outcome"]
                    except (ValueError, KeyError, TypeError):
                        continue  # a torn last line after a kill: that program runs again

    def get(self, key: str) -> RunOutcome | None:
        d = self.entries.get(key)
        return RunOutcome(**d) if d is not None else None

    def put(self, key: str, outcome: RunOutcome) -> None:
        d = outcome.to_json()
        with self._lock:
            self.entries[key] = d
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"key": key, "outcome": d}) + "\n")


def sandbox_pool(context: ScoringContext) -> SandboxPool:
    mode = os.environ.get("REASONEVAL_SANDBOX", "auto").strip() or "auto"
    pool: SandboxPool = context.resource("sandbox_pool", lambda: SandboxPool(workers=context.workers, mode=mode))
    return pool


def code_cache(context: ScoringContext) -> CodeRunCache:
    cache: CodeRunCache = context.resource("code_run_cache", lambda: CodeRunCache(
        context.cache_dir / CODE_RUNS_FILE if context.cache_dir is not None else None))
    return cache


@SCORERS.register("code")
class CodeScorer:
    """Runs the response's code against the problem's tests in the sandbox; correct = every test passed.

    Settings: timeout_s (wall clock per program, default 5), memory_mb (address space, default 1024).
    Details per sample: result (passed | failed | exited_early | timeout | no_code | sandbox_error),
    tests_passed / tests_total, returncode, stderr (an excerpt).
    """

    name = "code"
    version = f"{CODE_SCORER_VERSION}.{SANDBOX_VERSION}"

    def __init__(self, context: ScoringContext, timeout_s: float = 5.0, memory_mb: int = 1024) -> None:
        self.context = context
        self.limits = Limits(timeout_s=float(timeout_s), memory_mb=int(memory_mb))

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        programs = [build_program(p, s.text or "") for p, s in zip(problems, samples)]
        pool, cache = sandbox_pool(self.context), code_cache(self.context)
        mode = pool.sandbox.mode
        keys = [prog.key(self.limits, mode) if prog is not None else None for prog in programs]
        todo: dict[str, TestProgram] = {}
        for k, prog in zip(keys, programs):
            if k is not None and prog is not None and cache.get(k) is None:
                todo.setdefault(k, prog)  # identical programs run once
        fresh: dict[str, RunOutcome] = {}
        if todo:
            markers = {k: f"__reasoneval_done_{secrets.token_hex(12)}__" for k in todo}
            results = pool.run_many([prog.source(markers[k]) for k, prog in todo.items()], self.limits)
            for (k, prog), r in zip(todo.items(), results):
                fresh[k] = outcome = judge(r, markers[k], len(prog.tests))
                if outcome.result != "sandbox_error":  # not cached: the sandbox's own failure may pass on a rerun
                    cache.put(k, outcome)
        out = []
        for k, prog in zip(keys, programs):
            if k is None or prog is None:
                out.append(Score(False, False, None, "no_answer", {"result": "no_code"}))
                continue
            o = fresh.get(k) or cache.get(k)
            assert o is not None
            status = {"timeout": "timeout", "sandbox_error": "error"}.get(o.result, "ok")
            correct = o.result == "passed"
            out.append(Score(correct, correct, prog.candidate, status, o.to_json()))
        return out
