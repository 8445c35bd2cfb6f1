"""A memory bound per sandbox through cgroup v2, where this process may make cgroups with the memory controller.

Where it can (a cgroup v2 hierarchy with the memory controller, a cgroup of this process's own that it may
write to: root on a cgroup v2 host, or a delegated systemd unit or scope), each sandbox slot gets a cgroup
`<own cgroup>/reasoneval-<pid>/slot-<i>` with `memory.max` (and `memory.swap.max` 0): every process of the
sandbox together, the tmpfs pages it writes included, stays under the bound. A process alone in its cgroup
moves itself into a leaf `<own cgroup>/reasoneval-<pid>-harness` first (cgroup v2 puts no processes beside
child cgroups that have controllers). Elsewhere, `CgroupMemory.reason` says why not, and the per-process
rlimits are the only memory bound (docs/sandbox.md).

The sandbox's first process joins its slot's cgroup before anything else runs (`sh -c 'echo 0 > cgroup.procs;
exec ...'`), so every process of the program is created inside it. Its `memory.events` tell the harness
whether an OOM kill was the sandbox's own bound (`oom`) or another one, the host's (`oom_kill` without `oom`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def cgroup2_mount(mountinfo: str) -> str | None:
    """Where the cgroup v2 hierarchy is mounted (`/proc/self/mountinfo`'s text), or None."""
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if sep and right.split(" ", 1)[0] == "cgroup2":
            return _unescape(left.split()[4])
    return None


def _unescape(path: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        path = path.replace(code, char)
    return path


def own_cgroup(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path (`/proc/self/cgroup`'s `0::` line), or None."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def _read(path: Path) -> str:
    return path.read_text(encoding="ascii", errors="replace").strip()


class CgroupMemory:
    """Per-slot cgroups with a memory bound, or `parent` None and `reason` saying why there are none."""

    def __init__(self, proc: Path = Path("/proc/self")) -> None:
        self.parent: Path | None = None
        self.reason = ""
        self._lock = threading.Lock()
        self._slots: dict[int, Path] = {}
        try:
            self.parent = self._prepare(proc)
        except OSError as e:
            self.reason = f"the cgroup could not be set up ({e})"

    def _prepare(self, proc: Path) -> Path | None:
        mount = cgroup2_mount((proc / "mountinfo").read_text())
        if mount is None:
            self.reason = "no cgroup v2 hierarchy is mounted"
            return None
        rel = own_cgroup((proc / "cgroup").read_text())
        if rel is None:
            self.reason = "this process is in no cgroup v2 cgroup"
            return None
        own = Path(mount) / rel.lstrip("/")
        controllers = _read(own / "cgroup.controllers").split()
        if "memory" not in controllers:
            self.reason = (f"the cgroup v2 hierarchy at {mount} offers no memory controller to {own} "
                           f"(cgroup.controllers: {' '.join(controllers) or 'none'})")
            return None
        if not os.access(own / "cgroup.subtree_control", os.W_OK) or not os.access(own, os.W_OK):
            self.reason = (f"{own} is not writable by this user (run reasoneval in a delegated cgroup, e.g. "
                           "systemd-run --user --scope -p Delegate=yes reasoneval ...)")
            return None
        pid = os.getpid()
        if "memory" not in _read(own / "cgroup.subtree_control").split():
            procs = [p for p in _read(own / "cgroup.procs").split() if p != str(pid)]
            if procs:
                self.reason = (f"{own} holds {len(procs)} other process(es), so its child cgroups cannot have the "
                               "memory controller (run reasoneval in a cgroup of its own, e.g. systemd-run --scope "
                               "-p Delegate=yes reasoneval ...)")
                return None
            leaf = own / f"reasoneval-{pid}-harness"
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(pid))
            (own / "cgroup.subtree_control").write_text("+memory")
        parent = own / f"reasoneval-{pid}"
        parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text("+memory")
        return parent

    def describe(self) -> str:
        if self.parent is None:
            return f"none per sandbox: {self.reason}"
        return f"cgroup v2 memory.max per sandbox, under {self.parent}"

    def slot(self, slot: int, limit_bytes: int) -> Path:
        """The cgroup of sandbox slot `slot`, bounded to limit_bytes (made on first use)."""
        assert self.parent is not None
        with self._lock:
            path = self._slots.get(slot)
            if path is None:
                path = self.parent / f"slot-{slot}"
                path.mkdir(exist_ok=True)
                self._slots[slot] = path
        (path / "memory.max").write_text(str(limit_bytes))
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")
        return path

    @staticmethod
    def events(path: Path) -> dict[str, int]:
        """The counters of the cgroup's memory.events (oom: its own bound was hit; oom_kill: processes killed)."""
        out: dict[str, int] = {}
        try:
            for line in (path / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                out[key] = int(value)
        except (OSError, ValueError):
            pass
        return out

    def close(self) -> None:
        with self._lock:
            for path in self._slots.values():
                try:
                    path.rmdir()
                except OSError:
                    pass
            self._slots.clear()
            if self.parent is not None:
                try:
                    self.parent.rmdir()
                except OSError:
                    pass


def host_oom_kills() -> int:
    """The kernel's count of OOM kills since boot (/proc/vmstat oom_kill; 0 where it is not readable)."""
    try:
        with open("/proc/vmstat", encoding="ascii") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
