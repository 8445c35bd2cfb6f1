"""The sandbox: bubblewrap + seccomp + rlimits + a wall-clock kill, or, where bwrap cannot run, rlimits + new
network/IPC/PID/mount namespaces + the same seccomp filter (docs/sandbox.md).

One program per fresh process tree. The harness never imports, evals or execs the program: it writes it (or
the trusted driver's input) to a host temp file, and reads back capped stdout/stderr files and the driver's
verdict channel. When the harness runs as root, the sandboxed process runs as an unprivileged uid of this
process's own block (RLIMIT_NPROC is not enforced for root, and a root-owned process could undo the binds).
"""

from __future__ import annotations

import fcntl
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from reasoneval.errors import UserError
from reasoneval.scoring.programs.sandbox import seccomp

log = logging.getLogger(__name__)

# Bump when the sandbox's rules (limits, environment, pass criterion) change: cached code grades are keyed on it.
SANDBOX_VERSION = "2"
NOBODY = 65534
# As root, sandbox slot i runs as uid/gid base + i (no account needed): RLIMIT_NPROC counts per uid, so a fork
# bomb in one sandbox cannot starve the sandboxes running beside it. Each reasoneval process reserves a block of
# UID_BLOCK uids of its own (base = SLOT_UID_BASE + (block + 1) * UID_BLOCK, the block held with a lock file; the
# first UID_BLOCK uids are left to versions before the blocks, which used SLOT_UID_BASE + slot), so the
# sandboxes of two processes never share a uid, and a kill of every process of a slot's uid hits only its own.
SLOT_UID_BASE = 620000
UID_BLOCK = 1024
UID_BLOCKS = 64
SANDBOX_UIDS = range(SLOT_UID_BASE, SLOT_UID_BASE + (UID_BLOCKS + 1) * UID_BLOCK)  # every uid a sandbox may use
OUTPUT_CAP = 64 << 10  # bytes of stdout/stderr kept per program (the files themselves are capped by RLIMIT_FSIZE)
MODES = ("auto", "bwrap", "rlimits")
_LOCK = threading.Lock()
_UID_LOCK = threading.Lock()
SHM_BYTES = 1 << 20  # /dev/shm in bwrap mode (POSIX semaphores need a little; memory is bounded elsewhere)


@dataclass(frozen=True)
class Limits:
    """Per-program limits. cpu_s None: the wall-clock timeout rounded up, plus one second."""

    timeout_s: float = 5.0
    memory_mb: int = 1024  # address space (RLIMIT_AS)
    file_size_mb: int = 16  # largest file the program may write (RLIMIT_FSIZE), stdout/stderr included
    nproc: int = 32  # processes of the sandbox user (RLIMIT_NPROC): bounds a fork bomb
    nofile: int = 128  # open files
    tmp_mb: int = 64  # size of the private writable tmpfs (bwrap mode)
    cpu_s: int | None = None

    def __post_init__(self) -> None:
        for name in ("timeout_s", "memory_mb", "file_size_mb", "nproc", "nofile", "tmp_mb"):
            if not getattr(self, name) > 0:
                raise UserError(f"sandbox limit {name} must be positive, got {getattr(self, name)!r}")

    @property
    def cpu_seconds(self) -> int:
        return self.cpu_s if self.cpu_s is not None else math.ceil(self.timeout_s) + 1

    def key(self) -> str:
        return (f"t{self.timeout_s}:m{self.memory_mb}:f{self.file_size_mb}:p{self.nproc}:n{self.nofile}:"
                f"d{self.tmp_mb}:c{self.cpu_seconds}")


@dataclass(frozen=True)
class ProgramResult:
    """status: "ok" (exit 0), "failed" (non-zero exit or killed by a limit signal), "timeout" (wall clock),
    "error" (the sandbox itself could not run the program)."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float
    # what the program wrote to its private channel (Sandbox.run with `stdin`: the trusted driver's verdict)
    channel: str | None = None

    @property
    def signal(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return str(-self.returncode)
        return None


def _world_traversable(path: str) -> bool:
    """Every directory from / down to `path` is searchable by others (the sandbox user can reach it)."""
    p = Path(path).resolve()
    for d in [p, *p.parents]:
        try:
            if not os.stat(d).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _default_python(as_root: bool) -> str:
    # The harness's own interpreter when the sandbox user can reach it; as root with the interpreter under
    # a private home (/root/.pyenv...), the system's python3. The programs need the standard library only.
    own = os.path.realpath(sys.executable)
    if not as_root or _world_traversable(sys.base_prefix):
        return own
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK) and _world_traversable(os.path.dirname(cand)):
            return os.path.realpath(cand)
    raise UserError("running as root, the sandbox needs a python3 that user nobody can run (e.g. /usr/bin/python3); "
                    "install Debian's python3 or run as a normal user")


# The rlimits fallback's mounts, run by the sandbox's interpreter itself as (namespace) root in the program's new
# mount namespace (private propagation), before anything else: a bounded /tmp and /dev/shm of its own, the
# directories to hide under empty read-only tmpfs mounts, then it drops to the slot's uid. argv after -c: the
# size of /tmp in bytes, the directories to hide (":"-separated), the uid to become (-1: stay).
_FALLBACK_BOOT = """import ctypes as _c, os as _o, sys as _s
def _reasoneval_mounts(size, hide, uid):
    libc = _c.CDLL(None, use_errno=True)
    def mount(target, opts, flags=0):
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, opts.encode()) != 0:
            _s.stderr.write("sandbox: mount of %s failed (errno %d)\\n" % (target, _c.get_errno()))
            _s.exit(125)
    mount("/dev/shm", "size=1048576,mode=1777")
    mount("/tmp", "size=%s,mode=1777" % size)
    for d in filter(None, hide.split(":")):
        mount(d, "size=4096,mode=755", 1)  # MS_RDONLY
    _o.chdir("/tmp")
    _o.environ["HOME"] = _o.environ["TMPDIR"] = "/tmp"
    if uid >= 0:
        _o.setgroups([])
        _o.setgid(uid)
        _o.setuid(uid)
_reasoneval_mounts(_s.argv.pop(1), _s.argv.pop(1), int(_s.argv.pop(1)))
del _reasoneval_mounts, _c, _o, _s
"""

_UID_BLOCK_HELD: tuple[int, int, object] | None = None  # (owner pid, base uid, the open lock file)


def uid_base() -> int:
    """This process's block of sandbox uids (as root), reserved on first use with an flock held until exit."""
    global _UID_BLOCK_HELD
    with _UID_LOCK:
        if _UID_BLOCK_HELD is not None and _UID_BLOCK_HELD[0] == os.getpid():
            return _UID_BLOCK_HELD[1]
        # (a forked child inherits the parent's lock, not its block: it reserves one of its own)
        lock_dir = "/run/lock" if os.path.isdir("/run/lock") and os.access("/run/lock", os.W_OK) else \
            tempfile.gettempdir()
        for block in range(UID_BLOCKS):
            f = open(os.path.join(lock_dir, f"reasoneval-sandbox-uids-{block}.lock"), "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            _UID_BLOCK_HELD = (os.getpid(), SLOT_UID_BASE + (block + 1) * UID_BLOCK, f)
            return _UID_BLOCK_HELD[1]
    raise UserError(f"all {UID_BLOCKS} blocks of sandbox uids are held by other reasoneval processes "
                    f"(lock files reasoneval-sandbox-uids-*.lock in {lock_dir}); wait for some to finish")


def _third_party_dirs(prefix: str) -> list[str]:
    """The site-packages / dist-packages directories under an installation prefix (hidden in the sandbox)."""
    out = []
    for lib in ("lib", "lib64", "local/lib"):
        base = Path(prefix) / lib
        try:
            entries = sorted(base.iterdir())
        except OSError:
            continue
        for d in entries:
            if d.name == "python3" or (d.name.startswith("python3.") and not d.is_symlink()):
                out += [str(d / s) for s in ("site-packages", "dist-packages") if (d / s).is_dir()]
    return out


def _prefix_of(python: str) -> str:
    # .../bin/python3.11 -> ... (the installation's prefix, bound read-only in the sandbox)
    return str(Path(python).resolve().parent.parent)


class Sandbox:
    """Builds the command that runs one program; `mode` is "bwrap" or "rlimits" (the fallback)."""

    def __init__(self, mode: str = "auto", python: str | None = None) -> None:
        if mode not in MODES:
            raise UserError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
        self.as_root = os.geteuid() == 0
        self.python = python or _default_python(self.as_root)
        self.warning: str | None = None
        self.unshare_net = True
        self.full_unshare = True
        if mode == "auto":
            reason = self._probe_bwrap()
            if reason is None:
                mode = "bwrap"
            else:
                mode = "rlimits"
                self.warning = (f"bubblewrap unavailable ({reason}); generated code runs with rlimits and an unshared "
                                "network namespace only, NOT isolated from the file system (docs/sandbox.md); "
                                "install bubblewrap (apt-get install bubblewrap)")
        elif mode == "bwrap":
            reason = self._probe_bwrap()
            if reason is not None:
                raise UserError(f"sandbox mode bwrap: {reason}; install bubblewrap (apt-get install bubblewrap) "
                                "or allow unprivileged user namespaces")
        self.mode = mode
        if mode == "rlimits":
            probe = self.run("print('ok')", Limits(timeout_s=10))
            if probe.stdout.strip() != "ok":
                self.full_unshare = False  # IPC / PID / mount namespaces refused: the network one alone
                log.warning("sandbox mode rlimits: unshare of the IPC, PID and mount namespaces failed (%s); "
                            "network only", probe.stderr.strip()[-200:])
                probe = self.run("print('ok')", Limits(timeout_s=10))
            if probe.stdout.strip() != "ok":
                self.unshare_net = False
                self.warning = (self.warning or "sandbox mode rlimits") + \
                    f"; the network namespace could not be unshared either ({probe.stderr.strip()[-200:]})"
        if self.warning:
            log.warning(self.warning)

    def _probe_bwrap(self) -> str | None:
        if shutil.which("bwrap") is None:
            return "no bwrap on PATH"
        _become_subreaper()
        self.mode = "bwrap"
        r = self.run("print('ok')", Limits(timeout_s=10))
        if r.status == "ok" and r.stdout.strip() == "ok":
            return None
        return f"bwrap failed: {(r.stderr.strip() or r.status)[-300:]}"

    def _bwrap_args(self, limits: Limits) -> list[str]:
        args = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for top in ("bin", "sbin", "lib", "lib32", "lib64"):
            host = f"/{top}"
            if os.path.islink(host):
                args += ["--symlink", os.readlink(host), host]
            elif os.path.isdir(host):
                args += ["--ro-bind", host, host]
        hidden = _third_party_dirs("/usr")
        prefix = _prefix_of(self.python)
        if not prefix.startswith("/usr/"):
            # an interpreter outside /usr (pyenv, conda, a venv's base): its binary, shared libraries and standard
            # library only, never its site-packages (the harness's own packages: the benchmarks' data among them)
            for sub in ("bin", "lib", "lib64"):
                if os.path.isdir(os.path.join(prefix, sub)):
                    args += ["--ro-bind", os.path.join(prefix, sub), os.path.join(prefix, sub)]
            hidden += _third_party_dirs(prefix)
        for d in hidden:
            args += ["--size", "4096", "--tmpfs", d, "--remount-ro", d]
        args += ["--proc", "/proc", "--dev", "/dev",
                 # /dev is a tmpfs of bwrap's, writable and unbounded: a small /dev/shm, then /dev read-only
                 "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
                 "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp",
                 # bwrap's root is a tmpfs of its own, writable and unbounded: make it read-only
                 "--remount-ro", "/",
                 "--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
                 "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONHASHSEED", "0",
                 "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
        return args

    def command(self, limits: Limits, uid: int = NOBODY, program: Sequence[str] = ("-",)) -> list[str]:
        nproc = limits.nproc
        if not self.as_root:
            # RLIMIT_NPROC counts every process of the real uid, and a normal user's own processes (shells, this
            # harness, its workers) share that uid: allow them plus `nproc` for the program.
            nproc += _count_processes(os.getuid())
        rl = ["prlimit", f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_mb << 20}",
              f"--fsize={limits.file_size_mb << 20}", f"--nproc={nproc}", f"--nofile={limits.nofile}",
              "--core=0", "--"]
        py = [self.python, "-I", *program]
        if self.mode == "bwrap":
            return rl + self._bwrap_args(limits) + py
        # new network, IPC (System V shared memory dies with the program), PID (a fresh /proc: no other
        # process to see or signal; the program's PID 1 takes everything with it) and mount namespaces;
        # --kill-child: the program's PID 1 dies with unshare (a timeout kills unshare's process group)
        if not self.unshare_net:
            return rl + py
        if self.full_unshare:
            # new network, IPC, PID and mount namespaces; the interpreter mounts, drops to the slot's uid, installs
            # the seccomp filter, then runs the program (_FALLBACK_BOOT, seccomp.BOOT)
            spaces = ["-n", "-i", "-p", "-f", "--kill-child", "--mount-proc", "--"]
            code, extra = (program[1], list(program[2:])) if tuple(program[:1]) == ("-c",) else \
                (seccomp.STDIN_PROGRAM, [])
            boot = _FALLBACK_BOOT + (seccomp.BOOT if seccomp.supported() else "")
            args = [str(limits.tmp_mb << 20), ":".join(self._hidden_dirs()), str(uid if self.as_root else -1)]
            args += [seccomp.filter_program().hex()] if seccomp.supported() else []
            py = [self.python, "-I", "-c", boot + code, *args, *extra]
            return rl + ["unshare", *([] if self.as_root else ["-r"]), *spaces] + py
        if self.as_root:
            # unshare as root, then become the slot's uid (so that RLIMIT_NPROC applies)
            return rl + ["unshare", "-n", f"--setgid={uid}", f"--setuid={uid}", "--"] + py
        return rl + ["unshare", "-r", "-n", "--"] + py

    def _hidden_dirs(self) -> list[str]:
        """What the fallback hides under empty read-only tmpfs mounts: site-/dist-packages (the harness's own
        packages, with the benchmarks' data), the data dir and the Hugging Face cache. Never a directory the
        interpreter lives under."""
        cands = _third_party_dirs("/usr") + _third_party_dirs(_prefix_of(self.python))
        for var in ("REASONEVAL_DATA_DIR", "HF_HOME", "HF_DATASETS_CACHE"):
            if os.environ.get(var):
                cands.append(os.environ[var])
        cands.append(os.path.expanduser("~/.cache/huggingface"))
        prefix = _prefix_of(self.python)
        out = []
        for d in dict.fromkeys(os.path.realpath(c) for c in cands):
            if os.path.isdir(d) and d not in ("/", "/usr", "/tmp") and ":" not in d and \
                    not (prefix + "/").startswith(d.rstrip("/") + "/"):
                out.append(d)
        return out

    def run(self, source: str, limits: Limits | None = None, slot: int = 0, stdin: bytes | None = None) -> ProgramResult:
        """Run `source` (Python) in a fresh sandboxed process; never raises for anything the program does.

        slot: which concurrent sandbox this is (0 .. workers-1); as root, it picks the sandbox's uid.
        stdin: None, the program is read from stdin (`python -I -`). Else the program is trusted code (the test
        driver), run as `python -I -c source IN OUT` with its stdin /dev/null: IN is a file descriptor to read
        `stdin` from, OUT one to write the result's `channel` to. Neither is held by bwrap's PID 1 (which keeps
        the stdin/stdout/stderr it was given), so only the program itself can read or write them.
        """
        limits = limits or Limits()
        for attempt in range(3):
            host_tmp = tempfile.mkdtemp(prefix="reasoneval-sbx-")
            try:
                r = self._run(source, limits, Path(host_tmp), slot, stdin)
            finally:
                shutil.rmtree(host_tmp, ignore_errors=True)
            # A namespace or process limit hit while the kernel still tears down a previous sandbox of this
            # uid (a fork bomb's thousands of exits take a moment): try again shortly.
            if r.status != "error" or "Resource temporarily unavailable" not in r.stderr:
                return r
            time.sleep(0.2 * (attempt + 1))
        return r

    def _run(self, source: str, limits: Limits, host_tmp: Path, slot: int, stdin: bytes | None) -> ProgramResult:
        prog, out, err = host_tmp / "program.py", host_tmp / "stdout", host_tmp / "stderr"
        # surrogatepass: a lone surrogate in model output is written as is (the program then fails to decode),
        # never an exception here
        prog.write_bytes(source.encode("utf-8", "surrogatepass") if stdin is None else stdin)
        cwd = None
        kw: dict[str, object] = {}
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
        if slot >= UID_BLOCK:
            raise UserError(f"at most {UID_BLOCK} sandboxes at once (slot {slot}); lower --grading-workers")
        uid = uid_base() + slot if self.as_root else NOBODY
        if self.mode == "bwrap":
            if self.as_root:
                kw = {"user": uid, "group": uid, "extra_groups": []}
        else:
            work = host_tmp / "work"
            work.mkdir()
            if self.as_root:
                os.chown(work, uid, uid)
            cwd = str(work)
            env["HOME"] = env["TMPDIR"] = str(work)
        start = time.monotonic()
        info_r = info_w = chan_r = chan_w = -1
        pass_fds: list[int] = []
        seccomp_f = in_f = None
        if stdin is None:
            cmd = self.command(limits, uid, ("-",))
        else:
            in_f = open(prog, "rb")
            chan_r, chan_w = os.pipe()
            pass_fds += [in_f.fileno(), chan_w]
            cmd = self.command(limits, uid, ("-c", source, str(in_f.fileno()), str(chan_w)))
        if self.mode == "bwrap":
            # bwrap reports the host PID of the sandbox's PID 1 on this pipe (killed on timeout, see _kill).
            info_r, info_w = os.pipe()
            pass_fds.append(info_w)
            extra = ["--info-fd", str(info_w)]
            if seccomp.supported():
                (host_tmp / "seccomp.bpf").write_bytes(seccomp.filter_program())
                seccomp_f = open(host_tmp / "seccomp.bpf", "rb")
                pass_fds.append(seccomp_f.fileno())
                extra += ["--seccomp", str(seccomp_f.fileno())]
            i = cmd.index("bwrap") + 1
            cmd[i:i] = extra
        with open(prog if stdin is None else os.devnull, "rb") as fin, open(out, "wb") as fout, \
                open(err, "wb") as ferr:
            try:
                proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=cwd, env=env, close_fds=True,
                                        pass_fds=pass_fds, start_new_session=True,
                                        **kw)  # type: ignore[call-overload]
            except OSError as e:
                if chan_r >= 0:
                    os.close(chan_r)
                return ProgramResult("error", None, "", f"sandbox could not start: {e}", 0.0)
            finally:
                for fd in (info_w, chan_w):
                    if fd >= 0:
                        os.close(fd)
                for f in (seccomp_f, in_f):
                    if f is not None:
                        f.close()
            timed_out = False
            try:
                rc = proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                rc = _kill(proc, _child_pid(info_r) if info_r >= 0 else None)
            if info_r >= 0:
                init = _child_pid(info_r)
                os.close(info_r)
                if init is not None:
                    _reap_sandbox_init(init)
        if self.mode == "rlimits" and self.as_root:
            # No PID namespace here: a child that left the process group (setsid) survives the group kill.
            # Every process of the slot's uid belongs to this program, so kill them all, as that uid.
            subprocess.run(["kill", "-KILL", "-1"], user=uid, group=uid, extra_groups=[], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            _reap_orphans_of(uid)
        wall = time.monotonic() - start
        stdout, stderr = _read_capped(out), _read_capped(err)
        channel = None
        if chan_r >= 0:
            os.set_blocking(chan_r, False)
            try:
                channel = os.read(chan_r, 4096).decode("ascii", errors="replace")
            except BlockingIOError:
                channel = ""
            finally:
                os.close(chan_r)
        if timed_out:
            status = "timeout"
        elif rc == 0:
            status = "ok"
        elif self.mode == "bwrap" and rc == 1 and stderr.startswith("bwrap:"):
            status = "error"
        else:
            status = "failed"
        return ProgramResult(status, rc, stdout, stderr, wall, channel)


def _child_pid(info_r: int) -> int | None:
    """The host PID of the sandbox's PID 1, from bwrap's --info-fd JSON (None if bwrap wrote none)."""
    import json
    os.set_blocking(info_r, False)
    try:
        data = os.read(info_r, 4096)
        pid = json.loads(data.decode()).get("child-pid")
        return pid if isinstance(pid, int) else None
    except (OSError, ValueError, AttributeError):
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


_SANDBOXES: dict[tuple[str, str | None], Sandbox] = {}


def get_sandbox(mode: str = "auto", python: str | None = None) -> Sandbox:
    """The process-wide sandbox for (mode, python): probed once, warns once."""
    with _LOCK:
        key = (mode, python)
        if key not in _SANDBOXES:
            _SANDBOXES[key] = Sandbox(mode, python)
        return _SANDBOXES[key]


def run_program(source: str, limits: Limits | None = None, mode: str = "auto") -> ProgramResult:
    return get_sandbox(mode).run(source, limits)


class SandboxPool:
    """Runs programs with at most `workers` sandboxes at once (threads waiting on sandboxed processes)."""

    def __init__(self, workers: int | None = None, mode: str = "auto", python: str | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.sandbox = get_sandbox(mode, python)
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sandbox")
        self._slots = list(range(self.workers))
        self._slots_lock = threading.Lock()

    def _run_one(self, source: str, limits: Limits | None, stdin: bytes | None = None) -> ProgramResult:
        with self._slots_lock:
            slot = self._slots.pop()
        try:
            return self.sandbox.run(source, limits, slot, stdin)
        finally:
            with self._slots_lock:
                self._slots.append(slot)

    def run_many(self, sources: Sequence[str], limits: Limits | None = None,
                 stdins: Sequence[bytes | None] | None = None) -> list[ProgramResult]:
        """Run each source (stdins[i]: its input, then the source is given with -c; see Sandbox.run)."""
        ins = list(stdins) if stdins is not None else [None] * len(sources)
        return list(self._executor.map(lambda a: self._run_one(a[0], limits, a[1]), zip(sources, ins)))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
