"""The sandbox: bubblewrap + seccomp + rlimits + a wall-clock kill, or, where bwrap cannot run, rlimits + new
network/IPC/PID/mount namespaces, a read-only view of the file system + the same seccomp filter
(docs/sandbox.md). Where cgroup v2 allows it, a memory bound per sandbox (cgroup.py).

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
import stat
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
from reasoneval.scoring.programs.sandbox.cgroup import CgroupMemory, host_oom_kills

log = logging.getLogger(__name__)

# Bump when the sandbox's rules (limits, environment, pass criterion) change: cached code grades are keyed on it.
# 3: the candidate in a PID namespace of its own, run as a module other than __main__; sets keep their order,
# built-in subclasses cross; no re-run the program can cause; the fallback's read-only file system.
# 4: the driver's `started` line (no re-run after it), control-flow exceptions cross as CandidateError.
# 5: contest programs: fresh PID/IPC/network namespaces per test, the CPU of every process counted, no /proc.
SANDBOX_VERSION = "5"
NOBODY = 65534
# As root, sandbox slot i runs as uid/gid base + i (no account needed): RLIMIT_NPROC counts per uid, so a fork
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
OUTPUT_CAP = 64 << 10  # bytes of stdout/stderr kept per program (the files themselves are capped by RLIMIT_FSIZE)
MODES = ("auto", "bwrap", "rlimits")
_LOCK = threading.Lock()
_UID_LOCK = threading.Lock()
SHM_BYTES = 1 << 20  # /dev/shm (POSIX semaphores need a little; memory is bounded elsewhere)
VAR_TMP_BYTES = 1 << 20  # a private /var/tmp, as small


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
    # the contest driver (keeper.py): it keeps CAP_SYS_ADMIN of the sandbox's user namespace out of the program's
    # reach to make fresh PID, IPC and network namespaces for each test, and the sandbox has no /proc (through
    # the sandbox's /proc a program would see the PIDs that earlier tests and samples took)
    isolate_tests: bool = False

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
    # an OOM kill during the run that the harness saw, outside this sandbox where its cgroup can tell (a note for
    # the record: never a reason to run a program again once its candidate started; docs/sandbox.md), or None
    outside_kill: str | None = None

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


# The rlimits fallback's boot, run by the sandbox's interpreter itself as (namespace) root in the program's new
# mount namespace (private propagation), before anything else: every mount point read-only (its own copies), a
# bounded /tmp, /dev/shm and /var/tmp of its own, an empty read-only tmpfs over every other world-writable
# directory and over the directories to hide, then (for the trusted driver) a PID namespace for the processes it
# forks (the candidate's: driver.py), then it drops to the slot's uid, with the parent-death signal set again (a
# change of uid clears it). A mount point it cannot make read-only is named on stderr ("sandbox: read-only
# remount of"). argv after -c: the size of /tmp in bytes, the directories to hide and the world-writable ones
# (":"-separated), 1 for the driver (0: a plain program, whose children stay in its namespace; 2: the contest
# driver, which makes namespaces for each test itself: as root it gets a user namespace of its own after the uid
# drop, whose capabilities allow that, and /proc is covered by an empty tmpfs), the uid to become (-1: stay).
_FALLBACK_BOOT = """import ctypes as _c, os as _o, sys as _s
def _reasoneval_boot(size, hide, empty, driver, uid):
    libc = _c.CDLL(None, use_errno=True)
    def mount(target, opts, flags=0):
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, opts.encode()) != 0:
            _s.stderr.write("sandbox: mount of %s failed (errno %d)\\n" % (target, _c.get_errno()))
            _s.exit(125)
    carried = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    with open("/proc/self/mountinfo", "rb") as f:
        info = f.read().decode("utf-8", "surrogateescape").splitlines()
    for line in info:
        fields = line.split()
        point = fields[4]
        for code, char in (("\\\\040", " "), ("\\\\011", "\\t"), ("\\\\012", "\\n"), ("\\\\134", "\\\\")):
            point = point.replace(code, char)
        if driver == "2" and uid >= 0 and point == "/proc":
            continue  # its maps are written below; then an empty tmpfs covers it
        flags = 32 | 4096 | 1  # MS_REMOUNT | MS_BIND | MS_RDONLY, and the flags the mount already has
        for opt in fields[5].split(","):
            flags |= carried.get(opt, 0)
        if libc.mount(None, point.encode("utf-8", "surrogateescape"), None, flags, None) != 0:
            _s.stderr.write("sandbox: read-only remount of %s failed (errno %d)\\n" % (point, _c.get_errno()))
    mount("/dev/shm", "size=%d,mode=1777" % SHM_BYTES)
    mount("/tmp", "size=%s,mode=1777" % size)
    for d in filter(None, empty.split(":")):
        if d == "/var/tmp":
            mount(d, "size=%d,mode=1777" % VAR_TMP_BYTES)
        elif d not in ("/tmp", "/dev/shm"):
            mount(d, "size=4096,mode=755", 1)  # MS_RDONLY
    for d in filter(None, hide.split(":")):
        mount(d, "size=4096,mode=755", 1)
    _o.chdir("/tmp")
    _o.environ["HOME"] = _o.environ["TMPDIR"] = "/tmp"
    if driver == "1":
        libc.unshare(0x20000000)  # CLONE_NEWPID: the driver's children (the candidate's side) get their own
    if driver == "2" and uid < 0:
        mount("/proc", "size=4096,mode=555", 1)
    if uid >= 0:
        _o.setgroups([])
        _o.setgid(uid)
        _o.setuid(uid)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if driver == "2" and uid >= 0:
        # CLONE_NEWUSER | CLONE_NEWNS: capabilities in a user namespace of the slot uid's (the host's uid stays);
        # dumpable for a moment (the uid change cleared it) so that its /proc/self maps are its own to write; the
        # driver makes itself non-dumpable again before it forks anything
        libc.prctl(4, 1, 0, 0, 0)
        if libc.unshare(0x10000000 | 0x20000) != 0:
            _s.stderr.write("sandbox: user namespace refused (errno %d)\\n" % _c.get_errno())
            _s.exit(125)
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                           ("gid_map", "%d %d 1" % (uid, uid))):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
        mount("/proc", "size=4096,mode=555", 1)
_reasoneval_boot(_s.argv.pop(1), _s.argv.pop(1), _s.argv.pop(1), _s.argv.pop(1), int(_s.argv.pop(1)))
del _reasoneval_boot, _c, _o, _s
""".replace("SHM_BYTES", str(SHM_BYTES)).replace("VAR_TMP_BYTES", str(VAR_TMP_BYTES))

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


def world_writable_dirs(root: str = "/", depth: int = 3) -> list[str]:
    """Directories any user may write to, down to `depth` levels under `root` (not under /proc or /sys, nor
    inside one already found): the fallback gives the program an empty one of its own in each place."""
    found: list[str] = []
    level = [root]
    for _ in range(depth):
        deeper: list[str] = []
        for d in level:
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.path in ("/proc", "/sys") or not e.is_dir(follow_symlinks=False):
                        continue
                    writable = e.stat(follow_symlinks=False).st_mode & 0o002
                except OSError:
                    continue
                (found if writable else deeper).append(e.path)
        level = deeper
    return sorted(found)


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
        self.setpriv = shutil.which("setpriv")
        self.cgroups = cgroup_memory()
        # (as root, the first process joins the cgroup as root and setpriv then drops to the slot's uid)
        self.use_cgroup = self.cgroups.parent is not None and (self.setpriv is not None or not self.as_root)
        prefix = _prefix_of(self.python)
        # the fallback's private places: an empty tmpfs of the program's own over each (an interpreter inside one
        # keeps it: its standard library must stay reachable)
        self.empty_dirs = [d for d in world_writable_dirs() if ":" not in d and
                           not (prefix + "/").startswith(d.rstrip("/") + "/")]
        self.readonly_failures: list[str] = []
        if mode == "auto":
            reason = self._probe_bwrap()
            if reason is None:
                mode = "bwrap"
            else:
                mode = "rlimits"
                self.warning = (f"bubblewrap unavailable ({reason}); generated code runs with rlimits, namespaces "
                                "of its own and a read-only view of the host's files, NOT isolated from the file "
                                "system (it can read what its uid may; docs/sandbox.md); install bubblewrap "
                                "(apt-get install bubblewrap)")
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
            self.readonly_failures = [line.split(" of ", 1)[1] for line in probe.stderr.splitlines()
                                      if line.startswith("sandbox: read-only remount of ")]
            if self.readonly_failures:
                log.warning("sandbox mode rlimits: these mount points stay writable for the program: %s",
                            ", ".join(self.readonly_failures))
        if self.warning:
            log.warning(self.warning)
        log.info("sandbox: %s mode; memory bound: %s", self.mode, self.memory_bound())

    def memory_bound(self) -> str:
        """Which memory bound is in force (`reasoneval doctor`, and the log line when the sandbox starts)."""
        per_process = "RLIMIT_AS per process (the code scorer's memory_mb, 1024 MiB by default)"
        if self.cgroups.parent is not None and not self.use_cgroup:
            return f"{per_process} only; none per sandbox: no setpriv on PATH to drop to the sandbox's uid"
        if self.cgroups.parent is None:
            return f"{per_process} only; {self.cgroups.describe()}"
        return f"{self.cgroups.describe()} (memory_mb each), and {per_process}"

    def judge_isolation(self) -> str:
        """Whether the candidate can reach its judge (docs/sandbox.md): by the mode, not probed."""
        if self.mode == "rlimits" and not self.full_unshare:
            return ("NOT isolated: the namespaces were refused, so the candidate runs in the driver's PID "
                    "namespace with the driver's uid and can signal it")
        return "the candidate runs in a PID namespace of its own, in its own session: the driver is out of its reach"

    def describe(self) -> dict[str, str]:
        """What `reasoneval doctor` prints about the sandbox."""
        facts = {
            "mode": self.mode + (f" (full namespaces: {'yes' if self.full_unshare else 'NO'})"
                                 if self.mode == "rlimits" else ""),
            "interpreter": self.python,
            "judge": self.judge_isolation(),
            "memory bound": self.memory_bound(),
            "dies with the harness": ("bwrap --die-with-parent" if self.mode == "bwrap" else
                                      "setpriv --pdeathsig KILL" if self.setpriv else "NO (no setpriv on PATH)"),
            "uids": (f"a block of {UID_BLOCK} per process, locked in {lock_dir()}" if self.as_root else
                     "the user's own (not root)"),
        }
        if self.mode == "rlimits":
            facts["private directories"] = " ".join(["/tmp", "/dev/shm"] + [d for d in self.empty_dirs
                                                                            if d not in ("/tmp", "/dev/shm")])
            facts["writable mount points"] = ", ".join(self.readonly_failures) or "none (all read-only)"
        if self.warning:
            facts["warning"] = self.warning
        return facts

    def _probe_bwrap(self) -> str | None:
        if shutil.which("bwrap") is None:
            return "no bwrap on PATH"
        _become_subreaper()
        self.mode = "bwrap"
        r = self.run("print('ok')", Limits(timeout_s=10))
        if r.status == "ok" and r.stdout.strip() == "ok":
            return None
        return f"bwrap failed: {(r.stderr.strip() or r.status)[-300:]}"

    def _bwrap_args(self, limits: Limits, driver: bool) -> list[str]:
        # the trusted driver keeps CAP_SYS_ADMIN in the sandbox's user namespace for one unshare(CLONE_NEWPID)
        # (the candidate's PID namespace), then drops every capability before it forks (driver.py)
        caps = ["--cap-drop", "ALL"] + (["--cap-add", "CAP_SYS_ADMIN"] if driver else [])
        # the driver is the sandbox's PID 1 (no bwrap init beside it: that process ran as the candidate's uid,
        # dumpable, and the candidate could open its /proc/1/mem for writing), non-dumpable from its first line,
        # as in the fallback; its own children are the candidate's namespace's init, which reaps for it
        caps += ["--as-pid-1"] if driver else []
        proc = [] if limits.isolate_tests else ["--proc", "/proc"]
        args = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                *caps, "--ro-bind", "/usr", "/usr",
                # a private /var/tmp (as in the fallback; before an interpreter's binds, which may be under it)
                "--size", str(VAR_TMP_BYTES), "--tmpfs", "/var/tmp"]
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
        args += [*proc, "--dev", "/dev",
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
        driver = tuple(program[:1]) == ("-c",)
        if self.mode == "bwrap":
            return rl + self._bwrap_args(limits, driver) + py
        # the sandbox dies with the harness: a parent-death signal (bwrap has --die-with-parent), set before
        # prlimit and unshare (an exec keeps it, a change of uid clears it: see _FALLBACK_BOOT)
        die = [self.setpriv, "--pdeathsig", "KILL", "--"] if self.setpriv else []
        # new network, IPC (System V shared memory dies with the program), PID (a fresh /proc: no other
        # process to see or signal; the program's PID 1 takes everything with it) and mount namespaces;
        # --kill-child: the program's PID 1 dies with unshare (a timeout kills unshare's process group)
        if not self.unshare_net:
            return die + rl + py
        if self.full_unshare:
            # new network, IPC, PID and mount namespaces; the interpreter mounts, drops to the slot's uid, installs
            # the seccomp filter, then runs the program (_FALLBACK_BOOT, seccomp.BOOT)
            spaces = ["-n", "-i", "-p", "-f", "--kill-child", "--mount-proc", "--"]
            code, extra = (program[1], list(program[2:])) if driver else (seccomp.STDIN_PROGRAM, [])
            boot = _FALLBACK_BOOT + (seccomp.BOOT if seccomp.supported() else "")
            args = [str(limits.tmp_mb << 20), ":".join(self._hidden_dirs()), ":".join(self.empty_dirs),
                    ("2" if limits.isolate_tests else "1") if driver else "0", str(uid if self.as_root else -1)]
            args += [seccomp.filter_program().hex()] if seccomp.supported() else []
            py = [self.python, "-I", "-c", boot + code, *args, *extra]
            return die + rl + ["unshare", *([] if self.as_root else ["-r"]), *spaces] + py
        if self.as_root:
            # unshare as root, then become the slot's uid (so that RLIMIT_NPROC applies; the parent-death signal
            # is set after the change of uid, which would clear it)
            return rl + ["unshare", "-n", f"--setgid={uid}", f"--setuid={uid}", "--"] + die + py
        return die + rl + ["unshare", "-r", "-n", "--"] + py

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
            # A plain program (stdin None: the probes, never a scored program) whose bwrap hit a namespace or
            # process limit while the kernel still tears down a previous sandbox of this uid: try again shortly.
            # A driver run is never run again here: only the scorer decides, from the driver's `started` line
            # (scorer.py), and nothing the program writes (stderr) or does (its exit status) takes part.
            if stdin is not None or r.status != "error" or "Resource temporarily unavailable" not in r.stderr:
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
        cgroup = None
        if self.use_cgroup:
            # the first process joins the slot's cgroup, then becomes what it runs: every process of the program
            # starts inside the memory bound (as root in bwrap mode, setpriv then drops to the slot's uid)
            cgroup = self.cgroups.slot(slot, limits.memory_mb << 20)
            if kw and self.setpriv is not None:
                cmd = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"] + cmd
                kw = {}
            cmd = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(cgroup / "cgroup.procs")] + cmd
        events = self.cgroups.events(cgroup) if cgroup is not None else {}
        host_ooms = host_oom_kills()
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
        # OOM kills, for the record only: no OOM kill makes a program run again once its candidate has started
        # (scorer.py); one inside the sandbox is the program's memory failure, whatever bound it reached
        outside = None
        host_rose = host_oom_kills() > host_ooms
        if cgroup is not None:
            after = self.cgroups.events(cgroup)
            if after.get("oom", 0) > events.get("oom", 0):
                stderr += f"\nsandbox: the program reached its memory bound ({limits.memory_mb} MiB, cgroup memory.max)\n"
            elif after.get("oom_kill", 0) > events.get("oom_kill", 0):
                stderr += "\nsandbox: an OOM killer ended a process of the program (another memory bound than its own)\n"
            elif host_rose:
                outside = "an OOM killer ended a process outside this sandbox during the run"
        elif host_rose:
            outside = "an OOM killer ended a process during the run (this sandbox's or another's: no cgroup to tell)"
        channel = None
        if chan_r >= 0:
            # every process that held the write end is gone (the sandbox's PID 1 took its namespace with it)
            os.set_blocking(chan_r, False)
            data = b""
            try:
                while len(data) < 4096:
                    chunk = os.read(chan_r, 4096 - len(data))
                    if not chunk:
                        break
                    data += chunk
            except BlockingIOError:
                pass
            finally:
                os.close(chan_r)
            channel = data.decode("ascii", errors="replace")
        if timed_out:
            status = "timeout"
        elif rc == 0:
            status = "ok"
        elif self.mode == "bwrap" and rc == 1 and stderr.startswith("bwrap:"):
            status = "error"
        else:
            status = "failed"
        return ProgramResult(status, rc, stdout, stderr, wall, channel, outside)


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
_CGROUPS: CgroupMemory | None = None


def cgroup_memory() -> CgroupMemory:
    """The process's per-sandbox cgroups (set up on first use; none where the machine does not allow them)."""
    global _CGROUPS
    with _UID_LOCK:
        if _CGROUPS is None:
            _CGROUPS = CgroupMemory()
        return _CGROUPS


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
