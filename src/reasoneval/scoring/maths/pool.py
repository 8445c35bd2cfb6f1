"""Worker processes with hard wall-time and memory limits, a dedupe layer and an on-disk cache."""

from __future__ import annotations

import json
import os
import pathlib
import selectors
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence, TypeVar

from reasoneval.errors import UserError
from reasoneval.records import CHOICE_LETTERS
from reasoneval.scoring.base import GRADING_TIMEOUT_S
from reasoneval.scoring.maths.extract import (
    SHORT_RESPONSE_CHARS,
    extract_answer,
    extract_choice,
    has_answer_phrase,
    last_boxed,
)
from reasoneval.scoring.maths.normalize import DEFAULT_APPROX, DEFAULT_UNITS, Policy, answer_key, cheap_compare
from reasoneval.serial import JsonRecord
from reasoneval.workers import JsonLines, spawn

T = TypeVar("T")

# Bump when any grading rule changes: cache entries written under another version are ignored.
GRADER_VERSION = "3"
DEFAULT_MAX_SYMBOLIC_CHARS = 1000
_PRESTART_ITEMS = 256

STATUSES = ("ok", "no_answer", "timeout", "error")


@dataclass(frozen=True)
class Grade:
    correct: bool
    extracted: str | None
    status: str  # "ok" | "no_answer" | "timeout" | "error"


@dataclass(frozen=True)
class GradeItem:
    response: str
    reference: str
    kind: str = "math"
    finish_reason: str | None = None
    rel_tol: float | None = None
    # Per-task conventions (normalize.py, docs/grading.md "Policy"): how a decimal approximation meets an exact
    # value ("digits" | "measured" | "exact") and whether units count ("ignore" | "strict"); None = default.
    approx: str | None = None
    units: str | None = None


class _Worker:
    """One worker interpreter (`python -m reasoneval.scoring.maths._worker`) talking JSON lines over pipes."""

    def __init__(self, memory_mb: int) -> None:
        # One thread per worker unless the user chose otherwise: the pool runs one worker per core.
        env = {} if "OMP_NUM_THREADS" in os.environ else {"OMP_NUM_THREADS": "1"}
        self.proc = spawn("reasoneval.scoring.maths._worker", str(memory_mb), env=env,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          close_fds=True, start_new_session=True)
        self.channel = JsonLines.to_process(self.proc)
        assert self.channel.read_fd is not None
        self.fd = self.channel.read_fd
        os.set_blocking(self.fd, False)
        self.ready = False
        self.job: int | None = None
        self.deadline = 0.0

    def send(self, msg: dict[str, Any]) -> None:
        self.channel.send(msg)

    def read_lines(self) -> list[dict[str, Any]] | None:
        """Complete messages now available; None when the worker has exited (EOF)."""
        try:
            return self.channel.recv_ready()
        except OSError:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._reap()

    def stop(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()  # EOF on stdin: the worker's loop ends
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        self.kill()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


CacheKey = tuple[str, str, str, float | None, str, str]  # pred key, ref, kind, rel_tol, approx, units


@dataclass(frozen=True, kw_only=True)
class GradeLine(JsonRecord):
    """One line of a run's grades.jsonl: whether the grader (at grader_version) found pred equal to ref."""

    grader_version: str
    pred: str
    ref: str
    kind: str
    rel_tol: float | None
    approx: str = DEFAULT_APPROX  # (lines written before these settings lack them)
    units: str = DEFAULT_UNITS
    equal: bool

    def key(self) -> CacheKey:
        tol = None if self.rel_tol is None else float(self.rel_tol)
        return (self.pred, self.ref, self.kind, tol, str(self.approx), str(self.units))


class GradingPool:
    """Parallel, time- and memory-bounded grading with dedupe and a persistent cache.

    Use as a context manager, or call close(). Workers start lazily: a batch decided entirely by
    the cache and the parent's cheap checks starts no process.
    """

    def __init__(
        self,
        workers: int | None = None,
        timeout_s: float = GRADING_TIMEOUT_S,
        memory_mb: int = 2048,
        cache_path: pathlib.Path | None = None,
        max_symbolic_chars: int = DEFAULT_MAX_SYMBOLIC_CHARS,
    ) -> None:

        n = workers if workers is not None else (os.cpu_count() or 1)
        if n < 1:
            raise UserError(f"grading workers must be >= 1, got {n}: pass workers=None for one per CPU")
        if timeout_s <= 0:
            raise UserError(f"grading timeout_s must be > 0, got {timeout_s}")
        self.n_workers = n
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.max_symbolic_chars = int(max_symbolic_chars)
        self.cache_path = pathlib.Path(cache_path) if cache_path is not None else None
        self._cache: dict[CacheKey, bool] = {}
        self._workers: list[_Worker] = []
        self._job_seq = 0
        self.stats = {"pairs": 0, "cache_hits": 0, "cheap": 0, "symbolic": 0, "timeouts": 0, "errors": 0}
        if self.cache_path is not None:
            self._load_cache()

    # -- cache -------------------------------------------------------------------------------
    def _load_cache(self) -> None:
        assert self.cache_path is not None
        if not self.cache_path.exists():
            return
        with open(self.cache_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    grade = GradeLine.from_json_dict(json.loads(line))
                    if grade.grader_version != GRADER_VERSION:
                        continue
                    self._cache[grade.key()] = bool(grade.equal)
                except (ValueError, TypeError, AttributeError, UserError):
                    continue  # a torn last line (crash mid-write) or a foreign line is skipped

    def _store(self, entries: list[tuple[CacheKey, bool]]) -> None:
        for key, eq in entries:
            self._cache[key] = eq
        if self.cache_path is None or not entries:
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for (pred, ref, kind, tol, approx, units), eq in entries:
            grade = GradeLine(grader_version=GRADER_VERSION, pred=pred, ref=ref, kind=kind, rel_tol=tol, approx=approx,
                              units=units, equal=eq)
            lines.append(json.dumps(grade.to_json_dict(), ensure_ascii=False))
        with open(self.cache_path, "a", encoding="utf-8") as f:
            # If the previous writer died mid-line, start on a fresh line so only that line is lost.
            if f.tell() > 0:
                with open(self.cache_path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        f.write("\n")
            f.write("\n".join(lines) + "\n")

    # -- workers -----------------------------------------------------------------------------
    def _spawn(self) -> _Worker:
        return _Worker(self.memory_mb)

    def run_jobs(self, jobs: Sequence[tuple[str, tuple[Any, ...]]]) -> list[tuple[str, Any]]:
        """Run (op, args) jobs in the workers; per job ("ok", value) | ("timeout", None) | ("error", msg).

        A job's wall time starts when it is sent to a ready worker; past it the worker is killed and replaced.
        """
        results: list[tuple[str, Any] | None] = [None] * len(jobs)
        if not jobs:
            return []
        while len(self._workers) < min(self.n_workers, len(jobs)):
            self._workers.append(self._spawn())
        pending = list(range(len(jobs) - 1, -1, -1))  # a stack, popped in order
        ids: dict[int, int] = {}
        remaining = len(jobs)
        start_failures = 0
        sel = selectors.DefaultSelector()
        try:
            registered: dict[int, _Worker] = {}
            while remaining:
                for w in self._workers:
                    if w.fd not in registered:
                        sel.register(w.fd, selectors.EVENT_READ)
                        registered[w.fd] = w
                    if w.ready and w.job is None and pending:
                        j = pending.pop()
                        self._job_seq += 1
                        try:
                            w.send({"id": self._job_seq, "op": jobs[j][0], "args": list(jobs[j][1])})
                        except (OSError, ValueError):
                            pending.append(j)
                            self._replace(w, sel, registered)
                            continue
                        ids[self._job_seq] = j
                        w.job = self._job_seq
                        w.deadline = time.monotonic() + self.timeout_s
                busy = [w for w in self._workers if w.job is not None]
                now = time.monotonic()
                wait_s = min((w.deadline for w in busy), default=now + 60.0) - now
                for key, _ in sel.select(timeout=max(0.0, wait_s)):
                    w = registered[int(key.fd)]
                    msgs = w.read_lines()
                    if msgs is None:  # the worker died (e.g. killed by the kernel at its memory limit)
                        if not w.ready:
                            start_failures += 1
                            if start_failures >= 3:

                                self.close()
                                raise UserError(
                                    "grading workers exit before they are ready: run "
                                    "`python -m reasoneval.scoring.maths._worker 0` to see why"
                                )
                        if w.job is not None:
                            results[ids.pop(w.job)] = ("error", "worker died")
                            remaining -= 1
                        self._replace(w, sel, registered)
                        continue
                    for m in msgs:
                        if "fatal" in m:

                            self.close()
                            raise UserError(
                                f"a grading worker cannot start ({m['fatal']}): check that math-verify is installed "
                                "(pip install 'math-verify[antlr4_11_0]' 'antlr4-python3-runtime>=4.11,<4.12') and memory_mb "
                                "is large enough"
                            )
                        if m.get("ready"):
                            w.ready = True
                        elif w.job is not None and m.get("id") == w.job:
                            results[ids.pop(w.job)] = (m.get("status", "error"), m.get("value"))
                            remaining -= 1
                            w.job = None
                now = time.monotonic()
                for w in list(self._workers):
                    if w.job is not None and now >= w.deadline:
                        results[ids.pop(w.job)] = ("timeout", None)
                        remaining -= 1
                        w.job = None
                        self._replace(w, sel, registered)
        finally:
            sel.close()
        return [r if r is not None else ("error", "lost") for r in results]

    def _replace(self, w: _Worker, sel: selectors.BaseSelector, registered: dict[int, _Worker]) -> None:
        if registered.pop(w.fd, None) is not None:
            sel.unregister(w.fd)
        w.kill()
        idx = self._workers.index(w)
        self._workers[idx] = self._spawn()

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    def close(self) -> None:
        """Stop the workers (all at once: each gets EOF, then each is waited for and killed if needed)."""
        for w in self._workers:
            try:
                if w.proc.stdin is not None:
                    w.proc.stdin.close()
            except OSError:
                pass
        for w in self._workers:
            w.stop()
        self._workers = []

    def __enter__(self) -> GradingPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- equivalence -------------------------------------------------------------------------
    def equivalent_many(self, pairs: Sequence[tuple[Any, ...]]) -> list[tuple[bool, str]]:
        """(pred, ref, kind, rel_tol[, approx[, units]]) answer pairs -> (equal, status); each distinct pair
        verified once. approx and units (optional, None = default) are the per-task policies of GradeItem."""
        out: list[tuple[bool, str] | None] = [None] * len(pairs)
        todo: dict[CacheKey, list[int]] = {}
        raw: dict[CacheKey, tuple[str, str]] = {}
        cheap_entries: list[tuple[CacheKey, bool]] = []
        for i, pair in enumerate(pairs):
            pred, ref, kind, tol = pair[:4]
            policy = Policy.make(tol, *pair[4:6])
            t = policy.rel_tol
            if kind == "choice":
                out[i] = (_choice_equal(pred, ref), "ok")
                continue
            self.stats["pairs"] += 1
            if len(pred) > self.max_symbolic_chars or len(ref) > self.max_symbolic_chars:
                # Too long to normalise or parse: only an identical string counts (never sent to a worker).
                out[i] = (pred.strip() == ref.strip(), "ok")
                continue
            key = (answer_key(pred), ref, kind, t, policy.approx, policy.units)
            if key in self._cache:
                self.stats["cache_hits"] += 1
                out[i] = (self._cache[key], "ok")
                continue
            if key in todo:
                todo[key].append(i)
                continue
            c = cheap_compare(pred, ref, policy=policy)
            if c is not None:
                self.stats["cheap"] += 1
                self._cache[key] = c
                cheap_entries.append((key, c))
                out[i] = (c, "ok")
                continue
            todo[key] = [i]
            raw[key] = (pred, ref)
        # Cheap verdicts are cached in memory only: recomputing them costs less than a cache line.
        keys = list(todo)
        self.stats["symbolic"] += len(keys)
        res = self.run_jobs([("verify", (raw[k][0], raw[k][1], k[3], self.max_symbolic_chars, k[4], k[5]))
                             for k in keys])
        stored: list[tuple[CacheKey, bool]] = []
        for k, (status, value) in zip(keys, res):
            if status == "ok":
                verdict, st = bool(value), "ok"
                stored.append((k, verdict))
            else:
                # Timeouts and errors are not cached: the next run tries again.
                verdict, st = False, status
                self.stats["timeouts" if status == "timeout" else "errors"] += 1
            for i in todo[k]:
                out[i] = (verdict, st)
        self._store(stored)
        return [o if o is not None else (False, "error") for o in out]

    # -- public batch API --------------------------------------------------------------------
    def grade_many(self, items: Sequence[GradeItem]) -> list[Grade]:
        """Grade items in parallel; results in the same order as items."""
        extracted: list[str | None] = []
        pairs: list[tuple[Any, ...]] = []
        where: list[int] = []
        ref_cache: dict[tuple[str, str], str] = {}
        if len(items) >= _PRESTART_ITEMS:
            # A big batch will almost surely need workers: start them now so their imports overlap extraction.
            while len(self._workers) < self.n_workers:
                self._workers.append(self._spawn())
        for i, it in enumerate(items):
            _check_kind(it.kind)
            ans = extract_answer(it.response, it.kind, truncated=it.finish_reason == "length")
            extracted.append(ans)
            if ans is None:
                continue
            rk = (it.reference, it.kind)
            if rk not in ref_cache:
                ref_cache[rk] = prepare_reference(it.reference, it.kind)
            pairs.append((ans, ref_cache[rk], it.kind, it.rel_tol, it.approx, it.units))
            where.append(i)
        verdicts = self.equivalent_many(pairs)
        grades: list[Grade] = [Grade(False, None, "no_answer") if e is None else Grade(False, e, "error") for e in extracted]
        for i, (eq, st) in zip(where, verdicts):
            grades[i] = Grade(eq, extracted[i], st)
        return grades

    def _cluster_key(self, answer: str) -> str:
        # An answer too long to normalise is keyed by its text, as equivalent_many compares it: the normaliser's
        # regexes are not all linear, and this runs in the harness process.
        return answer_key(answer) if len(answer) <= self.max_symbolic_chars else answer.strip()

    def cluster_many(self, groups: Sequence[tuple[Sequence[str | None], str]]) -> list[list[int | None]]:
        """Per group (answers, kind): a class id per answer; equivalent answers share an id, None stays None.

        Ids count from 0 in order of first appearance. Classes are the transitive closure of
        pairwise equivalence between distinct answers (union-find).
        """
        plans = []
        pairs: list[tuple[str, str, str, float | None]] = []
        for answers, kind in groups:
            _check_kind(kind)
            if kind == "choice":  # a choice answer is its letter, and the letter is its key
                letters = [None if a is None else _choice_letter(a) or a for a in answers]
                idx, reps = _ids_by_first_appearance(letters, lambda letter: letter)
            else:
                idx, reps = _ids_by_first_appearance(answers, self._cluster_key)
            start = len(pairs)
            if kind != "choice":  # distinct letters are different answers
                for j in range(len(reps)):
                    for i in range(j):
                        pairs.append((reps[j], reps[i], kind, None))
            plans.append((reps, idx, start, kind))
        verdicts = self.equivalent_many(pairs)
        out: list[list[int | None]] = []
        for reps, idx, start, kind in plans:
            parent = list(range(len(reps)))

            def find(x: int, parent: list[int] = parent) -> int:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            p = start
            if kind != "choice":
                for j in range(len(reps)):
                    for i in range(j):
                        if verdicts[p][0]:
                            ri, rj = find(i), find(j)
                            if ri != rj:
                                parent[max(ri, rj)] = min(ri, rj)
                        p += 1
            out.append(_ids_by_first_appearance(idx, find)[0])
        return out


def _ids_by_first_appearance(items: Sequence[T | None], key: Callable[[T], Hashable]) -> tuple[list[int | None], list[T]]:
    """An id per item, counting from 0 in order of first appearance (items of the same key share one; None stays
    None), and the first item of each id."""
    id_of: dict[Hashable, int] = {}
    firsts: list[T] = []
    ids: list[int | None] = []
    for item in items:
        if item is None:
            ids.append(None)
            continue
        k = key(item)
        if k not in id_of:
            id_of[k] = len(firsts)
            firsts.append(item)
        ids.append(id_of[k])
    return ids, firsts


def _check_kind(kind: str) -> None:
    if kind not in ("math", "choice"):

        raise UserError(f"unknown answer kind {kind!r}: use 'math' or 'choice'")


def _choice_letter(s: str) -> str | None:
    t = s.strip()
    if len(t) == 1 and t.upper() in CHOICE_LETTERS:
        return t.upper()
    return extract_choice(t)


def _choice_equal(pred: str, ref: str) -> bool:
    p, r = _choice_letter(pred), _choice_letter(ref)
    return p is not None and p == r


def prepare_reference(reference: str, kind: str) -> str:
    """A reference that is a whole solution (a \\boxed{}, or a long text with "final answer is") is extracted
    like a response; a short reference is the answer itself."""
    if kind == "math" and (
        last_boxed(reference) is not None or (len(reference) > SHORT_RESPONSE_CHARS and has_answer_phrase(reference))
    ):
        ans = extract_answer(reference, "math")
        if ans is not None:
            return ans
    return reference
