"""What is wrong with a run directory that has no readable headline, and the command that repairs it (issue 52.6):
`view` and `runs` list such a run, marked with both, instead of leaving it out.

- config.json unreadable (empty, cut short, not a config): `reasoneval report DIR` when summary.json holds a readable
  copy of it (score_run restores config.json from it), else the `reasoneval run` command that made the run;
- summary.json unreadable: `reasoneval report DIR` (it scores the samples again and writes it whole);
- no summary.json, and no command holds the run (it stopped before scoring): `reasoneval report DIR` when the journal
  has finished samples, else the `reasoneval run` command that generates them.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from reasoneval.errors import UserError
from reasoneval.results.schema import RunConfig, load_config, load_run
from reasoneval.run.rerun import run_command
from reasoneval.run_files import CONFIG_FILE, SAMPLES_FILE, SUMMARY_FILE


@dataclass(frozen=True)
class Damage:
    """A run directory's fault: what is wrong (one line) and the command that repairs it."""

    problem: str
    repair: str


def summary_config(run_dir: Path) -> RunConfig | None:
    """The copy of config.json summary.json holds (its `config`), or None when it has no readable one."""
    try:
        d = json.loads((Path(run_dir) / SUMMARY_FILE).read_text(encoding="utf-8"))
        return RunConfig.from_json_dict(d["config"]) if isinstance(d, dict) and isinstance(d.get("config"), dict) else None
    except (OSError, ValueError, TypeError, KeyError, UserError):
        return None


def report_command(run_dir: Path) -> str:
    return shlex.join(["reasoneval", "report", str(run_dir)])


def _has_samples(run_dir: Path) -> bool:
    try:
        with open(run_dir / SAMPLES_FILE, encoding="utf-8") as f:
            return any('"status": "ok"' in line or '"status":"ok"' in line for line in f)
    except OSError:
        return False


def diagnose(run_dir: Path, *, stopped: bool) -> Damage | None:
    """The fault of the run at run_dir, or None when its config.json and summary.json read (or it is not scored yet
    because a command is still at it: `stopped` False)."""
    run_dir = Path(run_dir)
    try:
        config = load_config(run_dir)
    except UserError as e:
        saved = summary_config(run_dir)
        if saved is not None:
            return Damage(f"{CONFIG_FILE} cannot be read ({e}); summary.json holds a copy", report_command(run_dir))
        return Damage(f"{CONFIG_FILE} cannot be read ({e}), and summary.json holds no copy of it",
                      "the `reasoneval run` command that made this run, with the same flags (it writes config.json "
                      "again and keeps every sample)")
    if (run_dir / SUMMARY_FILE).exists():
        try:
            load_run(run_dir)
            return None
        except (UserError, ValueError, TypeError, KeyError) as e:
            return Damage(f"{SUMMARY_FILE} cannot be read ({e})", report_command(run_dir))
    if not stopped:
        return None
    if _has_samples(run_dir):
        return Damage("stopped before scoring: no summary.json", report_command(run_dir))
    return Damage("stopped before its first sample: no summary.json",
                  run_command(config, config.tasks, config.n, run_dir))


def unscored_runs(root: Path) -> list[tuple[Path, Damage]]:
    """The run directories under root (a config.json, or a journal beside one) whose headline cannot be read, each
    with its fault: what `runs` lists under its table. A run that has no summary.json yet counts as stopped (`runs`
    does not tell a command at it from one that stopped: the repair, `report`, is harmless on either)."""
    import os

    out = []
    for d, dirs, files in os.walk(root):
        if CONFIG_FILE in files:
            dirs[:] = []
            damage = diagnose(Path(d), stopped=True)
            if damage is not None:
                out.append((Path(d), damage))
        dirs.sort()
    return sorted(out)
