"""The terminal table: per task and aggregate."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from reasoneval.metrics import TaskMetrics
from reasoneval.metrics.summary import GroupMetrics
from reasoneval.report.figures import adaptive_lines, k_note, maj_columns, pass_ks, sample_range, samples_label, view_line
from reasoneval.report.text import console_for_tables, pct, pct_se
from reasoneval.results.schema import RunResult
from reasoneval.scoring import TaskScoring
from reasoneval.scoring.lmeval import MATH_SUBJECT_SUFFIXES, lmeval_group, lmeval_subtask


def _row(name: str, m: TaskMetrics, ks: list[int], majs: list[int]) -> list[str]:
    tokens = m.tokens.mean
    return ([name, str(m.num_problems), pct_se(m.mean, m.stderr)]
            + [pct(m.pass_at_k.get(k)) for k in ks]
            + [pct(m.maj_at_k.get(k)) for k in majs]
            + ["-" if tokens is None else f"{tokens:.0f}", pct(m.truncation_rate)])


def _extra_rows(name: str, m: TaskMetrics, width: int) -> list[list[str]]:
    """One row per extra metric (lm-eval's strict-match, ..., IFEval's inst_strict, ...): its figure ± SE in the
    first figure column."""
    blank = [""] * width
    return [[escape(f"  {name} [{metric}]"), str(g.num_problems), pct_se(g.mean, g.stderr) + _counts(g), *blank]
            for metric, g in m.extra.items()]


def _counts(g: GroupMetrics) -> str:
    """A ratio metric's counts after its figure: " (2/4)"."""
    return "" if g.count is None or g.of is None else f" ({g.count}/{g.of})"


def judge_stage_lines(result: RunResult) -> list[str]:
    """A line per judged task (the cascade's figures): how many verdicts each stage decided, as counts and shares of
    the samples, and the rule/judge agreement over only the samples both decided, with that count."""
    out = []
    for name, m in result.tasks.items():
        stages = [(label, m.extra.get(key)) for key, label in (("decided_by_rule", "the rule"),
                                                              ("decided_by_judge", "the judge"),
                                                              ("ungraded", "ungraded"))]
        if any(g is None or g.count is None for _, g in stages):
            continue
        total = next(g.of for _, g in stages if g is not None)
        parts = ", ".join(f"{label} {g.count} ({pct(g.mean)}%)" for label, g in stages if g is not None)
        line = f"{name}: verdicts of {total} samples: {parts}"
        agree = m.extra.get("rule_judge_agreement")
        both = agree.of if agree is not None and agree.of is not None else 0
        if agree is not None and both:
            line += (f"; rule and judge agree on {agree.count} of the {both} samples both decided "
                     f"({pct(agree.mean)}%)")
        else:
            line += "; no sample decided by both rule and judge (no agreement figure)"
        out.append(line)
    return out


# the breakdowns shown as rows under their task (competition programming's difficulty, platform and rating band)
ROW_BREAKDOWNS = ("difficulty", "platform", "rating_band")


def _breakdown_rows(name: str, m: TaskMetrics, width: int) -> list[list[str]]:
    """One dim row per difficulty (then platform) of the task, pass@1 ± SE in the first figure column."""
    blank = [""] * width
    return [[escape(f"  {name} [{field}={value}]"), str(g.num_problems), pct_se(g.mean, g.stderr), *blank]
            for field in ROW_BREAKDOWNS for value, g in (m.breakdown.get(field) or {}).items()]


def task_options_lines(result: RunResult) -> list[str]:
    """A line per task run with options (LiveCodeBench's release and window): what the figures cover."""
    out = []
    for name in result.tasks:
        data = result.config.datasets.get(name)
        if data is None or not data.options:
            continue
        opts = dict(data.options)
        window = ""
        if "since" in opts or "until" in opts:
            window = f", contests {opts.pop('since', '...')} to {opts.pop('until', '...')}"
        rest = "".join(f", {k} {v}" for k, v in opts.items())
        out.append(f"{name}: {data.num_problems} problems{rest}{window}")
    return out


def ungraded_lines(result: RunResult) -> list[str]:
    """A line per task with ungraded samples (the cascade's judge failed, or a task that needs a judge ran without
    one): they are counted wrong, so its accuracy is a lower bound until they are graded."""
    out = []
    for name, m in result.tasks.items():
        g = m.extra.get("ungraded")
        if g is not None and g.mean:
            out.append(f"{name}: {pct(g.mean)}% of samples ungraded (the judge failed or answered out of format, or no "
                       "judge was given), counted wrong: re-score (`reasoneval report`) to ask the judge again")
    return out


def rating_lines(result: RunResult) -> list[str]:
    """A line per task with rated problems: its Codeforces-style rating and interval (metrics/rating.py)."""
    return [f"{name}: Codeforces rating {m.rating.describe()}, from {m.rating.num_problems} rated problems"
            + (f" ({m.rating.num_unrated} unrated left out)" if m.rating.num_unrated else "")
            for name, m in result.tasks.items() if m.rating is not None]


def coverage_lines(result: RunResult) -> list[str]:
    """A line per task that records how its problems were judged and which were left out before the run
    (config.json's datasets[task].judged_by, .left_out: the codeforces task): what its figures, a rating among them,
    rest on."""
    out = []
    for name in result.tasks:
        data = result.config.datasets.get(name)
        if data is None or not (data.judged_by or data.left_out):
            continue
        line = f"{name}: {sum(data.judged_by.values())} problems judged by " + ", ".join(
            f"{method} {n}" for method, n in data.judged_by.items())
        if data.left_out:
            line += (f"; {sum(data.left_out.values())} left out before the run: "
                     + "; ".join(f"{why} {n}" for why, n in data.left_out.items()))
        out.append(line)
    return out


def _greedy(result: RunResult) -> bool:
    sampling = result.config.settings.sampling
    return result.n == 1 and sampling is not None and sampling.temperature == 0


def render_table(result: RunResult, console: Console | None = None) -> Table:
    ks = [k for k in pass_ks(result) if k > 1]
    majs = maj_columns(result)
    lo, hi = sample_range(result)
    mode = "greedy" if _greedy(result) else samples_label(lo, hi).replace(" = ", "=")
    if result.adaptive:  # the tasks sampled with --target-se (another task of the headline may have a fixed K)
        which = "" if set(result.adaptive) >= set(result.tasks) else f" ({', '.join(result.adaptive)})"
        mode = f"adaptive{which}: --target-se, {samples_label(lo, hi)}"
    table = Table(title=f"{result.model}  (run {result.run_id}, {mode}{', view ' + result.view if result.view else ''})",
                  title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("#problems", justify="right")
    # One sample per problem (greedy): pass@1 is plain accuracy and maj@1 adds nothing.
    table.add_column("pass@1 ± SE (%)" if hi > 1 else "accuracy ± SE (%)", justify="right")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for k in majs:
        table.add_column(f"maj@{k}", justify="right")
    table.add_column("mean tokens", justify="right")
    table.add_column("trunc %", justify="right")
    for name, m in result.tasks.items():
        table.add_row(*_row(name, m, ks, majs))
        for row in _extra_rows(name, m, len(ks) + len(majs) + 2):
            table.add_row(*row, style="dim")
        for row in _breakdown_rows(name, m, len(ks) + len(majs) + 2):
            table.add_row(*row, style="dim")
    if len(result.tasks) > 1:
        agg = result.aggregate
        table.add_section()
        table.add_row(*_row("all (micro)", agg, ks, majs))
        if agg.macro_mean is not None:
            table.add_row("all (macro)", "", pct(agg.macro_mean), *([""] * (len(ks) + len(majs) + 2)))
    console = console if console is not None else console_for_tables()
    console.print(table)
    for line in [*task_options_lines(result), *rating_lines(result), *coverage_lines(result), k_note(result),
                 *adaptive_lines(result),
                 view_line(result) or result.evaluation_note,  # a headline's note: which evaluation it replaced
                 *judge_stage_lines(result), *ungraded_lines(result)]:
        if line:
            console.print(line, soft_wrap=True, markup=False)
    for name, m in result.tasks.items():
        sub = lmeval_subject_table(name, m, result.config.scoring.get(name))
        if sub is not None:
            console.print(sub)
    return table


def lmeval_subject_table(name: str, m: TaskMetrics, scoring: TaskScoring | None = None) -> Table | None:
    """The per-subject table lm-eval users quote (its group, then one subtask per MATH subject, each with
    the lm-eval columns), for tasks lm-eval reports that way; None otherwise. The group is the one of the
    style the task was scored with (`scoring`: minerva_math, or hendrycks_math)."""
    group = lmeval_group(name, scoring)
    metrics = [k for k in m.extra if f"subject [{k}]" in m.breakdown]
    if group is None or not metrics:
        return None
    table = Table(title=f"{name} as lm-eval's {group} (by subject)", title_justify="left")
    table.add_column("lm-eval task", no_wrap=True)
    table.add_column("#problems", justify="right")
    for k in metrics:
        table.add_column(f"{k} ± SE (%)", justify="right")
    table.add_row(group, str(m.num_problems), *[pct_se(m.extra[k].mean, m.extra[k].stderr) for k in metrics])
    subjects = m.breakdown[f"subject [{metrics[0]}]"]
    for subject in sorted(subjects, key=lambda s: MATH_SUBJECT_SUFFIXES.get(s, s)):
        cells = [m.breakdown[f"subject [{k}]"].get(subject) for k in metrics]
        table.add_row(escape(f"  {lmeval_subtask(group, subject)}"), str(subjects[subject].num_problems),
                      *["-" if g is None else pct_se(g.mean, g.stderr) for g in cells])
    return table
