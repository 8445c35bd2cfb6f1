"""What one evaluation of a run covers (its scope), and which evaluation is the run's headline.

A scope says, per task, which problems (their keys, in order) and which samples (indices < n) an evaluation
uses; an adaptive task (`run --target-se`) uses what its stopping rule drew, indices < 2 x --max-n. Every
command that scores a run (`run`, `report`, `score`, a sweep's job) has one: the tasks, `--limit` and `--n` it
was given, or the headline's when it gave none.

The headline is what the run directory shows: summary.json, results.parquet, report.html, `runs` and the
dashboards. Per task it is the widest complete evaluation a command asked of the run (`choose_headline`):

- a command's scope replaces the headline's for a task when it is wider (every problem of the headline's,
  at least as many samples) and complete, or when the headline's is not complete either;
- a narrower command (fewer problems or samples), or one that is neither narrower nor wider (more samples on
  fewer problems), leaves it as it was: the command prints its own table and writes it as a view,
  `views/<name>/` in the run directory (`view_name`);
- a task the headline does not have joins it.

So a smoke test (`--limit 3 --n 1`) never replaces a K = 16 result, and a K extension that fails half-way
leaves the complete K = 16 result in place until a re-run completes it. docs/reporting.md, "What a run
directory shows".
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from reasoneval.results.schema import RunConfig, RunResult


@dataclass(frozen=True)
class TaskScope:
    """One task's part of an evaluation: these problems, sample indices < n (adaptive: what was drawn)."""

    problems: tuple[str, ...]
    n: int
    adaptive: bool = False

    def within(self, other: TaskScope) -> bool:
        """Every problem and sample this scope uses, `other` uses too. An adaptive scope uses some of the indices
        below its n, so a uniform one of the same n holds every sample it does (`--n 8` after `--target-se
        --max-n 4`: wider, it becomes the headline); a uniform one is not within an adaptive one of its n."""
        if not set(self.problems) <= set(other.problems):
            return False
        return self.n < other.n or (self.n == other.n and (self.adaptive or not other.adaptive))


Scope = dict[str, TaskScope]


def headline_scope(config: RunConfig, known: Mapping[str, Sequence[str]]) -> Scope:
    """The headline config.json records. known: every problem key of each task the store has (problems.jsonl), for
    configs that name a task without its problems (written before they were recorded): all of them then."""
    adaptive = set(config.adaptive.get("tasks") or config.tasks) if config.adaptive is not None else set()
    return {t: TaskScope(tuple(config.problem_keys.get(t) or known.get(t, ())), config.task_n.get(t, config.n),
                         t in adaptive) for t in config.tasks}


def with_scope(config: RunConfig, scope: Scope, adaptive: Mapping[str, Any] | None = None) -> RunConfig:
    """`config` describing `scope`: its tasks, problems and samples per task (`n` the largest; `task_n` only where
    they differ), and the adaptive settings of its adaptive tasks (`adaptive`: the command's, else config's)."""
    ns = {t: s.n for t, s in scope.items()}
    n = max(ns.values(), default=config.n)
    adaptive_tasks = [t for t, s in scope.items() if s.adaptive]
    settings = dict(adaptive if adaptive is not None else config.adaptive or {})
    if adaptive_tasks:
        stopped = {**((config.adaptive or {}).get("stopped") or {}), **(settings.get("stopped") or {})}
        settings = {**settings, "stopped": {t: v for t, v in stopped.items() if t in adaptive_tasks}, "tasks": adaptive_tasks}
    fields: dict[str, Any] = dict(tasks=list(scope), problem_keys={t: list(s.problems) for t, s in scope.items()}, n=n,
                                  task_n=ns if len(set(ns.values())) > 1 else {}, adaptive=settings if adaptive_tasks else None)
    if all(getattr(config, k) == v for k, v in fields.items()):
        return config
    return dataclasses.replace(config, **fields)


def task_complete(result: RunResult, task: str) -> bool:
    """A task of a scored result has every sample its scope asks for (an adaptive task: its sampling stopped)."""
    m = result.tasks.get(task)
    if m is None or m.num_missing:
        return False
    a = (result.adaptive or {}).get(task)
    return a is None or a.get("stopped") is not None


def choose_headline(old: Scope, old_complete: Mapping[str, bool], new: Scope, new_complete: Mapping[str, bool]) -> Scope:
    """The run's headline after a command with scope `new` (the module's rule), task by task: the old headline's
    tasks in their order, then the command's new ones."""
    out: Scope = {}
    for task, o in old.items():
        c = new.get(task)
        if c is None or (c != o and c.within(o)):
            out[task] = o  # not asked, or narrower: a view
        elif c == o:
            out[task] = c
        elif o.within(c) and (new_complete.get(task, False) or not old_complete.get(task, False)):
            out[task] = c  # wider, and complete (or the headline was not either)
        else:
            out[task] = o  # wider but not complete, or neither narrower nor wider
    for task, c in new.items():
        out.setdefault(task, c)
    return out


@dataclass(frozen=True)
class Decision:
    """What scoring one command's scope does to the run directory (`decide`)."""

    # The run's headline afterwards (config.json's tasks, problems and K).
    headline: Scope
    # The command's view folder (views/<name>/) when its result is not the headline; None: it is the headline.
    view: str | None
    # The command's result is the headline, its tasks in the headline's order (the old headline's first).
    reorder: bool
    # Beside a view, the headline is scored again: it changed (it takes some of the command's tasks), or may have
    # (it was not complete, or never scored; a task of it is adaptive: samples of it may have arrived since).
    rescore_headline: bool


def decide(old: Scope, old_complete: Mapping[str, bool], new: Scope, new_complete: Mapping[str, bool]) -> Decision:
    """The headline/view rule (the module's docstring) as one pure function of the headline's scope and which of its
    tasks were complete, and the command's scope and which of its tasks are: what score_run then writes."""
    chosen = choose_headline(old, old_complete, new, new_complete)
    if chosen == new:
        return Decision(chosen, None, list(chosen) != list(new), False)
    stale = not all(old_complete.get(t, False) and not s.adaptive for t, s in chosen.items())
    return Decision(chosen, view_name(new, chosen), False, chosen != old or stale)


def evaluation_note(old: Scope, new: Scope, chosen: Scope) -> str | None:
    """Where a command's evaluation of a task is of another kind than the headline's (adaptive beside fixed K), one
    line saying which of the two the headline is now and why: the two are never mixed in one entry (issue 52.1)."""
    notes = []
    for t, c in new.items():
        o, h = old.get(t), chosen.get(t)
        if o is None or h is None or o.adaptive == c.adaptive:
            continue
        kind = "the adaptive evaluation (--target-se)" if c.adaptive else f"a fixed K = {c.n} evaluation"
        other = "the adaptive evaluation (--target-se)" if o.adaptive else f"a fixed K = {o.n} evaluation"
        if h == c:
            notes.append(f"{kind} of {t} replaces the run's headline, {other}: it holds every sample index that one "
                         "may use")
        elif o.adaptive:
            notes.append(f"{kind} of {t} is a view beside the run's headline, {other} it does not replace: that one "
                         f"may draw up to {o.n} samples a problem (2 x --max-n), and its figures stay those of the "
                         "samples its design drew")
        else:
            notes.append(f"{kind} of {t} is a view beside the run's headline, {other} it does not replace: that one "
                         f"holds indices < {o.n}, and this one at most {c.n} (2 x --max-n)")
    return "; ".join(notes) or None


def describe(scope: Scope) -> str:
    """One line: `aime24 (30 problems, K = 4), math500 (500 problems, adaptive)`."""
    return ", ".join(f"{t} ({len(s.problems)} problems, {'adaptive' if s.adaptive else f'K = {s.n}'})"
                     for t, s in scope.items())


def view_name(scope: Scope, headline: Scope) -> str:
    """A view's folder name from what it covers: its tasks, `limitN` when each is the headline's (or the task's)
    first N problems (`Np` and the keys' digest for another subset), and its samples (`nK`, `adaptive`), e.g. `aime24-limit3-n1`."""
    parts = ["+".join(scope)]
    sizes = set()
    for t, s in scope.items():
        full = headline.get(t)
        if full is None or tuple(s.problems) != tuple(full.problems):
            prefix = full is not None and tuple(full.problems[:len(s.problems)]) == tuple(s.problems)
            if prefix or full is None:
                sizes.add(f"limit{len(s.problems)}")
            else:  # another subset: its keys' digest too, so two subsets of one size are two views
                sizes.add(f"{len(s.problems)}p{hashlib.sha256(chr(10).join(s.problems).encode()).hexdigest()[:6]}")
    if sizes:
        parts.append("+".join(sorted(sizes)))
    ns = sorted({"adaptive" if s.adaptive else f"n{s.n}" for s in scope.values()})
    parts.append("+".join(ns))
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "_", "-".join(parts))
    if len(name) > 80:  # many tasks: keep it a usable folder name, still one per scope
        digest = hashlib.sha256(repr(sorted((t, s.problems, s.n, s.adaptive) for t, s in scope.items())).encode())
        name = name[:64] + "-" + digest.hexdigest()[:8]
    return name
