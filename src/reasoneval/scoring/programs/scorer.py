"""`code`: a response's program, run against the problem's tests in the sandbox (reasoneval.scoring.programs.sandbox).

Tests and candidate apart (scoring/programs/sandbox/driver.py, docs/sandbox.md): in each sandbox a trusted driver
forks the candidate's process (HumanEval: the problem's prompt + the extracted code; MBPP: the test imports + the
code) and runs the tests in its own interpreter, calling the candidate through pipes with values as plain data;
its verdict, one exact ASCII line after a `started` line, comes back on a channel the candidate never holds.
Objects of the candidate's own classes stay in its process: the tests hold handles to them (no shared mode).
Programs run in the sandbox pool (bounded concurrency, one fresh sandbox each), once: a program runs again only
when its candidate never started (the driver's `started` line, before any of its code, is missing). Results are
cached in the run's `code_runs.jsonl`, keyed by program, tests, limits and versions, so a resumed or re-scored
run does not run them again. Which part of an unfenced HumanEval answer is the program is decided in a worker under a time
budget (unfenced.py).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CODE_RUNS_FILE
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.programs.run_cache import run_cache
from reasoneval.scoring.programs.sandbox import DRIVER_SOURCE, SANDBOX_VERSION, Limits, ProgramResult, SandboxPool
from reasoneval.scoring.programs.unfenced import UnfencedParser, defines, unfenced_code
from reasoneval.serial import JsonRecord

CODE_SCORER_VERSION = "3"  # 3: an unfenced answer's cut found with at most three parses (unfenced.py)
STDERR_EXCERPT = 1200
# runs again when its candidate never started (the driver's `started` line missing: no code of its had run)
START_RETRIES = 2

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
                if defines(b, entry_point):
                    return b, True
        for b in blocks:
            if _DEFINES_ANY.search(b):
                return b, True
        return blocks[0], True
    text = text.strip("\n")
    if text.lstrip().startswith("[BEGIN]"):
        text = text.lstrip()[len("[BEGIN]"):].lstrip("\n")
    return text, False


# A line defining a function. Leading blanks are [^\S\n]* (not \s*, which also crosses newlines and made the
# search quadratic on runs of blank lines); a def after blank lines still matches, at its own line.
_DEFINES_ANY = re.compile(r"^[^\S\n]*def\s+\w+\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class TestProgram:
    """What runs for one sample (scoring/programs/sandbox/driver.py): the candidate's module, and the tests that judge it.

    The tests always run in a trusted interpreter of their own: `prelude` (trusted text: HumanEval's prompt, MBPP's
    test imports), each name of `proxies` calling into the candidate's process, each name of `constants` bound to
    the candidate's value of it, then `setup` (MBPP's test_setup_code) and the tests. Values cross as data; the
    candidate's own objects stay in its process and the tests hold handles to them.
    """

    code: str  # the candidate's module (HumanEval: prompt + completion; MBPP: test imports + code)
    tests: tuple[str, ...]
    prelude: str = ""
    proxies: tuple[str, ...] = ()
    # the response's own code (the Score's answer; `code` may have the problem's prompt before it)
    candidate: str = ""
    setup: str = ""
    constants: tuple[str, ...] = ()

    def key(self, limits: Limits, mode: str) -> str:
        blob = json.dumps([CODE_SCORER_VERSION, SANDBOX_VERSION, mode, limits.key(), self.code, self.prelude,
                           list(self.proxies), self.setup, list(self.constants), list(self.tests)])
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def stdin(self) -> bytes:
        """The driver's input: the candidate's part (length-prefixed), then the trusted part (ASCII JSON)."""
        cand = {"code": self.code, "preload": _imported_modules(self.prelude)}
        head = json.dumps(cand, ensure_ascii=True).encode("ascii")
        trusted = json.dumps({"prelude": self.prelude, "proxies": list(self.proxies), "globals": list(self.constants),
                              "setup": self.setup, "tests": list(self.tests)}, ensure_ascii=True).encode("ascii")
        return b"%012d" % len(head) + head + trusted


def _imported_modules(code: str) -> list[str]:
    """The top-level modules that trusted code (a prelude) imports."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    out: dict[str, None] = {}
    for n in tree.body:
        if isinstance(n, ast.Import):
            out.update((a.name, None) for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out[n.module] = None
    return list(out)


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names read, names bound) anywhere in `tree`."""
    read: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (read if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
    return read, bound


@dataclass(frozen=True)
class MbppSplit:
    """How an MBPP task's tests run apart from the candidate (TestProgram's trusted fields)."""

    prelude: str
    proxies: tuple[str, ...]
    constants: tuple[str, ...]


def mbpp_split(reference: str, tests: Sequence[str], imports: str, setup: str) -> MbppSplit:
    """How MBPP tests run apart from the candidate, decided from the benchmark's own text only (its reference
    solution, tests and set-up, never the response). Every name the tests and set-up read and do not bind, import
    or find among the builtins is the candidate's: a function or class (or an unknown name) becomes a name proxy
    (a call of the candidate's object of that name; a class's instances stay in its process as handles), a
    constant of the reference a global fetched from the candidate; an import of the reference joins the prelude.
    A name of the reference shadows the builtin of that name (mbpp-125's `sum`)."""
    with warnings.catch_warnings():  # the benchmark's text ("\w" in a str literal): not the user's business
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        return _mbpp_split(reference, tests, imports, setup)


def _mbpp_split(reference: str, tests: Sequence[str], imports: str, setup: str) -> MbppSplit:
    try:
        ref = ast.parse(reference)
    except (SyntaxError, ValueError):
        ref = ast.parse("")
    trees = []
    for code in (*tests, setup):
        try:
            trees.append(ast.parse(code))
        except (SyntaxError, ValueError):
            continue  # a test that does not parse fails in the driver as it is
    try:
        _, imported = _names(ast.parse(imports))
    except (SyntaxError, ValueError):
        imported = set()
    callables = {n.name for n in ref.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    constants = {t.id for n in ref.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    ref_imports = {(a.asname or a.name).split(".")[0]: ast.get_source_segment(reference, n) or ""
                   for n in ref.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    bound: set[str] = set()
    read: set[str] = set()
    for tree in trees:
        r, b = _names(tree)
        read |= r
        bound |= b
    proxies: set[str] = set()
    remote: set[str] = set()
    prelude = [imports]
    for name in sorted(read - bound - imported):
        if name in callables:
            proxies.add(name)
        elif name in constants:
            remote.add(name)
        elif name in ref_imports:
            if ref_imports[name] not in prelude:
                prelude.append(ref_imports[name])
        elif name not in dir(builtins):
            proxies.add(name)  # not the reference's: whatever the candidate has of that name, called
    return MbppSplit("\n".join(p for p in prelude if p), tuple(sorted(proxies)), tuple(sorted(remote)))


def _humaneval_module(prompt: str, code: str, entry: str | None) -> str:
    # a complete function overrides the prompt's stub; a body continues it
    return f"{prompt}\n\n{code}" if entry is not None and defines(code, entry) else prompt + code


def build_program(problem: Problem, response: str,
                  unfenced: Callable[[str, str, str], str] = unfenced_code) -> TestProgram | None:
    """The test program for a HumanEval or MBPP problem and a response; None if the response has no code.

    unfenced(prompt, text, entry): the program part of an unfenced HumanEval answer. The default parses in this
    process, with no time bound: for text you trust. The code scorer passes `UnfencedParser.code` (a worker
    under a time budget; past it, ParseBudgetExceeded, and the sample is a harness error)."""
    pl = problem.payload
    if "entry_point" in pl:  # HumanEval
        entry = str(pl["entry_point"])
        prompt = str(pl.get("prompt", problem.problem))
        code, fenced = extract_code(response, entry)
        if not fenced:
            # completions API: the response continues the prompt's function body (or is a complete function)
            code = unfenced(prompt, strip_reasoning(response), entry)
        if not code.strip():
            return None
        return TestProgram(code=_humaneval_module(prompt, code, entry),
                           tests=(str(pl["test"]) + f"\ncheck({entry})\n",), prelude=prompt, proxies=(entry,),
                           candidate=code)
    if "test_list" in pl:  # MBPP (full: test_setup_code; sanitized: test_imports)
        code, _ = extract_code(response)
        if not code.strip():
            return None
        tests = tuple(str(t) for t in pl["test_list"])
        imports = "\n".join(map(str, pl.get("test_imports") or []))
        setup = str(pl.get("test_setup_code") or "")
        split = mbpp_split(str(pl.get("code") or ""), tests, imports, setup)
        return TestProgram(code=f"{imports}\n{code}\n", tests=tests, prelude=split.prelude, proxies=split.proxies,
                           constants=split.constants, setup=setup, candidate=code)
    raise UserError(f"code scorer: problem {problem.id} of task {problem.task} has neither HumanEval fields "
                    "(prompt, test, entry_point) nor MBPP fields (test_list)")


@dataclass(frozen=True)
class RunOutcome(JsonRecord):
    # "passed" | "failed" | "exited_early" | "timeout" | "sandbox_error" | "harness_error: ..."
    result: str
    tests_passed: int | None
    tests_total: int
    returncode: int | None
    stderr: str


@dataclass(frozen=True)
class CodeRun(JsonRecord):
    """One line of code_runs.jsonl: a program's key (ProgramSpec.key) and what running it gave."""

    key: str
    outcome: RunOutcome


# The driver's verdict channel (a pipe only the trusted side holds): `started\n` once the candidate's process
# exists and just before any of its code runs, then one line of ASCII digits (driver.py, "The verdict channel").
STARTED = "started\n"
_VERDICT = re.compile(r"([0-9]{1,9}) ([0-9]{1,9}) (ok|exited|killed)\n", re.ASCII)


def started(r: ProgramResult) -> bool:
    """The driver said that the candidate's code was about to run: from then on the run's verdict stands (no exit
    status, stderr text, OOM kill or exit of any process of the sandbox makes it run again)."""
    return (r.channel or "").startswith(STARTED)


def judge(r: ProgramResult, total: int) -> RunOutcome:
    """A sandboxed driver run -> its outcome. Passed = the candidate started, exit 0, and the verdict says every
    test passed. A run whose candidate never started is a `sandbox_error` (the scorer runs it again)."""
    stderr = r.stderr[-STDERR_EXCERPT:]
    if not started(r):  # the candidate never ran: whatever happened is the sandbox's (or the machine's)
        return RunOutcome("sandbox_error", None, total, r.returncode, stderr)
    m = _VERDICT.fullmatch((r.channel or "")[len(STARTED):])
    if r.status == "timeout":
        return RunOutcome("timeout", None, total, r.returncode, stderr)
    if m is None or int(m.group(2)) != total:
        return RunOutcome("failed", None, total, r.returncode, stderr)
    passed = int(m.group(1))
    if m.group(3) == "exited":
        return RunOutcome("exited_early", passed, total, r.returncode, stderr)
    if m.group(3) == "killed":  # a signal ended the candidate's process
        return RunOutcome("failed", passed, total, r.returncode, stderr)
    ok = r.status == "ok" and passed == total
    return RunOutcome("passed" if ok else "failed", passed, total, r.returncode, stderr)


def sandbox_pool(context: ScoringContext) -> SandboxPool:
    mode = os.environ.get("REASONEVAL_SANDBOX", "auto").strip() or "auto"
    pool: SandboxPool = context.resource("sandbox_pool", lambda: SandboxPool(workers=context.workers, mode=mode))
    return pool


class CodeScorer:
    """Runs the response's code against the problem's tests in the sandbox; correct = every test passed.

    Settings: timeout_s (wall clock per program, default 5), memory_mb (address space, default 1024).
    Details per sample: result (passed | failed | exited_early | timeout | no_code | sandbox_error |
    harness_error: ...), tests_passed / tests_total, returncode, stderr (an excerpt).
    """

    name = "code"
    version = f"{CODE_SCORER_VERSION}.{SANDBOX_VERSION}"

    def __init__(self, context: ScoringContext, timeout_s: float = Limits.timeout_s,
                 memory_mb: int = Limits.memory_mb) -> None:
        self.context = context
        self.limits = Limits(timeout_s=float(timeout_s), memory_mb=int(memory_mb))

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        programs: list[TestProgram | None | str] = []
        parser: UnfencedParser = self.context.resource("code_unfenced_parser", UnfencedParser)
        for p, s in zip(problems, samples):
            try:
                programs.append(build_program(p, s.text or "", parser.code))
            except UserError:
                raise  # a problem row without the fields: the task's data is wrong, not this sample
            except Exception as e:
                programs.append(_harness_error(e))
        pool, cache = sandbox_pool(self.context), run_cache(self.context, CODE_RUNS_FILE, CodeRun)
        mode = pool.sandbox.mode
        keys = [prog.key(self.limits, mode) if isinstance(prog, TestProgram) else None for prog in programs]
        todo: dict[str, TestProgram] = {}
        for k, prog in zip(keys, programs):
            if k is not None and isinstance(prog, TestProgram) and cache.get(k) is None:
                todo.setdefault(k, prog)  # identical programs run once
        fresh = self._run(pool, todo)
        for k, outcome in fresh.items():
            # not cached: the sandbox's own failure, or the harness's, may pass on a rerun
            if outcome.result != "sandbox_error" and not outcome.result.startswith("harness_error"):
                cache.put(k, outcome)
        out = []
        for k, prog in zip(keys, programs):
            if isinstance(prog, str):
                out.append(Score(False, False, None, "error", {"result": prog}))
                continue
            if k is None or prog is None:
                out.append(Score(False, False, None, "no_answer", {"result": "no_code"}))
                continue
            o = fresh.get(k) or cache.get(k)
            assert o is not None
            status = {"timeout": "timeout", "sandbox_error": "error"}.get(o.result, "ok")
            if o.result.startswith("harness_error"):
                status = "error"
            correct = o.result == "passed"
            out.append(Score(correct, correct, prog.candidate, status, o.to_json_dict()))
        return out

    def _run(self, pool: SandboxPool, todo: dict[str, TestProgram]) -> dict[str, RunOutcome]:
        """Run the programs, each once. One runs again (up to START_RETRIES times) only when its candidate never
        started: the driver's `started` line, written on a channel the candidate never holds before any of its
        code runs, is missing (the sandbox failed to start, a fork was refused, a timeout or OOM kill came first).
        Once it is there the verdict stands, whatever ends the run: nothing the program writes or does can earn
        it a re-run (docs/sandbox.md, "Re-runs")."""
        fresh: dict[str, RunOutcome] = {}
        pending = dict(todo)
        for attempt in range(START_RETRIES + 1):
            if not pending:
                break
            items = list(pending.items())
            try:
                results = pool.run_many([DRIVER_SOURCE] * len(items), self.limits,
                                        stdins=[prog.stdin() for _, prog in items])
            except Exception as e:
                return {**fresh, **{k: RunOutcome(_harness_error(e), None, len(p.tests), None, "")
                                    for k, p in items}}
            pending = {}
            for (k, prog), r in zip(items, results):
                try:
                    fresh[k] = judge(r, len(prog.tests))
                except Exception as e:
                    fresh[k] = RunOutcome(_harness_error(e), None, len(prog.tests), r.returncode, "")
                if attempt < START_RETRIES and not started(r):
                    pending[k] = prog
        return fresh


def _harness_error(e: BaseException) -> str:
    return f"harness_error: {type(e).__name__}: {str(e)[:300]}"
