"""The sandbox's processes on the host: the uid blocks each reasoneval process reserves (as root, sandbox slot i
runs as its own uid, so RLIMIT_NPROC bounds each sandbox apart and a kill of every process of that uid reaches
only its own), and the kills and reaps that leave no process of a program behind (run.py)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

from reasoneval.errors import UserError

log = logging.getLogger(__name__)
OUTPUT_CAP = 64 << 10  # bytes of stdout/stderr kept per program (the files themselves are capped by RLIMIT_FSIZE)
_UID_LOCK = threading.Lock()

# bomb in one sandbox cannot starve the sandboxes running beside it. Each reasoneval process reserves a block of
# UID_BLOCK uids of its own, held with a lock file in a directory only the harness's user can write
# (lock_dir()), so the sandboxes of two processes never share a uid, and a kill of every process of a slot's uid
# hits only its own. Block b is SLOT_UID_BASE + (FIRST_BLOCK + b) * UID_BLOCK: the uids below are left to older
# versions (SLOT_UID_BASE + slot before the blocks; blocks 1-64 locked in /run/lock before issue 31), so a
# process of an older version beside this one never shares a uid with it either.
SLOT_UID_BASE = 620000
UID_BLOCK = 1024
UID_BLOCKS = 64
FIRST_BLOCK = UID_BLOCKS + 1
# every uid a sandbox of this or an older version may use
SANDBOX_UIDS = range(SLOT_UID_BASE, SLOT_UID_BASE + (FIRST_BLOCK + UID_BLOCKS) * UID_BLOCK)
LOCK_DIR_ENV = "REASONEVAL_SANDBOX_LOCK_DIR"

_UID_BLOCK_HELD: tuple[int, int, int] | None = None  # (owner pid, base uid, the open lock file's descriptor)


def lock_dir() -> str:
    """Where the uid blocks' lock files live: a directory of this user's that no other user can write (so no
    sandboxed program can plant, squat or link a lock file there): $REASONEVAL_SANDBOX_LOCK_DIR when it is one,
    else /run/reasoneval, else ~/.cache/reasoneval/locks."""
    wanted = [os.environ.get(LOCK_DIR_ENV, ""), "/run/reasoneval", os.path.expanduser("~/.cache/reasoneval/locks")]
    for d in filter(None, wanted):
        if _private_dir(d):
            return d
        log.warning("sandbox: %s is not a directory of this user's that only it can write; not used for the "
                    "uid locks", d)
    raise UserError("no directory for the sandbox's uid locks: /run/reasoneval and ~/.cache/reasoneval/locks are "
                    f"not private to this user; set {LOCK_DIR_ENV} to a directory only this user can write")


def _private_dir(d: str) -> bool:
    """`d` is (made if missing) a real directory of this user's that neither it nor its parent lets others write."""
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        for path in (d, os.path.dirname(os.path.abspath(d))):
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022 or st.st_uid not in (os.geteuid(), 0):
                return False
        return os.lstat(d).st_uid == os.geteuid()
    except OSError:
        return False


def uid_base() -> int:
    """This process's block of sandbox uids (as root), reserved on first use with an flock held until exit.

    A lock file is opened with O_NOFOLLOW and must be a regular file of this user's: a directory, a link or any
    other object in its place (or a lock held by another process) makes this process take the next block."""
    global _UID_BLOCK_HELD
    with _UID_LOCK:
        if _UID_BLOCK_HELD is not None and _UID_BLOCK_HELD[0] == os.getpid():
            return _UID_BLOCK_HELD[1]
        # (a forked child inherits the parent's lock, not its block: it reserves one of its own)
        where = lock_dir()
        for block in range(UID_BLOCKS):
            path = os.path.join(where, f"uids-{block}.lock")
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
            except OSError:
                continue  # a directory, a link, a fifo... planted in its place
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                    raise OSError("not a lock file of this user's")
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            _UID_BLOCK_HELD = (os.getpid(), SLOT_UID_BASE + (FIRST_BLOCK + block) * UID_BLOCK, fd)
            return _UID_BLOCK_HELD[1]
    raise UserError(f"all {UID_BLOCKS} blocks of sandbox uids are held by other reasoneval processes "
                    f"(lock files uids-*.lock in {where}); wait for some to finish")


def _child_pid(info_r: int) -> int | None:
    """The host PID of the sandbox's PID 1, from bwrap's --info-fd JSON (None if bwrap wrote none)."""
    os.set_blocking(info_r, False)
    try:
        data = os.read(info_r, 4096)
        pid = json.loads(data.decode()).get("child-pid")
        return pid if isinstance(pid, int) else None
    except (OSError, ValueError, AttributeError, RecursionError):  # any bytes at all
        return None


def _reap_sandbox_init(pid: int) -> None:
    # bwrap exits as soon as its PID 1 reports the program's exit status, before PID 1 itself has exited:
    # PID 1's exit is where the kernel kills and waits for everything left in the namespace. PID 1 is then
    # reparented to this process (a child subreaper, see _become_subreaper) and reaped here, so when run()
    # returns no process of the program is left, and no zombie counts against the slot's RLIMIT_NPROC.
    deadline = time.monotonic() + 5
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not ours (no subreaper): the host's init reaps it
        if done:
            return
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            return
        time.sleep(0.002)


def _count_processes(uid: int) -> int:
    n = 0
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and d.stat().st_uid == uid:
                n += 1
        except OSError:
            continue
    return n


def _reap_orphans_of(uid: int) -> None:
    # Orphans of the killed program reparented to this process (when it is a subreaper): reap them, so that
    # their zombies stop counting against the slot uid's RLIMIT_NPROC.
    me = str(os.getpid())
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if d.stat().st_uid != uid or (d / "stat").read_text().rsplit(")", 1)[1].split()[1] != me:
                continue
            os.waitpid(int(d.name), 0)
        except (OSError, IndexError, ChildProcessError):
            continue


def _become_subreaper() -> None:
    """Orphans of this process's descendants (the sandboxes' PID 1) are reparented here, not to init."""
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        log.debug("prctl(PR_SET_CHILD_SUBREAPER) unavailable; the host's init reaps sandbox PID 1s")


def _kill(proc: subprocess.Popen[bytes], sandbox_init: int | None) -> int:
    # bwrap mode: kill the sandbox's PID 1 first. Its exit makes the kernel kill every process left in the
    # PID namespace and returns only when they are gone; bwrap then exits and is reaped here, so nothing of
    # the program outlives this call (killing bwrap first would orphan PID 1 to the host's init).
    # Then (and in the fallback) the whole process group.
    if sandbox_init is not None:
        try:
            os.kill(sandbox_init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait()


def _read_capped(path: Path) -> str:
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size <= OUTPUT_CAP:
            f.seek(0)
            data = f.read()
        else:
            # head and tail: the traceback is at the end, what the program printed first at the start
            f.seek(0)
            head = f.read(OUTPUT_CAP // 2)
            f.seek(size - OUTPUT_CAP // 2)
            data = head + f"\n[... {size - OUTPUT_CAP} bytes cut ...]\n".encode() + f.read()
    return data.decode("utf-8", errors="replace")


