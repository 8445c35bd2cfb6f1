"""A running evaluation followed from its journal (samples.jsonl) while `run` appends to it.

`Journal.update()` reads only the bytes appended since its last call; a last line without its newline (the writer
is midway) is left for the next call. From the lines it keeps, per task, which sample indices of each problem
finished, the failed lines, the retries (attempts beyond the first) and the tokens of recent samples: enough for
done of wanted, tokens/s and an ETA without holding a response in memory.

Interim figures (`interim`) follow the rule that every number shown is the run's own: pass@1 ± SE over only the
problems whose K samples are all in, graded by the task's own scorer, labelled with how many problems they cover;
never mixed with the headline (summary.json).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from reasoneval.results.schema import RunConfig
from reasoneval.run_files import SAMPLES_FILE

RATE_WINDOW_S = 60.0  # tokens/s and samples/s: over the samples that finished in the last minute


@dataclass
class TaskProgress:
    wanted_problems: int
    k: int
    done: dict[str, dict[int, int]] = field(default_factory=dict)  # key -> {finished index (< K): its line's offset}
    failed: int = 0
    retries: int = 0
    # Samples per problem the running command draws at most (an adaptive one: --max-n, of indices < k = 2 x --max-n);
    # None: k
    most: int | None = None
    # The problems the running command draws (None: any the journal has of the task)
    keys: frozenset[str] | None = None

    @property
    def wanted(self) -> int:
        return self.wanted_problems * (self.most if self.most is not None else self.k)

    @property
    def done_count(self) -> int:
        return sum(len(v) for v in self.done.values())

    def complete_problems(self) -> list[str]:
        return [key for key, idx in self.done.items() if len(idx) >= self.k]


class Journal:
    """The state of one run's journal, brought up to date by `update()` (appended bytes only)."""

    def __init__(self, run_dir: Path, config: RunConfig, drawing: Mapping[str, Any] | None = None) -> None:
        self.path = Path(run_dir) / SAMPLES_FILE
        self.config = config
        # What the running command said it draws (results.store.sample_store.read_drawing); None: config.json's
        # headline (an older writer)
        self.drawing = drawing
        self.offset = 0
        self.bad_lines = 0
        self.tasks: dict[str, TaskProgress] = {}
        self.recent: list[tuple[float, int]] = []  # (time, completion tokens) of samples finished lately
        self.last_time: float | None = None
        self._lock = threading.Lock()
        self._init_tasks(config)

    def _init_tasks(self, config: RunConfig) -> None:
        drawn = (self.drawing or {}).get("tasks") or {}
        for t, d in drawn.items():  # the running command's tasks: its problems, K or at most --max-n each
            most, keys = int(d["per_problem"]), frozenset(map(str, d["problems"]))
            self.tasks[t] = TaskProgress(len(keys), 2 * most if d.get("adaptive") else most,
                                         most=most if d.get("adaptive") else None, keys=keys)
        for t in config.tasks if not drawn else ():
            self.tasks[t] = TaskProgress(len(config.problem_keys.get(t) or []), int(config.task_n.get(t, config.n)))

    def update(self) -> None:
        with self._lock:
            try:
                size = self.path.stat().st_size
            except OSError:
                return
            if size < self.offset:  # replaced (never in a run directory): start again
                self.offset = 0
                self.tasks.clear()
                self._init_tasks(self.config)
            if size == self.offset:
                return
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(size - self.offset)
            end = data.rfind(b"\n")
            if end < 0:
                return  # a partial line only: the writer is midway
            pos = self.offset
            for line in data[:end].split(b"\n"):
                self._line(line, pos)
                pos += len(line) + 1
            self.offset += end + 1

    def _line(self, line: bytes, offset: int) -> None:
        if not line.strip():
            return
        try:
            d = json.loads(line)
        except ValueError:
            self.bad_lines += 1
            return
        if not isinstance(d, dict):
            self.bad_lines += 1
            return
        task = str(d.get("task"))
        tp = self.tasks.get(task)
        if tp is None and self.drawing is not None:
            return  # a task the running command does not draw
        if tp is None:  # a task config.json does not list yet (a command adding one): wanted unknown
            tp = self.tasks[task] = TaskProgress(0, int(self.config.n))
        if tp.keys is not None and str(d.get("problem_key")) not in tp.keys:
            return  # a problem the running command does not draw
        attempts = d.get("attempts")
        if isinstance(attempts, int) and attempts > 1:
            tp.retries += attempts - 1
        if d.get("status") != "ok":
            tp.failed += 1
            return
        i = d.get("index")
        if isinstance(i, int) and i < tp.k:
            tp.done.setdefault(str(d.get("problem_key")), {}).setdefault(i, offset)  # the first, as scoring reads it
        t = d.get("time")
        if isinstance(t, (int, float)):
            tokens = d.get("completion_tokens")
            self.recent.append((float(t), int(tokens) if isinstance(tokens, int) else 0))
            self.last_time = max(self.last_time or 0.0, float(t))

    def progress(self, now: float | None = None) -> dict[str, Any]:
        """Done of wanted per task, failures, retries, tokens/s and samples/s over the last minute, the ETA."""
        now = time.time() if now is None else now
        with self._lock:
            self.recent = [(t, n) for t, n in self.recent if t >= now - RATE_WINDOW_S]
            tasks: list[dict[str, Any]] = [
                {"task": name, "done": tp.done_count, "wanted": max(tp.wanted, tp.done_count), "k": tp.k,
                 "problems": tp.wanted_problems, "problems_complete": len(tp.complete_problems()), "failed": tp.failed,
                 "retries": tp.retries, "at_most": tp.most is not None} for name, tp in self.tasks.items()]
            span = now - min((t for t, _ in self.recent), default=now)
            span = max(span, 1.0)
            samples_s = len(self.recent) / span if self.recent else 0.0
            tokens_s = sum(n for _, n in self.recent) / span if self.recent else 0.0
        left = sum(int(t["wanted"]) - int(t["done"]) for t in tasks)
        return {"tasks": tasks, "done": sum(t["done"] for t in tasks), "wanted": sum(t["wanted"] for t in tasks),
                "failed": sum(t["failed"] for t in tasks), "retries": sum(t["retries"] for t in tasks),
                "tokens_per_s": tokens_s, "samples_per_s": samples_s,
                "eta_s": left / samples_s if samples_s > 0 and left > 0 else (0.0 if left == 0 else None),
                "last_sample": self.last_time, "bad_lines": self.bad_lines,
                # an adaptive command draws at most `wanted` (--max-n a problem): its ETA is an upper bound
                "at_most": any(t["at_most"] for t in tasks)}

    def complete_problems(self) -> dict[str, dict[str, dict[int, int]]]:
        """Per task, the problems whose K samples are all in: key -> {sample index: byte offset of its line}."""
        with self._lock:
            return {name: {key: dict(tp.done[key]) for key in tp.complete_problems()} for name, tp in self.tasks.items()}


class Interim:
    """pass@1 ± SE per task over the problems whose K samples are all in, graded by the task's own scorer (no grade
    cache: the viewer writes nothing into the run directory). Problems are graded once, as they complete."""

    def __init__(self, run_dir: Path, config: RunConfig) -> None:
        self.run_dir = Path(run_dir)
        self.config = config
        self.outcomes: dict[tuple[str, str], Any] = {}  # (task, key) -> ProblemOutcome
        self._lock = threading.Lock()

    def update(self, complete: dict[str, dict[str, dict[int, int]]], ks: dict[str, int]) -> dict[str, Any]:
        """complete: per task, the problems whose samples are all in, with their lines' offsets (Journal)."""
        from reasoneval.metrics import task_metrics
        from reasoneval.results.store.problems import read_problems
        from reasoneval.results.stream import score_store
        from reasoneval.scoring.base import ScoringContext, TaskScoring, create_scorer

        with self._lock:
            new = {(t, k) for t, keys in complete.items() for k in keys if (t, k) not in self.outcomes}
            if new:
                problems = [p for p in read_problems(self.run_dir) if (p.task, p.key) in new]
                tasks = sorted({p.task for p in problems})
                with ScoringContext(workers=1) as context:
                    scorers = {t: create_scorer(self.config.scoring.get(t) or TaskScoring(), context) for t in tasks}
                    offsets = {(p.task, p.key): complete[p.task][p.key] for p in problems}
                    outcomes = score_store(self.run_dir, problems, {t: ks[t] for t in tasks}, scorers, offsets=offsets)
                for os_ in outcomes.values():
                    for o in os_:
                        self.outcomes[(o.task, o.problem_key)] = o
            out = {}
            for t, keys in complete.items():
                os_ = [self.outcomes[(t, k)] for k in keys if (t, k) in self.outcomes]
                if not os_:
                    continue
                m = task_metrics(os_, ks[t])
                out[t] = {"problems": len(os_), "of": len(self.config.problem_keys.get(t) or []), "mean": m.mean,
                          "stderr": m.stderr}
            return out
