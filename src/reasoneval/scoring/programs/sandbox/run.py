"""The sandbox: bubblewrap + seccomp + rlimits + a wall-clock kill, or, where bwrap cannot run, rlimits + new
network/IPC/PID/mount namespaces, a read-only view of the file system + the same seccomp filter
(docs/sandbox.md). Where cgroup v2 allows it, a memory bound per sandbox (cgroup.py).

One program per fresh process tree. The harness never imports, evals or execs the program: it writes it (or
the trusted driver's input) to a host temp file, and reads back capped stdout/stderr files and the driver's
verdict channel. When the harness runs as root, the sandboxed process runs as an unprivileged uid of this
process's own block (RLIMIT_NPROC is not enforced for root, and a root-owned process could undo the binds).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Sequence

from reasoneval.errors import UserError
from reasoneval.scoring.programs.sandbox import seccomp
from reasoneval.scoring.programs.sandbox.cgroup import CgroupMemory, host_oom_kills
from reasoneval.scoring.programs.sandbox.fallback import (
    _FALLBACK_BOOT,
    SHM_BYTES,
    VAR_TMP_BYTES,
    _third_party_dirs,
    world_writable_dirs,
)
from reasoneval.scoring.programs.sandbox.interpreter import default_python, prefix_of
from reasoneval.scoring.programs.sandbox.processes import (
    _UID_LOCK,
    UID_BLOCK,
    _become_subreaper,
    _child_pid,
    _count_processes,
    _kill,
    _read_capped,
    _reap_orphans_of,
    _reap_sandbox_init,
    lock_dir,
    uid_base,
)

log = logging.getLogger(__name__)

# Bump when the sandbox's rules (limits, environment, pass criterion) change: cached code grades are keyed on it.
# 3: the candidate in a PID namespace of its own, run as a module other than __main__; sets keep their order,
# built-in subclasses cross; no re-run the program can cause; the fallback's read-only file system.
# 4: the driver's `started` line (no re-run after it), control-flow exceptions cross as CandidateError.
# 5: contest programs: fresh PID/IPC/network namespaces per test, the CPU of every process counted, no /proc.
SANDBOX_VERSION = "5"
NOBODY = 65534
# As root, sandbox slot i runs as uid/gid base + i (no account needed): RLIMIT_NPROC counts per uid, so a fork
MODES = ("auto", "bwrap", "rlimits")
_LOCK = threading.Lock()


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
class Started:
    """A sandbox's process as Sandbox.start left it: bwrap's info pipe (-1 in the fallback), its cgroup, its uid."""

    proc: subprocess.Popen[bytes]
    info_r: int
    cgroup: Path | None
    uid: int


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


class Sandbox:
    """Builds the command that runs one program; `mode` is "bwrap" or "rlimits" (the fallback)."""

    def __init__(self, mode: str = "auto", python: str | None = None) -> None:
        if mode not in MODES:
            raise UserError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
        self.as_root = os.geteuid() == 0
        self.python = python or default_python(self.as_root)
        self.warning: str | None = None
        self.unshare_net = True
        self.full_unshare = True
        self.setpriv = shutil.which("setpriv")
        self.cgroups = cgroup_memory()
        # (as root, the first process joins the cgroup as root and setpriv then drops to the slot's uid)
        self.use_cgroup = self.cgroups.parent is not None and (self.setpriv is not None or not self.as_root)
        prefix = prefix_of(self.python)
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
        prefix = prefix_of(self.python)
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
        cands = _third_party_dirs("/usr") + _third_party_dirs(prefix_of(self.python))
        for var in ("REASONEVAL_DATA_DIR", "HF_HOME", "HF_DATASETS_CACHE"):
            if os.environ.get(var):
                cands.append(os.environ[var])
        cands.append(os.path.expanduser("~/.cache/huggingface"))
        prefix = prefix_of(self.python)
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

    def start(self, driver: str | None, limits: Limits, host_tmp: Path, slot: int, fin: IO[bytes], fout: IO[bytes],
              ferr: IO[bytes], driver_fds: tuple[int, int] | None = None) -> Started:
        """Start a sandbox (the caller waits for it): the program from `fin` (`driver` None), or the trusted driver
        `driver` as `python -I -c driver IN OUT` with `driver_fds` (IN, OUT) passed in and its stdin `fin`
        (/dev/null). Raises OSError where the process cannot start."""
        kw: dict[str, object] = {}
        cwd = None
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
        info_r = info_w = -1
        pass_fds: list[int] = list(driver_fds or ())
        seccomp_f = None
        if driver_fds is None or driver is None:
            cmd = self.command(limits, uid, ("-",))
        else:
            cmd = self.command(limits, uid, ("-c", driver, str(driver_fds[0]), str(driver_fds[1])))
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
        try:
            proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=cwd, env=env, close_fds=True,
                                    pass_fds=pass_fds, start_new_session=True, **kw)  # type: ignore[call-overload]
        except OSError:
            if info_r >= 0:
                os.close(info_r)
            raise
        finally:
            if info_w >= 0:
                os.close(info_w)
            if seccomp_f is not None:
                seccomp_f.close()
        return Started(proc, info_r, cgroup, uid)

    def stop(self, started: Started) -> int:
        """End a started sandbox (at once if it still runs) and everything in it; its exit status."""
        proc, info_r, uid = started.proc, started.info_r, started.uid
        init = _child_pid(info_r) if info_r >= 0 else None  # (bwrap writes it once)
        rc = proc.poll()
        if rc is None:
            rc = _kill(proc, init)
        if info_r >= 0:
            os.close(info_r)
            if init is not None:
                _reap_sandbox_init(init)
        if self.mode == "rlimits" and self.as_root:
            # No PID namespace here: a child that left the process group (setsid) survives the group kill.
            # Every process of the slot's uid belongs to this program, so kill them all, as that uid.
            subprocess.run(["kill", "-KILL", "-1"], user=uid, group=uid, extra_groups=[], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            _reap_orphans_of(uid)
        return rc

    def _run(self, source: str, limits: Limits, host_tmp: Path, slot: int, stdin: bytes | None) -> ProgramResult:
        prog, out, err = host_tmp / "program.py", host_tmp / "stdout", host_tmp / "stderr"
        # surrogatepass: a lone surrogate in model output is written as is (the program then fails to decode),
        # never an exception here
        prog.write_bytes(source.encode("utf-8", "surrogatepass") if stdin is None else stdin)
        start = time.monotonic()
        chan_r = chan_w = -1
        in_f = None
        if stdin is not None:
            in_f = open(prog, "rb")
            chan_r, chan_w = os.pipe()
        with open(prog if stdin is None else os.devnull, "rb") as fin, open(out, "wb") as fout, \
                open(err, "wb") as ferr:
            try:
                started = self.start(source if stdin is not None else None, limits, host_tmp, slot, fin, fout, ferr,
                                     (in_f.fileno(), chan_w) if in_f is not None else None)
            except OSError as e:
                if chan_r >= 0:
                    os.close(chan_r)
                return ProgramResult("error", None, "", f"sandbox could not start: {e}", 0.0)
            finally:
                if chan_w >= 0:
                    os.close(chan_w)
                if in_f is not None:
                    in_f.close()
            proc, cgroup = started.proc, started.cgroup
            events = self.cgroups.events(cgroup) if cgroup is not None else {}
            host_ooms = host_oom_kills()
            timed_out = False
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            rc = self.stop(started)
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
        self._slots_free = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[int]:
        """A free sandbox slot (its uid as root, its cgroup), held for the block (waiting for one: the code scorer's
        runs and the contest scorer's sessions share the slots)."""
        with self._slots_free:
            self._slots_free.wait_for(lambda: bool(self._slots))
            slot = self._slots.pop()
        try:
            yield slot
        finally:
            with self._slots_free:
                self._slots.append(slot)
                self._slots_free.notify()

    def _run_one(self, source: str, limits: Limits | None, stdin: bytes | None = None) -> ProgramResult:
        with self.slot() as slot:
            return self.sandbox.run(source, limits, slot, stdin)

    def run_many(self, sources: Sequence[str], limits: Limits | None = None,
                 stdins: Sequence[bytes | None] | None = None) -> list[ProgramResult]:
        """Run each source (stdins[i]: its input, then the source is given with -c; see Sandbox.run)."""
        ins = list(stdins) if stdins is not None else [None] * len(sources)
        return list(self._executor.map(lambda a: self._run_one(a[0], limits, a[1]), zip(sources, ins)))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
