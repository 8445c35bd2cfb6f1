"""A program scorer's file of outcomes (code_runs.jsonl, contest_runs.jsonl, codeforces_runs.jsonl): program key ->
what running it gave, one typed line per program, appended as programs finish, so scoring a run again runs only the
programs it has not run. A torn last line (a kill mid-write) is skipped: that program runs again."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Generic, Mapping, Protocol, TypeVar

from reasoneval.errors import UserError
from reasoneval.scoring.base import ScoringContext

Outcome = TypeVar("Outcome")  # what running a program gave (scorer.RunOutcome, contest.ContestOutcome)


class RunLine(Protocol[Outcome]):
    """One line of the file: a JsonRecord dataclass of two fields, `key` and `outcome` (scorer.CodeRun, ...)."""

    def __init__(self, key: str, outcome: Outcome) -> None: ...

    @property
    def key(self) -> str: ...

    @property
    def outcome(self) -> Outcome: ...

    def to_json_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> RunLine[Outcome]: ...


class ProgramRunCache(Generic[Outcome]):
    """The outcomes of `path` (None: kept in memory only), each line a `line` record."""

    def __init__(self, path: Path | None, line: type[RunLine[Outcome]]) -> None:
        self.path = path
        self.line = line
        self.entries: dict[str, Outcome] = {}
        self._lock = threading.Lock()
        if path is not None and path.exists():
            with open(path, encoding="utf-8") as f:
                for text in f:
                    try:
                        run = line.from_json_dict(json.loads(text))
                    except (ValueError, TypeError, UserError):
                        continue  # a torn last line after a kill: that program runs again
                    self.entries[run.key] = run.outcome

    def get(self, key: str) -> Outcome | None:
        return self.entries.get(key)

    def put(self, key: str, outcome: Outcome) -> None:
        with self._lock:
            self.entries[key] = outcome
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(self.line(key, outcome).to_json_dict()) + "\n")


def run_cache(context: ScoringContext, file_name: str, line: type[RunLine[Outcome]]) -> ProgramRunCache[Outcome]:
    """The scoring context's cache of `file_name` in the run's cache folder (no folder: in memory), made once."""
    cache: ProgramRunCache[Outcome] = context.resource(file_name, lambda: ProgramRunCache(
        context.cache_dir / file_name if context.cache_dir is not None else None, line))
    return cache
