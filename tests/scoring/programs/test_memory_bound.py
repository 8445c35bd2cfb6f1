"""A memory bound per sandbox where the machine allows it (cgroup v2 with the memory controller, a cgroup this
process may write), per-process rlimits otherwise; `reasoneval doctor` and the sandbox's first log line say which
(issue 31), in both sandbox modes.

This machine's cgroup v2 hierarchy has no memory controller (it is in a cgroup v1 hierarchy the host manages), so
here the real test checks the per-process bound and that the sandbox says so; the cgroup set-up is checked
against a cgroupfs laid out as files (the kernel's side cannot run here)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasoneval.scoring.programs.sandbox import Limits, Sandbox
from reasoneval.scoring.programs.sandbox.cgroup import CgroupMemory, cgroup2_mount, own_cgroup
from tests.scoring.programs.test_sandbox import _sandboxed_processes


def _machine_allows_a_cgroup_bound() -> tuple[bool, str]:
    """Read independently of the sandbox's code: is there a cgroup v2 memory controller this process may use?"""
    mount = cgroup2_mount(Path("/proc/self/mountinfo").read_text())
    rel = own_cgroup(Path("/proc/self/cgroup").read_text())
    if mount is None or rel is None:
        return False, "no cgroup v2"
    own = Path(mount) / rel.lstrip("/")
    controllers = (own / "cgroup.controllers").read_text().split()
    return "memory" in controllers and os.access(own / "cgroup.subtree_control", os.W_OK), " ".join(controllers)


# three processes, each under its own address-space limit, together over the sandbox's bound
SPREAD = ("import os, time\nkids = []\nfor _ in range(2):\n    pid = os.fork()\n    if pid == 0:\n"
          "        b = bytearray(150 << 20)\n        time.sleep(1.5)\n        os._exit(0)\n    kids.append(pid)\n"
          "b = bytearray(150 << 20)\ntime.sleep(1.5)\nbad = [p for p in kids if os.waitpid(p, 0)[1] != 0]\n"
          "print('all three held 150 MiB' if not bad else 'killed: %d' % len(bad))\n")


def test_the_bound_in_force_is_the_one_the_machine_allows_and_the_sandbox_says_so(mode: str) -> None:
    allowed, controllers = _machine_allows_a_cgroup_bound()
    sb = Sandbox(mode)
    said = sb.memory_bound()
    limits = Limits(timeout_s=20, memory_mb=256)
    # one process over its own limit: MemoryError, whatever the machine
    one = sb.run("b = bytearray(300 << 20)\nprint('held')", limits)
    assert one.status == "failed" and "MemoryError" in one.stderr, one
    spread = sb.run(SPREAD, limits)
    assert _sandboxed_processes() == []
    if allowed:
        assert said.startswith("cgroup v2 memory.max per sandbox"), said
        assert "all three held" not in spread.stdout and "memory bound" in spread.stderr, spread
    else:
        assert said.startswith("RLIMIT_AS per process") and "none per sandbox" in said, said
        assert f"cgroup.controllers: {controllers}" in said or "no cgroup v2" in said, said
        assert spread.stdout.strip() == "all three held 150 MiB", spread  # the per-process bound only


def _fake_cgroupfs(root: Path, controllers: str, others: list[int]) -> Path:
    """A cgroup v2 mount as files: /proc/self's mountinfo and cgroup, and this process's cgroup directory."""
    proc = root / "proc"
    proc.mkdir()
    mount = root / "cgroup"
    own = mount / "user.slice" / "run-1.scope"
    own.mkdir(parents=True)
    (proc / "mountinfo").write_text(
        f"30 1 0:26 / {mount} rw,nosuid - cgroup2 cgroup2 rw\n40 1 254:0 / / rw - ext4 /dev/vda rw\n")
    (proc / "cgroup").write_text("0::/user.slice/run-1.scope\n")
    (own / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.subtree_control").write_text("\n")
    (own / "cgroup.procs").write_text("".join(f"{p}\n" for p in [os.getpid(), *others]))
    return own


def test_a_delegated_cgroup_gets_a_bounded_cgroup_per_slot(tmp_path: Path) -> None:
    own = _fake_cgroupfs(tmp_path, "cpu memory pids", [])
    cg = CgroupMemory(proc=tmp_path / "proc")
    assert cg.parent == own / f"reasoneval-{os.getpid()}", cg.reason
    # alone in its cgroup, the process moved itself to a leaf, then gave its children the memory controller
    assert (own / f"reasoneval-{os.getpid()}-harness" / "cgroup.procs").read_text() == str(os.getpid())
    assert (own / "cgroup.subtree_control").read_text() == "+memory"
    assert (cg.parent / "cgroup.subtree_control").read_text() == "+memory"
    slot = cg.slot(3, 256 << 20)
    assert slot == cg.parent / "slot-3" and (slot / "memory.max").read_text() == str(256 << 20)
    (slot / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert cg.events(slot) == {"low": 0, "high": 0, "max": 4, "oom": 1, "oom_kill": 1}
    assert cg.describe().startswith("cgroup v2 memory.max per sandbox")


@pytest.mark.parametrize("controllers, others, why", [
    ("cpu pids", [], "offers no memory controller"),
    ("cpu memory", [1234], "holds 1 other process"),
])
def test_where_the_machine_does_not_allow_it_the_reason_is_said(tmp_path: Path, controllers: str, others: list[int],
                                                                why: str) -> None:
    _fake_cgroupfs(tmp_path, controllers, others)
    cg = CgroupMemory(proc=tmp_path / "proc")
    assert cg.parent is None and why in cg.reason, cg.reason
    assert cg.describe().startswith("none per sandbox")
