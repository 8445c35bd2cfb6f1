"""Errors a user can act on. The CLI prints these as one line, without a traceback."""

from __future__ import annotations

from typing import Any


class UserError(Exception):
    """Bad input or environment: the message names what is wrong and what to do."""

    exit_code = 2


class RunIncomplete(Exception):
    """Some samples are missing or failed; summary.json was written with complete=false. `.summary` is the
    RunResult."""

    exit_code = 3

    def __init__(self, summary: Any, advice: str | None = None) -> None:
        """advice: what to do instead of re-running the same command, for a command that does not generate
        (`report`, `score`)."""
        missing = sum(t.num_missing for t in summary.tasks.values())
        headline = ("this command updated the run's headline too" if getattr(summary, "headline_changed", False)
                    else "the run's headline is as it was")
        where = (f"this command's table (in {summary.files_dir}) has \"complete\": false, and {headline}"
                 if getattr(summary, "view", None) else "summary.json has \"complete\": false")
        todo = advice or f"Re-run the same command to generate them: {summary.run_dir}"
        super().__init__(f"{missing} sample(s) are missing or failed (see run.log); {where}. {todo}")
        self.summary = summary


class EngineDown(UserError):
    """The engine itself cannot serve (a worker or server died, the engine is dead): the run stopped.

    The message is one line: what died, how, the last lines of its stderr or log, and what to try.
    Every finished sample is kept; re-running the same command resumes.
    """

    exit_code = 4
