"""A results folder as `reasoneval view` reads it: every run directory under it (config.json; summary.json once
scored), each run's status, and paths the server may serve. Read-only: nothing here opens a file for writing.

The folder is walked on every request (cheap: one stat per directory), and a run's config.json and summary.json are
parsed again only when their size or modification time changed, so a folder of hundreds of runs lists in
milliseconds after the first scan.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from reasoneval.errors import UserError
from reasoneval.report.dashboards import Checkpoint, model_checkpoint
from reasoneval.report.runs import RunRow
from reasoneval.results.identity import RunSettings
from reasoneval.results.schema import RunConfig, RunResult, load_config, load_run
from reasoneval.run.repair import Damage, diagnose, summary_config
from reasoneval.run_files import CONFIG_FILE, LOCK_FILE, SAMPLES_FILE, SUMMARY_FILE

# A run with no summary.json whose journal changed within this many seconds, and whose store lock is free, is being
# scored (generation ended, `run` grades before it writes summary.json); older, it stopped before scoring: "failed".
SCORING_GRACE_S = 120.0

RUNNING, SCORING, COMPLETE, INCOMPLETE, FAILED = "running", "scoring", "complete", "incomplete", "failed"
# config.json or summary.json cannot be read: listed still, with what is wrong and the command that repairs it
DAMAGED = "damaged"


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class LockTable:
    """Which store locks are held, read once from /proc/locks (Linux): a process holding a run's `.lock` is a `run`
    generating into it. Reading the table never takes a lock, so the viewer cannot stop a run from starting. Where
    there is no /proc/locks, the lock file's last holder ("pid N") still alive is taken as holding it."""

    def __init__(self) -> None:
        self.flocks: set[tuple[int, int, int]] | None = set()  # (device major, minor, inode) of each flock'd file
        try:
            text = Path("/proc/locks").read_text()
        except OSError:
            self.flocks = None
            return
        for line in text.splitlines():  # "1: FLOCK  ADVISORY  WRITE 8972 fe:00:2146403 0 EOF"
            parts = line.split()
            if len(parts) < 6 or parts[1] != "FLOCK":
                continue
            try:
                major, minor, inode = parts[5].split(":")
                self.flocks.add((int(major, 16), int(minor, 16), int(inode)))
            except ValueError:
                continue

    def held(self, run_dir: Path) -> bool:
        path = run_dir / LOCK_FILE
        try:
            st = path.stat()
        except OSError:
            return False
        if self.flocks is not None:
            return (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in self.flocks
        try:
            os.kill(int(path.read_text().splitlines()[0].split()[-1]), 0)  # "pid N", then what it draws
            return True
        except (OSError, ValueError, IndexError):
            return False


@dataclass(frozen=True)
class Run:
    """One run directory: its config, its headline result once scored, its status and the checkpoint it evaluated."""

    dir: Path
    rel: str  # the path under the results folder, with "/"
    config: RunConfig
    result: RunResult | None
    status: str
    updated: float  # the newest modification time of its config, summary and journal (seconds since the epoch)
    # A damaged run, or one stopped before scoring: what is wrong and the command that repairs it (run/repair.py)
    damage: Damage | None = None

    @property
    def checkpoint(self) -> Checkpoint:
        return model_checkpoint(self.config)

    @property
    def row(self) -> RunRow | None:
        return RunRow(self.result) if self.result is not None else None


class Folder:
    """The runs under a results folder, parsed once per change of their files."""

    def __init__(self, root: Path) -> None:
        root = Path(root)
        if not root.is_dir():
            raise UserError(f"{root} is not a directory; pass the results folder (default: results)")
        self.root = root.resolve()
        self._cache: dict[Path, tuple[tuple[object, ...], RunConfig, RunResult | None, bool]] = {}

    def run_dirs(self) -> list[Path]:
        """Directories holding a config.json (a run, scored or not), the root itself included; a run's own folders
        (views/, report_files/) are not walked."""
        found = []
        for d, dirs, files in os.walk(self.root):
            if CONFIG_FILE in files:
                found.append(Path(d))
                dirs[:] = []
            dirs.sort()
        return sorted(found)

    def _load(self, d: Path) -> tuple[RunConfig, RunResult | None, bool]:
        """The run's config, its headline, and whether a file of them cannot be read (the run is listed still: its
        config then is summary.json's copy, or one naming only its folder)."""
        sig = (_signature(d / CONFIG_FILE), _signature(d / SUMMARY_FILE))
        hit = self._cache.get(d)
        if hit is not None and hit[0] == sig:
            return hit[1], hit[2], hit[3]
        damaged = False
        try:
            config = load_config(d)
        except (UserError, OSError, ValueError, TypeError, KeyError):
            config = summary_config(d) or RunConfig(run_id=d.name, settings=RunSettings(model=d.parent.name))
            result, damaged = None, True
        else:
            try:
                result = load_run(d) if sig[1] is not None else None
            except (UserError, OSError, ValueError, TypeError, KeyError):
                result, damaged = None, True
        self._cache[d] = (sig, config, result, damaged)
        return config, result, damaged

    def run(self, d: Path, locks: LockTable | None = None) -> Run | None:
        """The run at directory d (inside the folder), or None when it is not one (or cannot be read). locks: the
        table to read its status from (one for a whole scan); None: read it now."""
        config, result, damaged = self._load(d)
        journal, summary = _signature(d / SAMPLES_FILE), _signature(d / SUMMARY_FILE)
        times = [s[0] / 1e9 for s in (_signature(d / CONFIG_FILE), summary, journal) if s]
        updated = max(times, default=0.0)
        recent = journal is not None and time.time() - journal[0] / 1e9 <= SCORING_GRACE_S
        if (locks or LockTable()).held(d):
            status = RUNNING
        elif damaged:
            status = DAMAGED
        elif result is not None and (journal is None or summary is None or summary[0] >= journal[0] or not recent):
            status = COMPLETE if result.complete else INCOMPLETE
        else:  # no summary.json newer than the journal: being scored when the journal is recent, else stopped
            status = SCORING if recent else FAILED
        damage = diagnose(d, stopped=status == FAILED) if status in (DAMAGED, FAILED) else None
        rel = d.relative_to(self.root).as_posix()
        return Run(d, "" if rel == "." else rel, config, result, status, updated, damage)

    def runs(self) -> list[Run]:
        """Every run, ordered as `reasoneval runs` orders its rows (model, date, run id)."""
        locks = LockTable()
        out = [r for r in (self.run(d, locks) for d in self.run_dirs()) if r is not None]
        live = {r.dir for r in out}
        for d in [d for d in self._cache if d not in live]:
            del self._cache[d]
        return sorted(out, key=lambda r: (r.result.model if r.result else r.config.model,
                                          str(r.config.updated or r.config.created or ""), r.config.run_id))

    def resolve(self, rel: str) -> Path:
        """The path `rel` names under the folder (symbolic links followed); a UserError for one outside it."""
        if "\x00" in rel:
            raise UserError("refused: a path with a NUL byte")
        path = (self.root / rel.lstrip("/")).resolve()
        if path != self.root and self.root not in path.parents:
            raise UserError(f"refused: {rel!r} is outside the results folder")
        return path

    def run_at(self, rel: str) -> Run:
        d = self.resolve(rel)
        run = self.run(d) if (d / CONFIG_FILE).is_file() else None
        if run is None:
            raise UserError(f"no run directory at {rel!r} under the results folder")
        return run
