"""A server process reasoneval started: its own session (process group) and log file, stopped as a group (SIGTERM,
then SIGKILL after a grace period) by `stop`, at interpreter exit, on SIGTERM/SIGHUP of reasoneval, and on Linux when
reasoneval itself dies (the parent-death signal). engines/launch/engine.py builds the command line and drives it."""

from __future__ import annotations

import atexit
import os
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Callable

from reasoneval.errors import UserError

STOP_GRACE_S = 15.0
LOG_TAIL_LINES = 8


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, limit: int = 1500) -> str:
    """The last lines of a log on one line, for an error message."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64_000))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no log)"
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    out = " | ".join(kept)
    return out[-limit:] if out else "(log is empty)"


# ---------------------------------------------------------------------------- the subprocess


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: atexit and the signal handlers still cover normal exits
        pass


class ServerProcess:
    """A running server: its process group and log file."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, command: tuple[str, ...]) -> None:
        self.proc = proc
        self.log_path = log_path
        self.command = command
        self._stopped = False
        self._lock = threading.Lock()

    @classmethod
    def start(cls, command: tuple[str, ...], log_path: Path) -> ServerProcess:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            log.write(f"$ {shlex.join(command)}\n".encode())
            log.flush()
            # PDEATHSIG fires when the *thread* that forked exits: only safe from the main thread.
            preexec: Callable[[], None] | None = (
                _die_with_parent if threading.current_thread() is threading.main_thread() else None)
            try:
                proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=preexec)
            except FileNotFoundError as e:
                raise UserError(f"cannot start the server: {command[0]!r} not found "
                                f"(for --server vllm: pip install 'reasoneval[vllm]')") from e
        # The child holds its own copy of the log's file descriptor; ours is closed here.
        server = cls(proc, log_path, command)
        _register(server)
        return server

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exited(self) -> int | None:
        return self.proc.poll()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to the whole process group, SIGKILL to what is left after grace_s. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        pgid = self.proc.pid  # start_new_session: the server leads its own group
        if self.proc.poll() is None:
            _killpg(pgid, signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        # Children that outlived the leader (or ignored SIGTERM) go too.
        _killpg(pgid, signal.SIGKILL)
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        _unregister(self)

    def move_log(self, new_path: Path) -> None:
        """Move the log (the child keeps writing to it: a rename keeps its file descriptor)."""
        if new_path == self.log_path:
            return
        new_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(self.log_path, new_path)
        except OSError:
            # Another filesystem: the server keeps writing the old file; leave a pointer to it.
            new_path.write_text(f"the server log is at {self.log_path}\n")
            return
        self.log_path = new_path


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# Servers to stop if reasoneval exits without closing its engine (error, Ctrl-C, SIGTERM).
_LIVE: set[ServerProcess] = set()
_LIVE_LOCK = threading.Lock()
_HOOKS_INSTALLED = False


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for s in servers:
        s.stop(grace_s=5.0)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_all()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    # Default disposition: die by the same signal, as if we had never caught it.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_PREVIOUS_HANDLERS: dict[int, Any] = {}


def _register(server: ServerProcess) -> None:
    global _HOOKS_INSTALLED
    with _LIVE_LOCK:
        _LIVE.add(server)
        if _HOOKS_INSTALLED:
            return
        _HOOKS_INSTALLED = True
    atexit.register(_stop_all)
    # SIGINT needs nothing here: it raises KeyboardInterrupt, so close() and atexit run.
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            _PREVIOUS_HANDLERS[sig] = previous
            signal.signal(sig, _on_signal)


def _unregister(server: ServerProcess) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(server)
