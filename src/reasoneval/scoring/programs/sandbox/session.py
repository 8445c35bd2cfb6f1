"""A sandbox that stays up for batch after batch: the contest driver's session (docs/sandbox.md, "Contest programs").

The contest driver (stdio_driver.py) judges every batch it reads from IN and writes each batch's verdicts as one line
on OUT, so one sandbox per grading worker serves a whole run: its start (bubblewrap, the interpreter, the keeper's
imports: tens of milliseconds) is paid once per worker, not once per problem. Isolation is what each test's fresh
namespaces give (keeper.py), never the sandbox's age: the driver and the keeper hold no program, and every test's
processes and scratch files are gone before the next test starts.

A session that goes over a batch's time, dies, or writes anything but a verdict line is killed with everything in
it; the batch is a sandbox error (the contest scorer then grades each of its programs again alone, in a fresh
session) and the slot's next batch starts a new one.
"""

from __future__ import annotations

import os
import queue
import select
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from reasoneval.scoring.programs.sandbox.processes import _read_capped
from reasoneval.scoring.programs.sandbox.run import Limits, ProgramResult, Sandbox, SandboxPool, Started

# A session's driver and keeper are long-lived processes of the sandbox: their RLIMIT_CPU (prlimit's --cpu, per
# process) is this, and a session is replaced after MAX_BATCHES batches, long before either could reach it.
SESSION_CPU_S = 3600
MAX_BATCHES = 2000
MAX_LINE = 1 << 20  # a verdict line longer than this is not the driver's


class _Spawner:
    """One long-lived thread that starts every session's process. A sandbox dies with the thread that started it
    (bwrap's --die-with-parent and the fallback's parent-death signal follow the *thread*): started from a
    grading thread, a session would die when that thread's pool shuts down."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _loop(self) -> None:
        while True:
            fn, fut = self._jobs.get()
            try:
                fut.set_result(fn())
            except BaseException as e:  # handed to the caller
                fut.set_exception(e)

    def __call__(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="sandbox-spawner", daemon=True)
                self._thread.start()
        fut: Future[Any] = Future()
        self._jobs.put((fn, fut))
        return fut.result()


_SPAWN = _Spawner()


def session_limits(limits: Limits) -> Limits:
    """The limits a session's sandbox runs under for batches of `limits`: the same, but the CPU limit per process
    that its long-lived driver and keeper must stay under (each test's processes get the problem's own)."""
    return replace(limits, cpu_s=SESSION_CPU_S, timeout_s=float(SESSION_CPU_S))


def session_key(limits: Limits) -> tuple[Any, ...]:
    """What a session's sandbox was started with and a batch must match to run in it (not its time: each batch has
    its own deadline)."""
    return (limits.memory_mb, limits.file_size_mb, limits.nproc, limits.nofile, limits.tmp_mb, limits.isolate_tests)


class DriverSession:
    """One sandbox running the driver `source`; `run` hands it one batch and waits for that batch's line."""

    def __init__(self, sandbox: Sandbox, source: str, limits: Limits, slot: int, preamble: bytes = b"") -> None:
        self.sandbox, self.key, self.batches = sandbox, session_key(limits), 0
        self.preamble = preamble  # written on IN ahead of the first batch (the stdio driver's text: texts.py)
        self.host_tmp = Path(tempfile.mkdtemp(prefix="reasoneval-session-"))
        self.err_path = self.host_tmp / "stderr"
        in_r, self.in_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.started: Started | None = None
        self.buf = b""
        try:
            with open(os.devnull, "rb") as fin, open(os.devnull, "wb") as fout, open(self.err_path, "wb") as ferr:
                self.started = _SPAWN(lambda: sandbox.start(source, session_limits(limits), self.host_tmp, slot,
                                                            fin, fout, ferr, (in_r, out_w)))
        finally:
            os.close(in_r)
            os.close(out_w)
            if self.started is None:
                self.close()

    @property
    def alive(self) -> bool:
        return self.started is not None and self.started.proc.poll() is None

    def run(self, request: bytes, timeout_s: float) -> ProgramResult:
        """Write the batch, read its verdict line; past `timeout_s`, at the driver's end or on anything else on OUT,
        the session is closed and the result says why (its status: "timeout", "failed")."""
        start = time.monotonic()
        deadline = start + timeout_s
        view = memoryview(self.preamble + request if self.preamble else request)
        self.preamble = b""
        os.set_blocking(self.in_w, False)
        os.set_blocking(self.out_r, False)
        status = "ok"
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl + 1], self.buf[nl + 1:]
                break
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                break
            r, w, _ = select.select([self.out_r], [self.in_w] if view else [], [], left)
            if w:
                try:
                    view = view[os.write(self.in_w, view[:1 << 16]):]
                except BlockingIOError:
                    pass
                except OSError:
                    status = "failed"
                    break
            if r:
                try:
                    chunk = os.read(self.out_r, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    status = "failed"
                    break
                self.buf += chunk
                if len(self.buf) > MAX_LINE:
                    status = "failed"
                    break
        wall = time.monotonic() - start
        self.batches += 1
        if status == "ok" and not self.buf:
            return ProgramResult("ok", 0, "", "", wall, line.decode("ascii", errors="replace"))
        # over its time, ended, or more on OUT than one line: the session goes, with every process in it
        rc = self.close()
        stderr = ""
        try:
            stderr = _read_capped(self.err_path)
        except OSError:
            pass
        return ProgramResult(status, rc, "", stderr, wall, "" if status != "ok" else line.decode("ascii", "replace"))

    def close(self) -> int | None:
        """Kill the sandbox (its PID 1 first: the kernel ends every process of its namespace) and reap it."""
        rc = None
        if self.started is not None:
            rc = self.sandbox.stop(self.started)
            self.started = None
        for fd in (self.in_w, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.in_w = self.out_r = -1
        shutil.rmtree(self.host_tmp, ignore_errors=True)
        return rc


class SessionSlots:
    """A session per slot of `pool` (at most its `workers` at once), started on a slot's first batch and replaced
    when it failed, when a batch needs other limits, or after MAX_BATCHES."""

    def __init__(self, pool: SandboxPool) -> None:
        self.pool = pool
        self.sessions: dict[int, DriverSession] = {}
        self._lock = threading.Lock()

    def run(self, source: str, limits: Limits, request: bytes, preamble: bytes = b"") -> ProgramResult:
        """One batch in a free slot's session (`preamble`: what a new session's driver reads on IN first)."""
        with self.pool.slot() as slot:
            with self._lock:
                session = self.sessions.pop(slot, None)
            if session is not None and (not session.alive or session.key != session_key(limits)
                                        or session.batches >= MAX_BATCHES):
                session.close()
                session = None
            if session is None:
                try:
                    session = DriverSession(self.pool.sandbox, source, limits, slot, preamble)
                except OSError as e:
                    return ProgramResult("error", None, "", f"sandbox could not start: {e}", 0.0)
            sandbox = self.pool.sandbox
            if sandbox.use_cgroup:  # the slot's memory bound is this batch's (a code run may have used the slot)
                sandbox.cgroups.slot(slot, limits.memory_mb << 20)
            r = session.run(request, limits.timeout_s)
            if session.alive:
                with self._lock:
                    self.sessions[slot] = session
            else:
                session.close()
            return r

    def close(self) -> None:
        with self._lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for s in sessions:
            s.close()
