"""This machine, as the caches that remember what was measured on it see it: where reasoneval keeps such caches
(`$XDG_CACHE_HOME/reasoneval/`, else `~/.cache/reasoneval/`) and the CPU's model name, part of their keys."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """reasoneval's folder of caches that outlive a run: `$XDG_CACHE_HOME/reasoneval`, else `~/.cache/reasoneval`."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "reasoneval"


def user_cache_file(env: str, name: str) -> Path:
    """A cache file: the path `$env` names (a test's own, or a user's choice), else `name` in `user_cache_dir()`."""
    given = os.environ.get(env, "").strip()
    return Path(given).expanduser() if given else user_cache_dir() / name


def cpu_model() -> str | None:
    """The CPU's model name as /proc/cpuinfo gives it; None where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
