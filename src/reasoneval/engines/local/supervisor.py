"""The parent's side of a local engine worker: start it, wait for its self-test, hand it jobs, read its replies
in a thread, and when it dies fail what it held and start it again."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import socket
import subprocess
import threading
import time
from typing import Any, Callable, Protocol

from reasoneval.engines.base import EngineError
from reasoneval.engines.local.messages import CANCEL, READY, WorkerConfig
from reasoneval.workers import JsonLines, StderrTail, exit_description, spawn

log = logging.getLogger("reasoneval")

# How often a waiting thread checks that its worker is still alive.
_POLL_S = 0.2


class StartFailed(Exception):
    """A worker process died before it was ready (crash = True) or reported why it could not load."""

    def __init__(self, message: str, crash: bool) -> None:
        super().__init__(message)
        self.crash = crash


class KernelsSwitched(Exception):
    """The request's worker crashed on kernels its host has since switched away from: submit it again."""


STDERR_TAIL_LINES = 8


class WorkerHost(Protocol):
    """What a Worker needs of the engine that owns it (engine.LocalEngine implements it): the one direction
    engine -> supervisor, so the supervisor never reaches into the engine."""

    @property
    def config(self) -> WorkerConfig:
        """What a worker (re)started now loads: the engine's, after any fallback it made."""
        ...

    def kernels(self) -> str:
        """The worker's kernels and batching, for an error message (reader thread)."""
        ...

    def hint(self, code: int | None) -> str:
        """What to try after a worker died with this exit code (reader thread)."""
        ...

    def worker_changed(self) -> None:
        """A reply arrived, a request was cancelled, or the worker died, restarted or broke: capacity may have
        changed (called on the event loop)."""
        ...

    def worker_crashed(self, code: int | None, repacked: bool, message: str) -> bool:
        """The worker died while generating, with this exit code, on repacked kernels or not (reader thread, before
        the restart, which loads `config` as it is after this call). True when the host switched to other kernels:
        the requests the worker held fail with KernelsSwitched (to be submitted again), not an EngineError."""
        ...


class Worker:
    """One worker process, its socket and a reader thread. Runs up to `parallel` requests at once.

    Thread model: the event loop owns `pending`, `alive` and `load`; the reader thread blocks on the
    socket, hands each reply to the loop, and when the socket closes (the process died) builds the
    error from the exit status and stderr, fails the requests in flight and starts a new process.
    """

    def __init__(self, host: WorkerHost, index: int, startup_timeout_s: float) -> None:
        self.host = host
        self.index = index
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: JsonLines | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.alive = False
        self.broken: EngineError | None = None
        self.closed = False
        self.load_s: float | None = None
        self.reuse_prefix = False  # what the worker's self-test allowed
        self.repacked = False  # the process runs llama.cpp's repacked kernels (its config's cpu_repack)
        self.deaths = 0
        self.last_reply = time.monotonic()
        self._ids = itertools.count()
        self._stderr: StderrTail | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- process lifecycle (blocking: executor or reader thread) --------------------------------

    def spawn(self) -> None:
        """Start the process and block until its model is loaded and its self-test passed."""
        config = self.host.config
        # A plain subprocess on one end of a socket pair rather than multiprocessing's spawn:
        # spawn re-imports the caller's __main__, which breaks scripts without a __main__ guard.
        # JSON lines both ways: jobs, cancellations and replies are plain values.
        ours, theirs = socket.socketpair()
        proc = spawn("reasoneval.engines.local.worker", str(theirs.fileno()), json.dumps(dataclasses.asdict(config)),
                     pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        theirs.close()
        fd = ours.detach()
        conn = JsonLines(fd, fd)
        stderr = StderrTail(proc, f"reasoneval-local-stderr-{self.index}",
                            on_line=lambda line: log.debug("local worker %d: %s", proc.pid, line))
        with self._lock:
            self.proc, self.conn, self._stderr = proc, conn, stderr
        deadline = time.monotonic() + self.startup_timeout_s
        reply: Any = None
        while reply is None:
            if conn.poll(_POLL_S):
                try:
                    reply = conn.recv()
                except (EOFError, OSError):
                    pass
            if reply is None and (proc.poll() is not None or time.monotonic() > deadline):
                timed_out = proc.poll() is None
                self.kill()
                code = proc.returncode
                how = (f"did not start within {self.startup_timeout_s:.0f} s" if timed_out
                       else exit_description(code))
                raise StartFailed(
                    f"the local engine's worker (pid {proc.pid}, {self.host.kernels()}) {how} while loading "
                    f"{config.model_path} and running its self-test; last lines of its stderr: "
                    f"{self.stderr_tail()}", crash=not timed_out)
        status, payload = reply
        if status != READY:
            self.kill()
            raise StartFailed(f"the local engine could not start: {payload}", crash=False)
        self.load_s = payload["load_s"]
        self.reuse_prefix = payload["reuse_prefix"]
        self.repacked = config.cpu_repack

    def stderr_tail(self, n: int = STDERR_TAIL_LINES, limit: int = 1500) -> str:
        """The worker's last stderr lines on one line (it is gone: the pipe is drained first)."""
        return self._stderr.summary(n, limit) if self._stderr is not None else "(nothing on stderr)"

    def kill(self, grace_s: float = 0.0) -> None:
        """Stop the process: ask it to exit, wait grace_s, then SIGKILL."""
        with self._lock:
            proc, conn = self.proc, self.conn
        if conn is not None and grace_s > 0:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        if proc is not None:
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
        if self._stderr is not None:
            self._stderr.close()

    def start_reader(self, loop: asyncio.AbstractEventLoop) -> None:
        self.alive = True
        self._reader = threading.Thread(target=self._read, args=(loop,), name=f"reasoneval-local-{self.index}",
                                        daemon=True)
        self._reader.start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reader thread: replies to the loop; on the worker's death, fail its requests and restart it."""
        while True:
            conn, proc = self.conn, self.proc
            assert conn is not None and proc is not None
            while True:
                try:
                    msg = conn.recv()
                except (EOFError, OSError, ValueError):
                    break
                self.last_reply = time.monotonic()
                if not self._call(loop, self._on_reply, msg):
                    return
            if self.closed:
                return
            try:
                code = proc.wait(5.0)
            except subprocess.TimeoutExpired:  # the socket broke but the process lives on
                proc.kill()
                code = proc.wait()
            self.deaths += 1
            message = (f"the local engine's worker (pid {proc.pid}, {self.host.kernels()}) "
                       f"{exit_description(code)} while generating; last lines of its stderr: "
                       f"{self.stderr_tail()}; {self.host.hint(code)}")
            incident = f"local-worker-{self.index}-death-{self.deaths}"
            switched = self.host.worker_crashed(code, self.repacked, message)
            if not self._call(loop, self._on_death, message, incident, switched):
                return
            try:
                self.kill()
                self.spawn()
            except Exception as e:  # StartFailed, OSError
                err = EngineError(f"{message}; it could not be restarted: {e}", retryable=False, fatal=True,
                                  engine_failure=True)
                self._call(loop, self._on_broken, err)
                return
            if self.closed:
                self.kill(grace_s=2.0)
                return
            if not self._call(loop, self._on_ready):
                self.kill(grace_s=2.0)
                return

    @staticmethod
    def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(fn, *args)
            return True
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            return False

    # -- event loop side -------------------------------------------------------------------------

    def _on_reply(self, msg: Any) -> None:
        if msg[0] == READY:
            return
        job_id, status, payload = msg
        fut = self.pending.pop(job_id, None)
        if fut is not None and not fut.done():
            fut.set_result((status, payload))
        self.host.worker_changed()

    def _on_death(self, message: str, incident: str, switched: bool) -> None:
        self.alive = False
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                # One worker death fails every request it was serving: one incident for the runner; or, where the
                # host switched kernels for it, none (the engine submits them again).
                fut.set_exception(KernelsSwitched(message) if switched else
                                  EngineError(message, retryable=True, engine_failure=True, incident=incident))
        self.host.worker_changed()

    def _on_ready(self) -> None:
        self.alive = True
        self.host.worker_changed()

    def _on_broken(self, err: EngineError) -> None:
        self.alive = False
        self.broken = err
        self.host.worker_changed()

    def submit(self, job: dict[str, Any]) -> tuple[int, asyncio.Future[Any]]:
        job_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # Never leave an exception unretrieved (its finalizer would log a traceback at GC time).
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.pending[job_id] = fut
        try:
            assert self.conn is not None
            self.conn.send((job_id, job))
        except (OSError, ValueError):
            pass  # the process died: the reader thread fails this job with the cause
        return job_id, fut

    def cancel(self, job_id: int) -> None:
        fut = self.pending.pop(job_id, None)
        if fut is not None and not fut.done():
            fut.cancel()
        try:
            if self.conn is not None and self.alive:
                self.conn.send((CANCEL, job_id))
        except (OSError, ValueError):
            pass
        self.host.worker_changed()

    @property
    def load(self) -> int:
        return len(self.pending)
