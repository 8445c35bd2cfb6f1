"""The `codeforces` scorer: C++ and Python programs judged as Codeforces judges them (docs/contests.md, "Codeforces
judge"): the program's language from its fenced block, C++ compiled with g++ -O2 -std=c++17 inside the sandbox
under compile limits, each test run in a fresh limited process, the output compared as tokens, or read by the
problem's checker (testlib's protocol: input, output, answer files; exit 0 OK, 1 wrong answer, 2 presentation
error, 3 the checker failed; open-r1's generated_checker through codeforces/open_r1_checker.py's adapter), or an
interactive problem's program and interactor talking over pipes. A C++
checker or interactor that includes testlib.h gets it written beside it (codeforces/testlib.py says from where).

The samples of one problem run together, up to BATCH in one sandbox (sandbox/run.py's Sandbox.run with the trusted
driver native_driver.py, whose text gets prelude.py's in place of its import block, as the contest drivers do): the
problem's checker and interactor are built once per batch. Verdicts are cached in the run directory
(codeforces_runs.jsonl, a run_cache.ProgramRunCache of ContestRun lines; NativeJob.key says what they depend on).
The verdicts: passed, wrong_answer, time_limit, memory_limit, runtime_error, compile_error, idleness_limit
(interactive: no progress before the wall clock ran out), judge_error (a problem's checker or interactor that does
not build or fails), no_code, sandbox_error.

Settings: time_limit_s and memory_mb (where the problem has none; Codeforces' usual 2 s and 256 MB), all_tests,
calibrate (scale CPU limits by the machine: scoring/programs/calibrate.py), wall_factor, language (how an untagged
fenced block is read: python, cpp, or any = python).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import CODEFORCES_RUNS_FILE
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.programs.calibrate import time_limit_factor
from reasoneval.scoring.programs.codeforces.open_r1_checker import PROTOCOL as OPEN_R1_PROTOCOL
from reasoneval.scoring.programs.codeforces.open_r1_checker import open_r1_adapter
from reasoneval.scoring.programs.codeforces.testlib import TestlibHeader, find_testlib_header, needs_testlib
from reasoneval.scoring.programs.contest import ContestOutcome, ContestRun
from reasoneval.scoring.programs.run_cache import run_cache
from reasoneval.scoring.programs.sandbox.run import SANDBOX_VERSION, Limits, ProgramResult
from reasoneval.scoring.programs.sandbox.texts import with_prelude
from reasoneval.scoring.programs.scorer import fenced_blocks, sandbox_pool, strip_reasoning

CODEFORCES_SCORER_VERSION = "1"
NATIVE_DRIVER_SOURCE = with_prelude((Path(__file__).parent / "native_driver.py").read_text(encoding="utf-8"),
                                    "native_driver.py")
DRIVER_SHA256 = hashlib.sha256(NATIVE_DRIVER_SOURCE.encode("utf-8")).hexdigest()
LANGUAGE_TAGS = {"cpp": "cpp", "c++": "cpp", "cc": "cpp", "cxx": "cpp", "c++17": "cpp", "c++20": "cpp",
                 "python": "python", "python3": "python", "py": "python"}
LANGUAGES = ("python", "cpp", "any")
# g++ with <bits/stdc++.h> at -O2 takes a few seconds and a few hundred MB; Codeforces allows more than this.
COMPILE_LIMITS = {"cpu_s": 60.0, "wall_s": 120.0, "memory_mb": 2048}
VERDICT_KEYS = ("verdict", "passed", "ran", "total", "first", "cpu", "detail")
BATCH = 8  # programs of one problem in one sandbox run at most
GXX = "/usr/bin/g++"  # what native_driver.py runs


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def extract_program(text: str, default_language: str = "python") -> tuple[str, str] | None:
    """(language, source) of the response's last fenced block in a language the judge runs (after the reasoning);
    an untagged block is in `default_language`; None: no such block."""
    blocks = fenced_blocks(strip_reasoning(text))
    for tag, body in reversed(blocks):
        lang = LANGUAGE_TAGS.get(tag.strip().lower()) if tag.strip() else default_language
        if lang is not None and body.strip():
            return lang, body
    return None


@dataclass(frozen=True)
class NativeJob:
    """One program and the problem it is judged on."""

    language: str
    source: str
    tests: tuple[tuple[str, str], ...]
    cpu_s: float
    wall_s: float
    memory_mb: int
    all_tests: bool = False
    checker: tuple[str, str] | None = None  # (language, source)
    interactor: tuple[str, str] | None = None
    headers: tuple[tuple[str, str], ...] = ()  # (name, text) beside the checker and interactor: testlib.h

    def key(self) -> str:
        """The verdict's cache key: the judge (its version, the driver's text, the sandbox's), the program, the
        problem's tests, limits, checker, interactor and the headers beside them (testlib.h)."""
        blob = json.dumps([CODEFORCES_SCORER_VERSION, SANDBOX_VERSION, DRIVER_SHA256, self.language, self.source,
                           [list(t) for t in self.tests], self.cpu_s, self.wall_s, self.memory_mb, self.all_tests,
                           self.checker, self.interactor, [[n, _sha256(t)] for n, t in self.headers],
                           COMPILE_LIMITS])
        return _sha256(blob)

    def problem_settings(self) -> tuple[Any, ...]:
        """What the programs of one batch share: the problem and its limits."""
        return (self.tests, self.cpu_s, self.wall_s, self.memory_mb, self.all_tests, self.checker, self.interactor,
                self.headers)


@dataclass(frozen=True)
class NativeBatch:
    """Programs of one problem judged in one sandbox run, the problem's checker and interactor built once."""

    jobs: tuple[NativeJob, ...]

    def stdin(self) -> bytes:
        p = self.jobs[0]
        head = json.dumps({"programs": [{"language": j.language, "source": j.source} for j in self.jobs]},
                          ensure_ascii=True).encode("ascii")
        trusted = {"tests": [{"input": i, "output": o} for i, o in p.tests], "cpu_s": p.cpu_s,
                   "wall_s": p.wall_s, "memory_mb": p.memory_mb, "all_tests": p.all_tests,
                   "compare": "tokens", "compile": COMPILE_LIMITS,
                   "checker": {"language": p.checker[0], "source": p.checker[1]} if p.checker else None,
                   "interactor": {"language": p.interactor[0], "source": p.interactor[1]} if p.interactor else None,
                   "headers": dict(p.headers)}
        return b"%012d" % len(head) + head + json.dumps(trusted, ensure_ascii=True).encode("ascii")

    def limits(self) -> Limits:
        """The sandbox's own bounds: every compile (programs, checker, interactor) and test, with room."""
        p, count = self.jobs[0], len(self.jobs)
        n = max(1, len(p.tests)) * (2 if p.checker or p.interactor else 1) * count
        builds = count + (p.checker is not None) + (p.interactor is not None)
        wall = 10.0 + builds * COMPILE_LIMITS["wall_s"] + n * (p.wall_s + 0.5)
        return Limits(timeout_s=wall, memory_mb=max(int(COMPILE_LIMITS["memory_mb"]), p.memory_mb + 256) + 512,
                      cpu_s=int(math.ceil(wall)), nproc=64, tmp_mb=256, file_size_mb=256)


def read_verdicts(r: ProgramResult, total: int, count: int) -> list[dict[str, Any]]:
    """The driver's verdict line, one per program; anything else (the sandbox could not run, a malformed line) is a
    sandbox error for each: the programs never hold the verdict channel."""
    try:
        line = json.loads(r.channel or "")
    except ValueError:
        line = None
    got = line.get("verdicts") if isinstance(line, dict) else None
    if isinstance(got, list) and len(got) == count and all(
            isinstance(v, dict) and set(VERDICT_KEYS) <= set(v) and isinstance(v["verdict"], str)
            and v.get("total") == total for v in got):
        return [{k: v[k] for k in VERDICT_KEYS} for v in got]
    detail = line.get("error") if isinstance(line, dict) else None
    tail = (r.stderr.strip().splitlines() or [f"no verdict (sandbox {r.status})"])[-1]
    return [{"verdict": "sandbox_error", "passed": 0, "ran": 0, "total": total, "first": -1, "cpu": 0.0,
             "detail": str(detail or tail)[:300]}] * count


def run_jobs(context: ScoringContext, jobs: Sequence[NativeJob]) -> list[dict[str, Any]]:
    """The jobs' verdicts, in order: those in the run's cache (codeforces_runs.jsonl, lines
    of the contest scorer's ContestRun) as they were, the others run once each, the programs of one problem in batches of at most BATCH,
    one sandbox run each, as many at once as the pool has sandboxes. A sandbox error is not cached: it runs again."""
    cache = run_cache(context, CODEFORCES_RUNS_FILE, ContestRun)
    keys = [job.key() for job in jobs]
    todo: dict[str, NativeJob] = {}
    for k, job in zip(keys, jobs):
        if cache.get(k) is None:
            todo.setdefault(k, job)
    fresh = dict(zip(todo, _run_fresh(context, list(todo.values()))))
    for k, v in fresh.items():
        if v["verdict"] != "sandbox_error":
            cache.put(k, ContestOutcome(v["verdict"], v["passed"], v["ran"], v["total"], v["first"],
                                        float(v["cpu"]), v["detail"]))
    out = []
    for k in keys:
        got = fresh.get(k)
        if got is None:
            o = cache.get(k)
            assert o is not None
            got = {"verdict": o.verdict, "passed": o.tests_passed, "ran": o.tests_run, "total": o.tests_total,
                   "first": o.first_failure, "cpu": o.cpu_s, "detail": o.detail}
        out.append(got)
    return out


def _run_fresh(context: ScoringContext, jobs: Sequence[NativeJob]) -> list[dict[str, Any]]:
    if not jobs:
        return []
    pool = sandbox_pool(context)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(job.problem_settings(), []).append(i)
    batches = [idx[k:k + BATCH] for idx in groups.values() for k in range(0, len(idx), BATCH)]
    out: list[dict[str, Any] | None] = [None] * len(jobs)
    lock = threading.Lock()

    def one(idx: list[int]) -> None:
        batch = NativeBatch(tuple(jobs[i] for i in idx))
        r = pool.run_many([NATIVE_DRIVER_SOURCE], batch.limits(), stdins=[batch.stdin()])[0]
        verdicts = read_verdicts(r, len(batch.jobs[0].tests), len(idx))
        with lock:
            for i, v in zip(idx, verdicts):
                out[i] = v

    with ThreadPoolExecutor(max_workers=pool.workers) as ex:
        list(ex.map(one, batches))
    return [o for o in out if o is not None]


def require_compiler() -> None:
    """C++ is compiled with the system's g++ inside the sandbox (which sees /usr): a missing one is the setup's fault,
    not a compile error of every program."""
    if not Path(GXX).is_file():
        raise UserError(f"the codeforces judge compiles C++ with {GXX}, which is missing: install g++ "
                        "(apt-get install g++), or ask for Python programs (--task-arg language=python)")


class CodeforcesScorer:
    """Each sample's program judged on every test of its problem (stopping at the first failure unless all_tests);
    correct = every test passed."""

    name = "codeforces"
    version = f"{CODEFORCES_SCORER_VERSION}.{SANDBOX_VERSION}"
    needs_calibration = True  # its CPU limits are scaled by the run's calibration.json (scoring.needs_calibration)

    def __init__(self, context: ScoringContext, time_limit_s: float = 2.0, memory_mb: int = 256,
                 all_tests: bool = False, calibrate: bool = True, wall_factor: float = 10.0,
                 language: str = "any") -> None:
        if language not in LANGUAGES:
            raise UserError(f"codeforces scorer: language must be one of {', '.join(LANGUAGES)}, got {language!r}")
        self.context = context
        self.time_limit_s = float(time_limit_s)
        self.memory_mb = int(memory_mb)
        self.all_tests = bool(all_tests)
        self.calibrate = bool(calibrate)
        self.wall_factor = float(wall_factor)
        self.language = language

    def factor(self) -> float:
        return time_limit_factor(self.context, self.calibrate)

    def job(self, problem: Problem, response: str) -> NativeJob | None:
        program = extract_program(response, "cpp" if self.language == "cpp" else "python")
        if program is None:
            return None
        pl: Mapping[str, Any] = problem.payload
        cpu = round(float(pl.get("time_limit_s") or self.time_limit_s) * self.factor(), 3)

        def source(key: str) -> tuple[str, str] | None:
            v = pl.get(key)
            if isinstance(v, Mapping) and v.get("source"):
                protocol = v.get("protocol") or "testlib"
                if protocol == OPEN_R1_PROTOCOL and key == "checker":  # open-r1's generated_checker, adapted
                    return "python", open_r1_adapter(str(v["source"]))
                if protocol != "testlib":
                    raise UserError(f"problem {problem.id}: its {key} has protocol {protocol!r}; the judge runs "
                                    f"'testlib' (input output answer, exit status) and, for checkers, "
                                    f"{OPEN_R1_PROTOCOL!r} (open-r1's generated_checker)")
                return str(v.get("language") or "python"), str(v["source"])
            return ("python", v) if isinstance(v, str) and v.strip() else None

        checker, interactor = source("checker"), source("interactor")
        if "cpp" in (program[0], *(x[0] for x in (checker, interactor) if x)):
            require_compiler()
        headers: tuple[tuple[str, str], ...] = ()
        if any(x is not None and x[0] == "cpp" and needs_testlib(x[1]) for x in (checker, interactor)):
            header: TestlibHeader = self.context.resource("testlib_h", find_testlib_header)
            headers = (("testlib.h", header.text),)
        return NativeJob(language=program[0], source=program[1],
                         tests=tuple((str(t["input"]), str(t["output"])) for t in pl.get("tests") or ()),
                         cpu_s=cpu, wall_s=round(cpu * self.wall_factor + 1.0, 3),
                         memory_mb=int(pl.get("memory_mb") or self.memory_mb), all_tests=self.all_tests,
                         checker=checker, interactor=interactor, headers=headers)

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        jobs = [self.job(p, s.text or "") for p, s in zip(problems, samples)]
        todo = [j for j in jobs if j is not None]
        verdicts = iter(run_jobs(self.context, todo))
        out = []
        for p, j in zip(problems, jobs):
            if j is None:
                out.append(Score(False, False, None, "no_answer",
                                 {"verdict": "no_code", "tests_total": len(p.payload.get("tests") or ())}))
                continue
            v = next(verdicts)
            details: dict[str, Any] = {"verdict": v["verdict"], "tests_passed": v["passed"], "tests_run": v["ran"],
                                       "tests_total": v["total"], "cpu_s": v["cpu"], "detail": v["detail"],
                                       "language": j.language, "cpu_limit_s": j.cpu_s}
            if v["first"] >= 0:
                tests = p.payload.get("tests") or []
                kind = str(tests[v["first"]].get("kind", "test")) if v["first"] < len(tests) else "test"
                number = sum(1 for t in tests[:v["first"]] if t.get("kind", "test") == kind)
                details["first_failure"] = {"index": v["first"], "kind": kind, "number": number}
            status = {"time_limit": "timeout", "idleness_limit": "timeout", "sandbox_error": "error",
                      "judge_error": "error"}.get(v["verdict"], "ok")
            ok = v["verdict"] == "passed"
            out.append(Score(ok, ok, j.source, status, details))
        return out
