"""CLI commands of the readers: `compare`, `analyze`, `runs`, `export` (listed in cli.main.COMMANDS)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.report.text import csv_text, markdown_table, pct, print_table
from reasoneval.run.flags import add_options, run_option
from reasoneval.run.options import OUTPUT_DIR


def _one_format(a: argparse.Namespace, *names: str) -> None:
    """Output formats are alternatives: two given would print one and ignore the other."""
    from reasoneval.errors import UserError

    chosen = [n for n in names if getattr(a, n, False)]
    if len(chosen) > 1:
        raise UserError(f"{' and '.join('--' + n for n in chosen)} are alternatives (one output format): give one")


def _cmd_compare(a: argparse.Namespace) -> int:
    from reasoneval.analysis.compare import compare_runs

    _one_format(a, "json", "markdown")
    from reasoneval.report.compare import compare_markdown, render_compare_table

    c = compare_runs(a.run_dirs)
    from reasoneval.report.compare import run_letters
    from reasoneval.report.setup import setup_comparison, setup_lines

    if not a.json:  # before the numbers: whether the runs share a setup (docs/reproducibility.md)
        print("\n".join(setup_lines(c.runs, run_letters(c))) + ("\n" if a.markdown else ""))
    if a.html:
        from reasoneval.report.html_page import write_compare_html

        write_compare_html(c, Path(a.html))
        print(f"comparison page: {a.html}", file=sys.stderr)
    if a.json:
        print(json.dumps({**c.to_json_dict(), "setup": setup_comparison(c.runs)}, indent=2, default=str))
    elif a.markdown:
        print(compare_markdown(c), end="")
    else:
        render_compare_table(c)
    return 0


def analysis_rows(an: Any) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    head = ["task", "k", "SE (closed form)", "SE (subsampled)", "SE resample"]
    rows = [[t.task, str(r.k), pct(r.stderr, 2), pct(r.stderr_subsampled, 2), pct(r.stderr_resample, 2)]
            for t in an.tasks for r in t.se]
    shead = ["task", "k", "runs", "mean (%)", "SD", "min", "max", "SD predicted"]
    srows = [[t.task, str(s.k), str(s.runs), pct(s.mean), pct(s.sd, 2), pct(s.min), pct(s.max), pct(s.predicted_sd, 2)]
             for t in an.tasks for s in t.spread]
    return head, rows, shead, srows


def _cmd_analyze(a: argparse.Namespace) -> int:
    import math

    from reasoneval.analysis.analyze import analyze_run
    from reasoneval.errors import UserError

    _one_format(a, "json", "markdown")
    if a.target_se is not None and not (math.isfinite(a.target_se) and 0 < a.target_se < 0.5):
        hint = f"; for {a.target_se:g} points give {a.target_se / 100:g}" if 0.5 <= a.target_se < 50 else ""
        raise UserError(f"analyze --target-se is a fraction of 1 (0.01 = 1 point; `run --target-se` takes points), above "
                        f"0 and below 0.5 (the largest SE an accuracy can have): got {a.target_se:g}{hint}")
    if a.rating:
        return _print_rating(a)
    an = analyze_run(a.run_dir, target=a.target_se, draws=a.draws, seed=a.seed)
    if a.json:
        print(json.dumps(an.to_json_dict(), indent=2))
        return 0
    head, rows, shead, srows = analysis_rows(an)
    title = f"{an.result.model} (run {an.result.run_id}, K={an.result.n}): SE of pass@1 (points) with k samples per problem"
    _print_two_tables(a.markdown, title, (head, rows),
                      "mean accuracy of disjoint k-sample subsets, each scored as its own run", (shead, srows))
    for t in an.tasks:
        if t.verdicts:
            print(f"{t.task}: verdicts " + ", ".join(f"{k} {v}" for k, v in sorted(t.verdicts.items(), key=lambda kv: -kv[1]))
                  + ("; first failing test " + ", ".join(f"{k} {v}" for k, v in sorted(t.first_failures.items()))
                     if t.first_failures else ""))
    for t in an.tasks:
        if t.target is None:
            continue
        tg = t.target
        total = (f"needs {tg.k_for_stderr} samples per problem" if tg.k_for_stderr is not None else
                 f"is not reachable with {t.num_problems} problems, whatever the samples (about {tg.problems_needed} "
                 "problems needed)")
        print(f"{t.task}: SE {100 * tg.target:.2f} points {total}; "
              f"sampling noise alone (SE resample) {tg.k_for_resample} samples per problem "
              f"({tg.k_for_resample * t.num_problems} samples), `run --target-se {100 * tg.target:g}` about "
              f"{tg.adaptive_samples} samples")
    return 0


def _print_rating(a: argparse.Namespace) -> int:
    from reasoneval.analysis.rating import rating_analysis, rating_json

    ratings = rating_analysis(a.run_dir)
    if a.json:
        print(json.dumps(rating_json(ratings), indent=2))
        return 0
    head = ["task", "rating (95% interval)", "rated problems", "unrated", "samples right (%)"]
    rows = [[t.task, t.estimate.describe(), str(t.estimate.num_problems), str(t.estimate.num_unrated),
             pct(t.estimate.solve_rate)] if t.estimate else [t.task, "- (fewer than 2 rated problems)", "-", "-", "-"]
            for t in ratings]
    bhead = ["task", "rating band", "problems", "samples", "right (%)", "Elo curve at the rating (%)"]
    brows = [[t.task, b.band, str(b.num_problems), str(b.num_samples), pct(b.observed), pct(b.predicted)]
             for t in ratings for b in t.bands]
    title = "Codeforces rating: Elo model fitted to every sample, interval over problems and samples (docs/statistics.md)"
    _print_two_tables(a.markdown, title, (head, rows),
                      "by rating band: samples right against the Elo curve's prediction at the rating", (bhead, brows))
    for t in ratings:  # what the rating rests on: how its problems were judged, which were left out
        if t.judged_by:
            print(f"{t.task}: judged by " + ", ".join(f"{m} {n}" for m, n in t.judged_by.items())
                  + ("; left out before the run: " + "; ".join(f"{why} {n}" for why, n in t.left_out.items())
                     if t.left_out else ""))
    return 0


Table = tuple[list[str], list[list[str]]]  # head, rows


def _print_two_tables(markdown: bool, title: str, first: Table, caption: str, second: Table) -> None:
    """An analysis's table under `title` and its breakdown under `caption`: as markdown, or as the terminal's tables."""
    if markdown:
        print(f"{title}\n\n{markdown_table(*first)}\n{caption}\n\n{markdown_table(*second)}", end="")
    else:
        print_table(*first, title)
        print_table(*second, caption)


def _cmd_runs(a: argparse.Namespace) -> int:
    from reasoneval.errors import UserError
    from reasoneval.report.runs import list_runs, table_rows

    _one_format(a, "csv", "markdown")
    if a.metric and not a.by_checkpoint:
        raise UserError("--metric picks the columns of --by-checkpoint's table; the runs table has none: add "
                        "--by-checkpoint or drop --metric")

    rows = list_runs(Path(a.dir), model=a.model, task=a.task)
    if a.group_by == "fingerprint":
        if a.by_checkpoint:
            raise UserError("--group-by fingerprint and --by-checkpoint are two layouts of the table: give one")
        from reasoneval.report.runs import fingerprint_groups

        groups = fingerprint_groups(rows)
        rows = [row for _, _, members in groups for row in members]
        if not (a.csv or a.markdown) and rows:
            for fid, summary, members in groups:
                head, cells, _ = table_rows(members)
                print_table(head, cells, f"fingerprint {fid} ({len(members)} runs): {summary}", left=3)
            return 0
    head, cells, records = table_rows(rows)
    left = 3
    if a.by_checkpoint:
        from reasoneval.report.runs import checkpoint_items, checkpoint_table, text_columns

        head, cells, records = checkpoint_table(checkpoint_items(rows), metric=a.metric)
        left = text_columns(head)  # training run, checkpoint, step, settings
    from reasoneval.run.repair import unscored_runs

    # Runs with no readable headline are listed under the table with what is wrong and the command that repairs it
    # (issue 52.6); on stderr when stdout is CSV or Markdown.
    unscored = [] if a.model or a.task else unscored_runs(Path(a.dir))
    notes = [f"{d}: {damage.problem}; repair: {damage.repair}" for d, damage in unscored]
    if a.csv:
        print(csv_text(records), end="")
    elif a.markdown:
        print(markdown_table(head, cells, left=left), end="")
    elif not rows and not unscored:
        print(f"no runs under {a.dir}" + (" matching the filters" if a.model or a.task else ""), file=sys.stderr)
    elif not rows:
        print(f"no scored runs under {a.dir}; {len(unscored)} without a readable headline:")
    else:
        print_table(head, cells, f"runs under {a.dir}", left=left, fold=a.by_checkpoint)
        if a.by_checkpoint:
            print("Each row is one evaluation of a checkpoint: runs' headlines (summary.json) that share its settings "
                  "and no column; runs of a checkpoint that differ (temperature, seed, K) are rows of their own, "
                  "`settings` shows what differs; docs/reporting.md.", file=sys.stderr)
        else:
            print("Each row is a run's headline: its widest complete evaluation (summary.json). A narrower command "
                  "(--limit, --n, --tasks) is a view beside it (`views`, in RUN_DIR/views/); docs/reporting.md.",
                  file=sys.stderr)
    if notes:
        out = sys.stdout if not (a.csv or a.markdown) else sys.stderr
        if rows or a.csv or a.markdown:
            print(f"not in the table: {len(notes)} run(s) without a readable headline:", file=out)
        for line in notes:
            print(f"  {line}", file=out)
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    from reasoneval.errors import UserError
    from reasoneval.run.export import ExportFilter, export_run

    if a.output and a.format and Path(a.output).suffix in (".jsonl", ".json", ".parquet") and \
            Path(a.output).suffix.lstrip(".") not in (a.format, "json" if a.format == "jsonl" else a.format):
        raise UserError(f"-o {a.output} names a {Path(a.output).suffix} file but --format is {a.format}: give one of them")
    if a.max_per_problem is not None and a.max_per_problem < 1:
        raise UserError(f"--max-per-problem must be at least 1 (got {a.max_per_problem})")
    if a.min_tokens is not None and a.max_tokens is not None and a.min_tokens > a.max_tokens:
        raise UserError(f"--min-response-tokens {a.min_tokens} is above --max-response-tokens {a.max_tokens}: no "
                        "response could pass")

    out = a.output or str(Path(a.run_dir) / ("export." + (a.format or "jsonl")))
    counts = export_run(a.run_dir, out, ExportFilter(correct_only=a.correct_only, max_per_problem=a.max_per_problem,
                                                     min_tokens=a.min_tokens, max_tokens=a.max_tokens,
                                                     keep_truncated=a.keep_truncated), fmt=a.format)
    dropped = counts.dropped
    print(f"{out}: {counts.written} rows; dropped {dropped['incorrect']} wrong, {dropped['truncated']} truncated, "
          f"{dropped['length']} outside the token bounds, {dropped['per_problem_cap']} over --max-per-problem",
          file=sys.stderr)
    return 0


# The readers' flags, declared once each (reasoneval.run.flags.run_option: the flag, its default, help and parsing
# are the field's); their positional arguments are the parsers' own.
def _switch(help_: str) -> Any:
    return run_option(False, group="", action="true", help=help_)


JSON = "print the result as JSON instead of the table"
MARKDOWN = "print Markdown tables instead of the terminal's"


@dataclass(frozen=True)
class CompareFlags:
    json: bool = _switch(JSON)
    markdown: bool = _switch(MARKDOWN)
    html: str | None = run_option(None, group="", metavar="FILE", help="also write the comparison page")


@dataclass(frozen=True)
class AnalyzeFlags:
    target_se: float | None = run_option(
        None, group="", parse=float, help="samples per problem needed for this SE of pass@1, as a fraction (0.01 = 1 "
        "point; `run --target-se` takes points)")
    draws: int = run_option(200, group="", parse=int, help="random subsets per k for the subsampling check")
    seed: int = run_option(0, group="", parse=int, help="seed of the random subsets")
    rating: bool = _switch("the Codeforces-style rating of each task with rated problems (codeforces, code_contests "
                           "with cf_rating) and its 95% interval, with the fit per rating band")
    json: bool = _switch(JSON)
    markdown: bool = _switch(MARKDOWN)


@dataclass(frozen=True)
class RunsFlags:
    model: str | None = run_option(None, group="", metavar="GLOB", help="only runs of models matching GLOB")
    task: str | None = run_option(None, group="", metavar="GLOB", help="only runs with a task matching GLOB")
    csv: bool = _switch("print CSV (one row per run, two columns per task: pass@1 and its SE; with --by-checkpoint "
                        "the checkpoint table's rows) instead of the table")
    markdown: bool = _switch(MARKDOWN)
    by_checkpoint: bool = _switch(
        "one row per checkpoint by training step (from names like checkpoint-1200), one column per task and metric, "
        "lm-eval's metric names (exact_match,strict-match, ...)")
    metric: str | None = run_option(None, group="", metavar="GLOB",
                                    help="with --by-checkpoint: only these metrics (e.g. 'exact_match*')")
    group_by: str | None = run_option(None, group="", choices=("fingerprint",),
                                      help="fingerprint: one table per setup (engine, weights, kernels, batching, ...: "
                                      "docs/reproducibility.md), runs made with the same setup together")


@dataclass(frozen=True)
class ExportFlags:
    format: str | None = run_option(None, group="", choices=("jsonl", "parquet"),
                                    help="jsonl or parquet (default: from -o's suffix, else jsonl)")
    correct_only: bool = _switch("only responses scored correct")
    max_per_problem: int | None = run_option(None, group="", parse=int, metavar="N", help="at most N responses a problem")
    # Not --max-tokens: in `run` that is the generation limit; here it filters finished responses by length.
    min_tokens: int | None = run_option(None, group="", parse=int, metavar="N", flag="--min-response-tokens",
                                        aliases=("--min-tokens",), help="drop responses shorter than N tokens")
    max_tokens: int | None = run_option(None, group="", parse=int, metavar="N", flag="--max-response-tokens",
                                        aliases=("--max-tokens",), help="drop responses longer than N tokens")
    keep_truncated: bool = _switch("keep responses cut at max tokens (dropped by default)")


def add_compare_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = ("example:\n  reasoneval compare results/m/run1 results/m/run2 --markdown\n"
                "Each run after the first is compared with the first: B - A, SE paired over problems "
                "(docs/statistics.md).")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    add_options(p, CompareFlags)
    p.set_defaults(func=_cmd_compare)


def add_analyze_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = "example:\n  reasoneval analyze results/m/run1 --target-se 0.01"
    p.add_argument("run_dir")
    add_options(p, AnalyzeFlags)
    p.set_defaults(func=_cmd_analyze)


def add_runs_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = ("examples:\n  reasoneval runs results --model 'Qwen*' --task 'aime*' --csv > runs.csv\n"
                "  reasoneval runs results --by-checkpoint --markdown   # checkpoints x (task, metric)")
    p.add_argument("dir", nargs="?", default=OUTPUT_DIR)
    add_options(p, RunsFlags)
    p.set_defaults(func=_cmd_runs)


def add_export_parser(p: argparse.ArgumentParser) -> None:
    p.epilog = "example:\n  reasoneval export results/m/run1 -o sft.jsonl --correct-only --max-per-problem 4"
    p.add_argument("run_dir")
    p.add_argument("-o", "--output", help="file to write (.jsonl or .parquet; default RUN_DIR/export.jsonl)")
    add_options(p, ExportFlags)
    p.set_defaults(func=_cmd_export)
