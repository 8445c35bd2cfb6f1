"""`contest`: competition programs (stdin/stdout scripts and LeetCode-style `class Solution` calls) run against a
problem's tests in the code sandbox (docs/contests.md).

A problem's payload (tasks/contests.py writes it): `tests` ([{"input", "output", "kind": public|private|
generated}]), `mode` ("stdin" or "call"), `func_name` (call mode), and where the data has them `time_limit_s` and
`memory_mb`. The program is the response's last fenced block (lcb_runner's extraction), after LiveCodeBench's
import header; it runs under the trusted driver `sandbox/stdio_driver.py` (tests and candidate apart, every test's
expected output on the trusted side only), with CPU-time limits scaled by the machine's calibration
(calibrate.py). The verdict per sample: passed, wrong_answer, time_limit, memory_limit, runtime_error or no_code,
with the first failing test (its index, public or private, and its number among those).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CONTEST_RUNS_FILE
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.programs.calibrate import time_limit_factor
from reasoneval.scoring.programs.run_cache import run_cache
from reasoneval.scoring.programs.sandbox import SANDBOX_VERSION, Limits, ProgramResult
from reasoneval.scoring.programs.sandbox.fallback import SHM_BYTES, VAR_TMP_BYTES
from reasoneval.scoring.programs.sandbox.session import SessionSlots
from reasoneval.scoring.programs.sandbox.texts import STDIO_DRIVER_BOOT, STDIO_DRIVER_PREAMBLE
from reasoneval.scoring.programs.scorer import sandbox_pool, strip_reasoning
from reasoneval.serial import JsonRecord

CONTEST_SCORER_VERSION = "1"
# compile_error, idleness_limit, judge_error: the codeforces scorer's (scoring/programs/codeforces/judge.py)
VERDICTS = ("passed", "wrong_answer", "time_limit", "memory_limit", "runtime_error", "no_code", "sandbox_error",
            "compile_error", "idleness_limit", "judge_error")
COMPARES = ("lcb", "tokens")
BATCH = 8  # samples of one problem in one sandbox at most (the verdict line stays under 4 KiB)

# lcb_runner's header (lcb_runner/evaluation/testing_util.py `import_string`), put before every program there: a
# solution may use `List`, `defaultdict`, `heappush`, ... without importing them.
LCB_IMPORTS = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\nfrom heapq import *\n"
    "from bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\nfrom statistics import *\n"
    "from itertools import *\nfrom functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\nimport datetime\n"
    "import collections\nimport heapq\nimport bisect\nimport copy\nimport math\nimport random\nimport statistics\n"
    "import itertools\nimport functools\nimport operator\nimport io\nimport sys\nimport json\n"
    "sys.setrecursionlimit(50000)\n")
# The modules the keeper imports before any test (each test's process is a fork of it): the header's, and what a
# program commonly imports besides. Not `threading`: once imported, every fork runs its after-fork step (~0.5 ms of
# CPU per test's process, measured); a program that imports it pays that in its own tests only.
PRELOAD = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
           "itertools", "functools", "operator", "io", "json", "typing", "resource", "traceback", "decimal",
           "fractions")
# What the lean keeper, which judges stdin programs, imports (keeper.py): modules cheap in memory (~0.5 MiB together)
# that most programs use. The rest of PRELOAD (~2.3 MiB: re, typing, statistics, json, ...) is imported per sample,
# only where the program uses a name of the header's that needs it or imports the module: every MiB a test's process
# is a copy of costs each test ~0.065 ms of CPU (docs/benchmarks.md).
BASE_PRELOAD = ("collections", "heapq", "bisect", "math", "itertools", "functools", "operator", "io")
# Standard-library modules that do nothing but define names when imported (no output, no process, no file, no
# network). A sample's keeper imports those a program names before the program's tests start, once per sample: each
# test's process, a fork, then finds them loaded, as PRELOAD's (importing zlib in a fresh fork costs ~0.45 ms, per
# test). The program itself still runs every import statement of its own in every test.
IMPORTS_AHEAD = ("array", "zlib", "hashlib", "binascii", "base64", "struct", "queue", "threading", "cmath", "numbers",
                 "enum", "dataclasses", "textwrap", "pprint", "calendar", "secrets", "contextlib", "abc", "weakref",
                 "unicodedata", "difflib", "graphlib", "collections.abc", "fractions", "decimal", "copy", "time",
                 "gc", "ast", "sched", "shlex", "csv", "string", "numbers", "fnmatch", "glob", "keyword", "bz2",
                 "lzma", "zoneinfo", "locale", "signal", "errno", "select", "stat", "math", "bisect", "heapq")
_FENCE_LINE = re.compile(r"```")


def extract_last_block(text: str) -> str | None:
    """lcb_runner's `extract_code`: the lines between the last two lines holding ```; None if fewer than two.
    Applied to the answer after the last `</think>` (reasoning is not code)."""
    lines = strip_reasoning(text).split("\n")
    marks = [i for i, line in enumerate(lines) if "```" in line]
    if len(marks) < 2:
        return None
    return "\n".join(lines[marks[-2] + 1:marks[-1]])


@dataclass(frozen=True)
class ContestOutcome(JsonRecord):
    verdict: str
    tests_passed: int
    tests_run: int
    tests_total: int
    first_failure: int  # index into the problem's tests; -1: none
    cpu_s: float
    detail: str


@dataclass(frozen=True)
class ContestRun(JsonRecord):
    """One line of contest_runs.jsonl: a program's key and what running it gave."""

    key: str
    outcome: ContestOutcome


@dataclass(frozen=True)
class ContestProgram:
    code: str  # the program as run (the header, then the response's code)
    candidate: str  # the response's code
    mode: str
    func_name: str
    tests: tuple[tuple[str, str], ...]
    cpu_s: float
    wall_s: float
    memory_mb: int
    compare: str
    all_tests: bool

    def settings(self) -> tuple[Any, ...]:
        """What programs must share to run in one sandbox: the problem's tests and every limit."""
        return (self.mode, self.func_name, self.tests, self.cpu_s, self.wall_s, self.memory_mb, self.compare,
                self.all_tests)

    def key(self) -> str:
        blob = json.dumps([CONTEST_SCORER_VERSION, SANDBOX_VERSION, self.code, self.mode, self.func_name,
                           list(self.tests), self.cpu_s, self.wall_s, self.memory_mb, self.compare, self.all_tests])
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()



@dataclass(frozen=True)
class Batch:
    """Programs of one problem (samples) judged together, one after the other, each test in a fresh process in fresh
    namespaces and with every process and scratch file of the test before gone (sandbox/keeper.py), by the worker's
    sandbox session (sandbox/session.py: a sandbox's start and the keeper's imports paid once per worker)."""

    programs: tuple[ContestProgram, ...]

    @property
    def first(self) -> ContestProgram:
        return self.programs[0]

    def limits(self) -> Limits:
        p = self.first
        n = max(1, len(p.tests)) * len(self.programs)
        data_mb = sum(len(i) + len(o) for i, o in p.tests) >> 20
        return Limits(timeout_s=10.0 + n * (p.wall_s + 0.5), memory_mb=max(1024, p.memory_mb + 256) + 4 * data_mb,
                      cpu_s=int(math.ceil(10 + n * (p.cpu_s + 1))), nproc=32, isolate_tests=True)

    def stdin(self) -> bytes:
        p = self.first
        # the private scratch directories and their sizes (the keeper empties them between tests: stdio_driver.py)
        scratch = [["/tmp", self.limits().tmp_mb << 20], ["/var/tmp", VAR_TMP_BYTES], ["/dev/shm", SHM_BYTES]]
        cand = {"codes": [q.code for q in self.programs], "mode": p.mode, "func_name": p.func_name,
                "preload": list(PRELOAD), "base": list(BASE_PRELOAD), "header": LCB_IMPORTS,
                "ahead": list(dict.fromkeys(IMPORTS_AHEAD + PRELOAD)), "scratch": scratch}
        trusted = {"tests": [{"input": i, "output": o} for i, o in p.tests], "programs": len(self.programs),
                   "mode": p.mode, "compare": p.compare, "cpu_s": p.cpu_s, "wall_s": p.wall_s,
                   "memory_mb": p.memory_mb, "all_tests": p.all_tests,
                   "max_output": max(1 << 20, 4 * max((len(o) for _, o in p.tests), default=0)),
                   "pid_max": pid_max()}
        # two parts, each a 12-digit length and its JSON (the driver reads batch after batch: sandbox/session.py)
        parts = [json.dumps(x, ensure_ascii=True).encode("ascii") for x in (cand, trusted)]
        return b"".join(b"%012d" % len(part) + part for part in parts)


def pid_max() -> int:
    """The kernel's highest PID + 1 (a sandbox's namespace, which has no /proc, gives out its PIDs up to it, then
    from 300 again: watch.py looks for a test's processes in that order)."""
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return 1 << 22


def problem_tests(problem: Problem) -> list[dict[str, Any]]:
    tests = problem.payload.get("tests")
    if not isinstance(tests, list) or not tests:
        raise UserError(f"contest scorer: problem {problem.id} of task {problem.task} has no tests in its payload "
                        "(a list of {input, output, kind})")
    return tests


def failure_place(tests: Sequence[Mapping[str, Any]], index: int) -> dict[str, Any]:
    """The first failing test: its index, its kind (public/private/generated) and its number among that kind."""
    kind = str(tests[index].get("kind") or "test")
    number = sum(1 for t in tests[:index] if str(t.get("kind") or "test") == kind)
    return {"index": index, "kind": kind, "number": number}


class ContestScorer:
    """Runs the response's program against every test of the problem (stopping at the first failure unless
    `all_tests`); correct = every test passed.

    Settings: time_limit_s (per test, before calibration, where the problem has none; lcb_runner: 6), memory_mb
    (where the problem has none), compare ("lcb": lcb_runner's line/Decimal rule; "tokens": APPS/TACO's token rule
    with numpy's allclose tolerance), all_tests, calibrate (scale CPU limits by the machine; default true),
    wall_factor (the wall-clock guard per test is this times the CPU limit, plus one second: it ends a program
    that waits, and is wide enough that a CPU-bound program sharing a loaded machine's cores does not reach it).
    """

    name = "contest"
    version = f"{CONTEST_SCORER_VERSION}.{SANDBOX_VERSION}"
    needs_calibration = True  # its CPU limits are scaled by the run's calibration.json (scoring.needs_calibration)

    def __init__(self, context: ScoringContext, time_limit_s: float = 6.0, memory_mb: int = 1024,
                 compare: str = "lcb", all_tests: bool = False, calibrate: bool = True,
                 wall_factor: float = 10.0) -> None:
        if compare not in COMPARES:
            raise UserError(f"contest scorer: compare must be one of {', '.join(COMPARES)}, got {compare!r}")
        self.context = context
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = int(memory_mb)
        self.compare = compare
        self.all_tests = bool(all_tests)
        self.wall_factor = float(wall_factor)
        self.calibrate = bool(calibrate)

    def factor(self) -> float:
        return time_limit_factor(self.context, self.calibrate)

    def build(self, problem: Problem, response: str) -> ContestProgram | None:
        code = extract_last_block(response)
        if code is None or not code.strip():
            return None
        pl = problem.payload
        tests = problem_tests(problem)
        mode = str(pl.get("mode") or "stdin")
        limit = float(pl.get("time_limit_s") or self.time_limit_s)
        cpu = round(limit * self.factor(), 3)
        return ContestProgram(
            code=LCB_IMPORTS + "\n" + code, candidate=code, mode=mode, func_name=str(pl.get("func_name") or ""),
            tests=tuple((str(t["input"]), str(t["output"])) for t in tests), cpu_s=cpu,
            wall_s=round(cpu * self.wall_factor + 1.0, 3), memory_mb=int(pl.get("memory_mb") or self.memory_mb),
            compare=str(pl.get("compare") or self.compare), all_tests=self.all_tests)

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        programs: list[ContestProgram | None] = [self.build(p, s.text or "") for p, s in zip(problems, samples)]
        cache = run_cache(self.context, CONTEST_RUNS_FILE, ContestRun)
        keys = [prog.key() if prog is not None else None for prog in programs]
        todo: dict[str, ContestProgram] = {}
        for k, prog in zip(keys, programs):
            if k is not None and prog is not None and cache.get(k) is None:
                todo.setdefault(k, prog)
        fresh = self._run(todo)
        for k, outcome in fresh.items():
            if outcome.verdict != "sandbox_error":
                cache.put(k, outcome)
        out = []
        for p, k, prog in zip(problems, keys, programs):
            if k is None or prog is None:
                out.append(Score(False, False, None, "no_answer", {"verdict": "no_code", "tests_total": len(
                    problem_tests(p))}))
                continue
            o = fresh.get(k) or cache.get(k)
            assert o is not None
            details: dict[str, Any] = o.to_json_dict()
            if o.first_failure >= 0:
                details["first_failure"] = failure_place(problem_tests(p), o.first_failure)
            else:
                del details["first_failure"]
            details.update(cpu_limit_s=prog.cpu_s, mode=prog.mode)
            status = {"time_limit": "timeout", "sandbox_error": "error"}.get(o.verdict, "ok")
            ok = o.verdict == "passed"
            out.append(Score(ok, ok, prog.candidate, status, details))
        return out

    def _run(self, todo: dict[str, ContestProgram]) -> dict[str, ContestOutcome]:
        """Run the programs, samples of one problem together in batches of at most BATCH, the batches in parallel
        across the pool's sandboxes, each once (a sandbox error is not cached: the next scoring runs it again)."""
        if not todo:
            return {}
        pool = sandbox_pool(self.context)
        groups: dict[tuple[Any, ...], list[tuple[str, ContestProgram]]] = {}
        for k, prog in todo.items():
            groups.setdefault(prog.settings(), []).append((k, prog))
        batches = [items[i:i + BATCH] for items in groups.values() for i in range(0, len(items), BATCH)]
        # the longest first (tests x programs): a long batch started last would leave the other workers idle at the end
        batches.sort(key=lambda items: len(items) * len(items[0][1].tests), reverse=True)
        results: dict[str, ContestOutcome] = {}
        lock = threading.Lock()

        def one(items: list[tuple[str, ContestProgram]]) -> None:
            outcomes = run_batch(items)
            if len(items) > 1 and any(o.verdict == "sandbox_error" for o in outcomes):
                # One program may have broken the batch's sandbox for the programs after it: each program left
                # without a verdict runs again alone, so its neighbour's behaviour never decides its verdict.
                for i, ((k, prog), o) in enumerate(zip(items, outcomes)):
                    if o.verdict == "sandbox_error":
                        outcomes[i] = run_batch([(k, prog)])[0]
            with lock:
                results.update({k: o for (k, _), o in zip(items, outcomes)})

        sessions: SessionSlots = self.context.resource("contest_sessions", lambda: SessionSlots(pool))

        def run_batch(items: list[tuple[str, ContestProgram]]) -> list[ContestOutcome]:
            batch = Batch(tuple(p for _, p in items))
            r = sessions.run(STDIO_DRIVER_BOOT, batch.limits(), batch.stdin(), STDIO_DRIVER_PREAMBLE)
            return judge(r, len(batch.first.tests), len(items))

        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=pool.workers) as ex:
            list(ex.map(one, batches))
        return results


_VERDICT_KEYS: dict[str, Any] = {"verdict": str, "passed": int, "ran": int, "total": int, "first": int, "cpu": (int, float),
                 "detail": str}


def judge(r: ProgramResult, total: int, count: int) -> list[ContestOutcome]:
    """The driver's verdict line -> each program's outcome; anything else (a sandbox that could not run, a
    malformed line) is a sandbox error for every program: the candidates never hold the verdict channel."""
    try:
        line = json.loads(r.channel or "")
        got = line["verdicts"] if isinstance(line, dict) and set(line) == {"verdicts"} else None
    except (ValueError, RecursionError):  # any text at all: a malformed line, however deep
        got = None
    if not isinstance(got, list) or len(got) != count:
        why = "the whole run went over its time" if r.status == "timeout" else (
            r.stderr.strip().splitlines() or [f"no verdict (sandbox {r.status}, exit status {r.returncode}, "
                                              f"{r.wall_s:.1f} s)"])[-1]
        return [ContestOutcome("sandbox_error", 0, 0, total, -1, 0.0, why[:300])] * count
    return [_outcome(v, total) for v in got]


def _outcome(v: Any, total: int) -> ContestOutcome:
    if not (isinstance(v, dict) and set(v) == set(_VERDICT_KEYS)
            and all(isinstance(v[key], t) for key, t in _VERDICT_KEYS.items())
            and v["verdict"] in VERDICTS and v["total"] == total and -1 <= v["first"] < total):
        detail = str(v.get("detail", ""))[:300] if isinstance(v, dict) else ""
        return ContestOutcome("sandbox_error", 0, 0, total, -1, 0.0, detail or "malformed verdict")
    return ContestOutcome(v["verdict"], v["passed"], v["ran"], total, v["first"], float(v["cpu"]), v["detail"][:300])
