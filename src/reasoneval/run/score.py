"""Scoring, the second half of a run: `score_run(run_dir)` reads only the run directory, scores one command's scope
a chunk of problems at a time (results.stream), computes the metrics (metrics; an adaptive task's estimates in
metrics.adaptive_estimates), decides with results.scope.decide whether the result is the headline or a view, and
writes the renderers of each through one atomic.FileSet. No engine is involved: scoring never holds a GPU."""


from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.atomic import FileSet
from reasoneval.errors import UserError
from reasoneval.metrics import aggregate_metrics, breakdown, se_vs_k, task_metrics
from reasoneval.metrics.adaptive_estimates import adaptive_summary, plan_se_of, with_estimates
from reasoneval.metrics.plan_adaptive import PILOT
from reasoneval.metrics.rating import rating_from
from reasoneval.records import Problem
from reasoneval.report.html_page import write_run_html
from reasoneval.report.parquet import ResultsWriter
from reasoneval.report.summary_json import write_summary
from reasoneval.report.table import render_table
from reasoneval.results.schema import GenerationTiming, RunConfig, RunResult, load_config, load_run
from reasoneval.results.scope import (
    Scope,
    TaskScope,
    decide,
    describe,
    evaluation_note,
    headline_scope,
    task_complete,
    with_scope,
)
from reasoneval.results.store import read_problems
from reasoneval.results.stream import ChunkSink, ScoredProblem, score_store
from reasoneval.run.repair import summary_config
from reasoneval.run_files import CONFIG_FILE, RESULTS_FILE, SUMMARY_FILE
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.base import GRADING_TIMEOUT_S
from reasoneval.scoring.judge.cascade import judged_by

log = logging.getLogger("reasoneval")

# Metadata fields that get an accuracy breakdown in summary.json where the data has them.
BREAKDOWN_FIELDS = ("subject", "level", "difficulty", "platform", "rating_band", "contest_year")
# Response bytes per results.parquet batch (Arrow holds ~3x that while building and compressing it).
PARQUET_BATCH_BYTES = 8 << 20


def disk_error(e: OSError, where: Path | str) -> UserError:
    """A write that failed (disk full, read-only, quota) as a one-line error; the journal keeps
    every finished sample (the store cuts a partly written line back out)."""
    return UserError(f"cannot write {e.filename or where}: {e.strerror or e}; finished samples are kept. Free "
                     "space (or make it writable) and re-run the same command")


def score_run(run_dir: Path, *, n: int | None = None, tasks: Sequence[str] | None = None,
              workers: int | None = None, grading_timeout: float = GRADING_TIMEOUT_S, print_table: bool = True,
              write: bool = True, scope: Scope | None = None, adaptive: Mapping[str, Any] | None = None,
              command: RunConfig | None = None, judge_model: str | None = None,
              judge_base_url: str | None = None) -> RunResult:
    """Score a run directory's store for one command and print its table; no request is sent. Returns the
    command's result.

    What the command covers (results/scope.py): `scope` (run: its tasks, problems and K, with `adaptive`, its
    --target-se settings), else the run's headline, narrowed to `tasks` and with sample indices < `n` when
    given. With `write`, the run's headline (summary.json, results.parquet, report.html, config.json) becomes
    this result when it is the widest complete evaluation (`choose_headline`); a narrower command writes its
    result as a view under views/<name>/ and leaves the headline as it was. Every file changes together or not
    at all (atomic.FileSet): a command that fails leaves them as they were.

    `command`: the config of the command that generated (run, a sweep's job), whose provenance (each task's
    datasets, the generation's timing) goes with its evaluation: into the headline's config.json and summary.json
    for the tasks where its evaluation becomes the headline's, else into its view only.
    """
    run_dir = Path(run_dir)
    on_disk, restored = _readable_config(run_dir)
    config = on_disk
    if judge_base_url is not None:  # report --judge-base-url (--judge-model): the judge, recorded with the headline
        config = dataclasses.replace(config, scoring={t: judged_by(s, judge_model, judge_base_url)
                                                      for t, s in config.scoring.items()})
    all_problems = read_problems(run_dir)
    known: dict[str, list[str]] = {}
    for p in all_problems:
        known.setdefault(p.task, []).append(p.key)
    headline = headline_scope(config, known)
    if scope is None:
        scope = _asked_scope(run_dir, config, headline, known, n, tasks)
    try:
        with ScoringContext(workers=workers, timeout_s=grading_timeout, cache_dir=run_dir) as context, FileSet() as files:
            own = _with_provenance(config, command, list(scope), view=True)
            result, parquet = _evaluate(run_dir, own, scope, adaptive, all_problems, context, files if write else None)
            if write:
                decision = decide(headline, _headline_complete(run_dir), scope,
                                  {t: task_complete(result, t) for t in scope})
                chosen = decision.headline
                if decision.reorder:  # config.json keeps the headline's order: summary.json agrees with it
                    result = _in_task_order(result, own, chosen, adaptive)
                note = evaluation_note(headline, scope, chosen)
                top_config = _with_provenance(with_scope(config, chosen, adaptive), command,
                                              [t for t in scope if chosen.get(t) == scope[t]])
                if decision.rescore_headline:
                    top, top_parquet = _evaluate(run_dir, top_config, chosen, top_config.adaptive, all_problems, context,
                                                 files)
                    _stage(top, top_parquet, files)
                if decision.view is None:
                    _stage(result, parquet, files)
                # Whether the headline changes is read off its files, before and after (issue 41.3), timestamps aside:
                # a re-scored adaptive headline of the same samples is unchanged (issue 52.5).
                changed = _changes(files, run_dir / SUMMARY_FILE) \
                    or _bare(top_config.to_json_dict()) != _bare(on_disk.to_json_dict())
                if _bare(with_scope(config, chosen, adaptive).to_json_dict()) != _bare(config.to_json_dict()):
                    # config.json's `updated`: when what the headline covers last changed (a view leaves it)
                    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                    top_config = dataclasses.replace(top_config, updated=now)
                    if decision.rescore_headline:  # its copy of the config says so too
                        write_summary(dataclasses.replace(top, config=dataclasses.replace(top.config, updated=now)), files)
                    if decision.view is None:
                        result = dataclasses.replace(result, config=dataclasses.replace(result.config, updated=now))
                        write_summary(result, files)
                if top_config != on_disk or restored:
                    files.write_json(run_dir / CONFIG_FILE, top_config.to_json_dict())
                if note is not None:
                    result = dataclasses.replace(result, evaluation_note=note)
                if decision.view is not None:  # narrower, or only part of a wider headline: this command's view
                    result = dataclasses.replace(result, view=decision.view, headline_changed=changed,
                                                 headline_scope=describe(chosen) if changed else None)
                    _stage(result, parquet, files)
    except OSError as e:
        raise disk_error(e, run_dir) from None
    if print_table:
        render_table(result)
    return result


def _bare(d: Any) -> Any:
    """A JSON value without its `updated` fields (when it was written, not what it says)."""
    if isinstance(d, dict):
        return {k: _bare(v) for k, v in d.items() if k != "updated"}
    return d


def _changes(files: FileSet, path: Path) -> bool:
    """Whether the commit changes the JSON file at path other than in when it was written (`updated`, its config's)."""
    if not files.changes(path):
        return False
    try:
        staged = files.staged(path)
        assert staged is not None  # it changes: it is staged
        old, new = json.loads(path.read_text(encoding="utf-8")), json.loads(staged.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    return bool(_bare(old) != _bare(new))


def _readable_config(run_dir: Path) -> tuple[RunConfig, bool]:
    """config.json, or (when it cannot be read: empty, cut short) the copy summary.json holds, which this command then
    writes back (True); the repair `view` and `runs` name for such a run (run/repair.py, issue 52.6)."""
    try:
        return load_config(run_dir), False
    except UserError:
        saved = summary_config(run_dir) if (run_dir / CONFIG_FILE).exists() else None
        if saved is None:
            raise
        log.warning("%s cannot be read: restoring it from the copy in %s", run_dir / CONFIG_FILE, SUMMARY_FILE)
        return saved, True


def _with_provenance(config: RunConfig, command: RunConfig | None, tasks: Sequence[str], view: bool = False
                     ) -> RunConfig:
    """`config` with the command's provenance for `tasks`: their datasets (the problems the command asked them
    with), and its generation's timing. For the headline (view False) only when some task's evaluation is the
    command's and the command generated something: a command that generated nothing leaves the timing of the
    one that did."""
    if command is None or not tasks:
        return config
    datasets = {**config.datasets, **{t: command.datasets[t] for t in tasks if t in command.datasets}}
    timing = config.last_generation
    if view or (command.last_generation is not None and command.last_generation.requests):
        timing = command.last_generation
    if datasets == config.datasets and timing == config.last_generation:
        return config
    return dataclasses.replace(config, datasets=datasets, last_generation=timing)


def _in_task_order(result: RunResult, config: RunConfig, scope: Scope, adaptive: Mapping[str, Any] | None
                   ) -> RunResult:
    """`result` (of the same tasks as `scope`) with its tasks in `scope`'s order."""
    return dataclasses.replace(result, tasks={t: result.tasks[t] for t in scope}, config=with_scope(config, scope, adaptive),
                               adaptive=None if result.adaptive is None else
                               {t: result.adaptive[t] for t in scope if t in result.adaptive})


def _asked_scope(run_dir: Path, config: RunConfig, headline: Scope, known: Mapping[str, Sequence[str]],
                 n: int | None, tasks: Sequence[str] | None) -> Scope:
    """`report` / `score` of a run directory: the headline's tasks (or `tasks`: the headline's problems of each,
    or every problem the store has of a task the headline lacks), with sample indices < n when given."""
    if n is not None and n < 1:
        raise UserError(f"--n must be at least 1 (got {n})")
    if tasks is not None:
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise UserError(f"{run_dir} has no samples of task(s) {', '.join(unknown)}; it has: "
                            + ", ".join(sorted(known)))
    names = list(tasks) if tasks is not None else (list(headline) or list(known))
    out: Scope = {}
    for t in names:
        h = headline.get(t)
        problems = h.problems if h is not None else tuple(known.get(t, ()))
        # --n asks for K samples per problem: a fixed-K evaluation of the first n (indices < n), even of an adaptive
        # task (its view is named and labelled as what it is: `aime24-n4`, K = 4; issue 41.4).
        out[t] = TaskScope(problems, n or (h.n if h is not None else config.n), n is None and h is not None and h.adaptive)
    return out


def _headline_complete(run_dir: Path) -> dict[str, bool]:
    """Which tasks of the headline on disk are complete (none when it was never scored or cannot be read)."""
    if not (run_dir / SUMMARY_FILE).exists():
        return {}
    try:
        result = load_run(run_dir)
    except UserError:
        return {}
    return {t: task_complete(result, t) for t in result.tasks}


def _stage(result: RunResult, parquet: Path | None, files: FileSet) -> None:
    """The result's summary.json, report.html and results.parquet, moved into its folder at the commit."""
    if parquet is None:
        return
    write_summary(result, files)
    write_run_html(result, files=files, parquet=parquet)
    files.adopt(parquet, result.files_dir / RESULTS_FILE)


def _evaluate(run_dir: Path, config: RunConfig, scope: Scope, adaptive_settings: Mapping[str, Any] | None,
              all_problems: Sequence[Problem], context: ScoringContext, files: FileSet | None
              ) -> tuple[RunResult, Path | None]:
    """Score `scope`'s samples: its result, and (with `files`) its results.parquet, written to a temporary."""
    position = {(t, k): i for t, s in scope.items() for i, k in enumerate(s.problems)}
    order = {t: i for i, t in enumerate(scope)}
    problems = sorted((p for p in all_problems if (p.task, p.key) in position),
                      key=lambda p: (order[p.task], position[(p.task, p.key)]))
    if not problems:
        raise UserError(f"{run_dir} holds no problems to report on (check --tasks)")
    names = list(scope)
    scorers = {t: create_scorer(config.scoring.get(t) or TaskScoring(), context) for t in names}
    extra = {t: {name: create_scorer(s, context) for name, s in (config.scoring.get(t) or TaskScoring()).extra.items()}
             for t in names}
    parquet = files.scratch(run_dir / RESULTS_FILE) if files is not None else None
    writer = ResultsWriter(parquet) if parquet is not None else None
    settings = adaptive_settings if adaptive_settings is not None else config.adaptive
    # An adaptive task's rows of more than its pilot wait for its estimates: results.parquet holds the samples its
    # design drew only, not those a later fixed K added (issue 52.1; which they are depends on every problem's pilot).
    held: list[ScoredProblem] = []
    try:
        outcomes = score_store(run_dir, problems, {t: s.n for t, s in scope.items()}, scorers,
                               _parquet_sink(writer, {t for t, s in scope.items() if s.adaptive}, held)
                               if writer else None, extra)
        # No fixed K in an adaptive task: problems differ in n_i by design (metrics over k go up to the smallest
        # n_i), and each problem's accuracy is the design's estimate (run/adaptive.py).
        estimated = with_estimates({t: os_ for t, os_ in outcomes.items() if scope[t].adaptive}, settings or {})
        if writer is not None:
            drawn = {(o.task, o.problem_key): set(o.indices) for os_ in estimated.values() for o in os_ if o.indices}
            for sp in held:
                writer.add(_only(sp, drawn.get((sp.problem.task, sp.problem.key))))
    finally:
        if writer is not None:
            writer.close()
    adaptive = {}
    planned = plan_se_of(estimated, settings or {})
    for t, os_ in estimated.items():
        outcomes[t] = os_
        adaptive[t] = adaptive_summary(os_, settings or {}, t, planned.get(t))
    for t, os_ in outcomes.items():
        if t not in adaptive and config.engine == "score":
            # A file of generations: each problem has the responses its rows gave, none is missing.
            outcomes[t] = [dataclasses.replace(o, num_missing=0) for o in os_]
    metadata = {(p.task, p.key): p.metadata for p in problems}
    per_task, bound = {}, {}
    for t, os_ in outcomes.items():
        bound[t] = (max((len(o.correct) for o in os_), default=1) or 1) if t in adaptive else scope[t].n
        meta = {o.problem_key: metadata[(t, o.problem_key)] for o in os_}
        fields = {f: breakdown(os_, meta, f) for f in BREAKDOWN_FIELDS}
        # The lm-eval columns per subject too (lm-eval's minerva_math reports one subtask per subject).
        for name in (config.scoring.get(t) or TaskScoring()).extra:
            fields[f"subject [{name}]"] = breakdown(os_, meta, "subject", metric=name)
        m = task_metrics(os_, bound[t])
        per_task[t] = dataclasses.replace(m, breakdown={f: b for f, b in fields.items() if b}, se_vs_k=se_vs_k(os_, bound[t]),
                                          evaluation=_evaluation(t in adaptive, scope[t].n, m.sample_range()),
                                          rating=rating_from((meta[o.problem_key].get("rating"), o.correct) for o in os_))
    for t, scorer in scorers.items():  # a scorer's figures of the whole task (the cascade's HLE calibration error)
        task_figures = getattr(scorer, "task_figures", None)
        if callable(task_figures) and t in per_task:
            per_task[t] = dataclasses.replace(per_task[t], extra={**per_task[t].extra, **task_figures()})
    K = max(bound.values(), default=1)
    kinds = {(e["kind"], e.get("k")) for e in (m.evaluation for m in per_task.values())}
    aggregate = aggregate_metrics(outcomes, K)
    if len(kinds) == 1:  # tasks of one evaluation: the pool is of it too
        (kind, k), = kinds
        aggregate = dataclasses.replace(aggregate, evaluation=_evaluation(kind == "adaptive", k or K, aggregate.sample_range()))
    result = RunResult(
        model=config.model, run_id=config.run_id, run_dir=run_dir, config=with_scope(config, scope, adaptive_settings),
        n=K, tasks=per_task, aggregate=aggregate, timing=config.last_generation or GenerationTiming(),
        complete=all(o.num_missing == 0 for os_ in outcomes.values() for o in os_)
        and all(a["stopped"] is not None for a in adaptive.values()), adaptive=adaptive or None,
        scorers={s.name: s.version for s in [*scorers.values(), *(e for d in extra.values() for e in d.values())]})
    return result, parquet


def _evaluation(adaptive: bool, k: int, samples: tuple[int, int]) -> dict[str, Any]:
    """TaskMetrics.evaluation: which evaluation an entry's figures come from, and the samples per problem it used."""
    head: dict[str, Any] = {"kind": "adaptive"} if adaptive else {"kind": "fixed", "k": k}
    return {**head, "samples_per_problem": list(samples)}


def _only(sp: ScoredProblem, indices: set[int] | None) -> ScoredProblem:
    """`sp` with only the samples of these indices (None: all of them)."""
    if indices is None or all(r.index in indices for r in sp.samples):
        return sp
    pos = [i for i, r in enumerate(sp.samples) if r.index in indices]
    return dataclasses.replace(sp, samples=[sp.samples[i] for i in pos], scores=[sp.scores[i] for i in pos],
                               extra_scores={k: [v[i] for i in pos] for k, v in sp.extra_scores.items()})


def _parquet_sink(writer: ResultsWriter, hold: set[str], held: list[ScoredProblem]) -> ChunkSink:
    """Each chunk's rows to the writer; those of the tasks in `hold` to `held` instead (written later)."""
    written = {"bytes": 0, "rows": 0}

    def sink(scored: Sequence[ScoredProblem], size: int) -> None:
        # Parquet rows wait in the writer until a batch is full: keep a batch near PARQUET_BATCH_BYTES of
        # responses (256 rows of short answers, 2 of 4 MB ones).
        written["bytes"] += size
        written["rows"] += len(scored)
        writer.batch_rows = max(1, min(256, PARQUET_BATCH_BYTES * written["rows"] // max(1, written["bytes"])))
        for sp in scored:
            if sp.problem.task in hold and len(sp.samples) > PILOT:  # the design may leave some of them out
                held.append(sp)
            else:
                writer.add(sp)

    return sink
