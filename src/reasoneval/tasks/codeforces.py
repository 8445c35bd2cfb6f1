"""`codeforces`: the Hub dataset open-r1/codeforces (docs/contests.md, "Codeforces").

Its rows (the dataset card's schema): id ("<contest>/<index>"), aliases, contest_id, contest_name, contest_type,
contest_start (Unix seconds), contest_start_year, index, time_limit (seconds), memory_limit (MB), title,
description, input_format, output_format, interaction_format (interactive problems only), note, examples
([{input, output}]), editorial, rating (null: unrated), tags, testset_size, official_tests ([{input, output}]),
official_tests_complete (false: Codeforces shows truncated tests, so the set is not the judge's), input_mode
("stdio" | "file"), generated_checker (a checker program for problems that accept several answers), executable,
generated_tests.

Each row becomes a Problem for the `contest` scorer (tests kind "official", the examples first as "public"), with
metadata for the breakdowns and the rating (metrics/rating.py): rating, rating_band, contest_date, contest_year.

What the judge cannot grade yet is left out with a count (a warning, and `reasoneval tasks`' loading): problems whose
official tests are incomplete (as APPS's rows without tests), file-input problems and interactive problems. Problems
with several right answers are graded by their generated_checker (payload checker, protocol "open-r1": the judge runs
it in open-r1's convention, scoring/programs/codeforces/open_r1_checker.py). The task
options (`--task-arg`): since/until (contest dates, both ends included, as LiveCodeBench's), language (the language
the prompt asks for: python, cpp or any; the judge reads each program's language from its fence), keep=incomplete
to grade problems against their incomplete official tests anyway, all_tests.

Judged by the `codeforces` scorer (scoring/programs/codeforces/judge.py): C++ and Python, checkers and interactors
in testlib's protocol, generated checkers in open-r1's. open-r1/codeforces' default rows carry no interactor, so
interactive problems stay out (counted).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import re
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.scoring.programs.codeforces.open_r1_checker import PROTOCOL as OPEN_R1_PROTOCOL
from reasoneval.tasks.contests import _all_tests, rating_band, row_rating
from reasoneval.tasks.keys import problem_key

log = logging.getLogger("reasoneval")

Row = Mapping[str, Any]
CODEFORCES_OPTIONS = ("since", "until", "language", "keep", "all_tests")
SCORING_OPTIONS = ("all_tests", "language")  # also the codeforces scorer's settings
LANGUAGES = ("python", "cpp", "any")
# Why a problem is left out, by the payload flag that marks it (in this order: the first that applies).
SKIPPED = (("incomplete_tests", "official tests incomplete"), ("file_input", "reads a file, not stdin"),
           ("interactive", "interactive (the dataset ships no interactor)"))
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# How a problem is graded (judging_method): what a Codeforces rating rests on, counted in config.json's
# datasets.codeforces.judged_by and the report
JUDGING_METHODS = ("plain text compare", "testlib checker", "open-r1 generated checker", "interactive")


def _date(value: Any) -> str | None:
    """contest_start as YYYY-MM-DD: Unix seconds (the dataset's int64) or an ISO date text."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(float(value), tz=datetime.timezone.utc).date().isoformat()
    text = str(value)
    return text[:10] if _DATE.match(text) else None


def _tests(where: str, value: Any, kind: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise UserError(f"{where}: {kind} tests are not valid JSON; give the source's own list") from None
    out = []
    for t in value:
        if not isinstance(t, Mapping) or "input" not in t or "output" not in t:
            raise UserError(f"{where}: each {kind} test needs input and output (got {str(t)[:80]})")
        out.append({"input": str(t["input"]), "output": str(t["output"]), "kind": kind})
    return out


def statement(row: Row) -> str:
    """The problem as Codeforces shows it: title, legend, input, output, interaction, examples, note."""
    parts = [f"# {row['title']}" if row.get("title") else "", str(row.get("description") or "")]
    for name, field in (("Input", "input_format"), ("Output", "output_format"), ("Interaction", "interaction_format"),
                        ("Note", "note")):
        if row.get(field):
            parts.append(f"## {name}\n\n{row[field]}")
    for i, ex in enumerate(row.get("examples") or [], 1):
        if isinstance(ex, Mapping):
            parts.append(f"## Example {i}\n\nInput:\n```\n{ex.get('input', '')}\n```\nOutput:\n```\n"
                         f"{ex.get('output', '')}\n```")
    limits = []
    if row.get("time_limit"):
        limits.append(f"time limit per test: {row['time_limit']:g} seconds")
    if row.get("memory_limit"):
        limits.append(f"memory limit per test: {row['memory_limit']:g} megabytes")
    if limits:
        parts.insert(1, "; ".join(limits))
    return "\n\n".join(p for p in parts if p).strip()


def codeforces_problem(task: str, where: str, row: Row, default_id: str) -> Problem:
    """An open-r1/codeforces row. Problems the judge cannot grade yet are kept with a flag in the payload; the task
    options (codeforces_options) leave them out with a count."""
    pid = str(row.get("id") or default_id)
    if not str(row.get("description") or "").strip():
        raise UserError(f"{where}: Codeforces row {pid} has no description (row keys: {', '.join(sorted(row))})")
    text = statement(row)
    examples = _tests(where, row.get("examples"), "public")
    official = _tests(where, row.get("official_tests"), "official")
    tests = examples + official
    if not tests:
        raise UserError(f"{where}: Codeforces row {pid} has neither examples nor official_tests")
    rating = row_rating(row.get("rating"))
    date = _date(row.get("contest_start"))
    meta = {k: v for k, v in {
        "rating": rating,
        "rating_band": rating_band(rating) if rating is not None else None,
        "contest_date": date,
        "contest_year": int(date[:4]) if date else None,
        "platform": "codeforces",
        "source_id": pid,
        "title": row.get("title") or None,
        "contest_type": row.get("contest_type") or None,
    }.items() if v is not None}
    payload: dict[str, Any] = {"tests": tests, "mode": "stdin", "starter_code": "",
                               "time_limit_s": float(row["time_limit"]) if row.get("time_limit") else None,
                               "memory_mb": int(row["memory_limit"]) if row.get("memory_limit") else None,
                               "compare": "tokens"}
    flags = {"incomplete_tests": row.get("official_tests_complete") is False or not official,
             "file_input": str(row.get("input_mode") or "stdio") != "stdio",
             "interactive": bool(str(row.get("interaction_format") or "").strip())}
    payload.update({k: True for k, v in flags.items() if v})
    if str(row.get("generated_checker") or "").strip():  # several right answers: its checker decides
        payload["checker"] = {"language": "python", "source": str(row["generated_checker"]),
                              "protocol": OPEN_R1_PROTOCOL}
    return Problem(task=task, id=pid, problem=text, answer="", key=problem_key(text, json.dumps(tests[:3])),
                   payload={k: v for k, v in payload.items() if v is not None}, metadata=meta)


def skip_reason(problem: Problem, keep: set[str]) -> str | None:
    for flag, reason in SKIPPED:
        if problem.payload.get(flag) and flag not in keep:
            return reason
    return None


def judging_method(problem: Problem) -> str:
    """How the judge grades a problem (JUDGING_METHODS), from what its payload ships."""
    payload = problem.payload
    if payload.get("interactor"):
        return "interactive"
    checker = payload.get("checker")
    if not checker:
        return "plain text compare"
    protocol = checker.get("protocol") or "testlib"
    if protocol in ("testlib", OPEN_R1_PROTOCOL):
        return "testlib checker" if protocol == "testlib" else "open-r1 generated checker"
    return f"checker of unknown protocol {protocol!r} (the judge refuses it)"


def judged_by(problems: Sequence[Problem]) -> dict[str, int]:
    """Problems per judging method, every method named (0 where none): what a Codeforces rating rests on."""
    counts = dict.fromkeys(JUDGING_METHODS, 0)
    for p in problems:
        method = judging_method(p)
        counts[method] = counts.get(method, 0) + 1
    return counts


def codeforces_options(problems: list[Problem], options: Mapping[str, str]) -> tuple[list[Problem], dict[str, str]]:
    """The problems the judge can grade, in the date window; the options as recorded in config.json."""
    kept, recorded, skipped = _select(problems, options)
    if skipped:
        log.warning("codeforces: %d of %d problems left out: %s", sum(skipped.values()), len(kept) + sum(
            skipped.values()), ", ".join(f"{n} {why}" for why, n in skipped.items()))
    return kept, recorded


def codeforces_left_out(problems: list[Problem], options: Mapping[str, str]) -> dict[str, int]:
    """The problems of the date window the judge cannot grade, per reason (SKIPPED's, in its order; config.json's
    datasets.codeforces.left_out)."""
    skipped = _select(problems, options)[2]
    return {why: skipped[why] for _, why in SKIPPED if why in skipped}


def _select(problems: list[Problem], options: Mapping[str, str]) -> tuple[list[Problem], dict[str, str],
                                                                            dict[str, int]]:
    """The problems kept, the options as recorded, the problems of the window left out per reason."""
    unknown = sorted(set(options) - set(CODEFORCES_OPTIONS))
    if unknown:
        raise UserError(f"unknown --task-arg {unknown[0]!r} for codeforces; known: {', '.join(CODEFORCES_OPTIONS)}")
    recorded = _all_tests(options)
    language = options.get("language", "python")
    if language not in LANGUAGES:
        raise UserError(f"--task-arg language={language}: give one of {', '.join(LANGUAGES)} (the language the "
                        "prompt asks for; the judge reads each program's language from its fenced block)")
    if "language" in options:
        recorded["language"] = language
    keep = set(filter(None, (options.get("keep") or "").split(",")))
    if keep - {"incomplete"}:
        raise UserError(f"--task-arg keep={options['keep']}: only keep=incomplete (grade problems against their "
                        "incomplete official tests) is known")
    if keep:
        recorded["keep"] = "incomplete"
        keep = {"incomplete_tests"}
    since, until = options.get("since"), options.get("until")
    for name, v in (("since", since), ("until", until)):
        if v is not None:
            if not _DATE.fullmatch(v):
                raise UserError(f"--task-arg {name}={v}: give a date as YYYY-MM-DD")
            recorded[name] = v
    if since or until:
        undated = [p.id for p in problems if "contest_date" not in p.metadata]
        if undated:
            raise UserError(f"codeforces: {len(undated)} problems have no contest_start (e.g. {undated[0]}), so a "
                            "date window cannot be applied")
        problems = [p for p in problems if (since is None or since <= p.metadata["contest_date"])
                    and (until is None or p.metadata["contest_date"] <= until)]
    kept: list[Problem] = []
    skipped: dict[str, int] = {}
    for p in problems:
        reason = skip_reason(p, keep)
        if reason is None:
            kept.append(p)
        else:
            skipped[reason] = skipped.get(reason, 0) + 1
    if not kept:
        raise UserError(f"codeforces: no problem left to grade (window {since or 'first'} to {until or 'last'}; "
                        f"left out: {skipped or 'none'})")
    if language != "python":
        kept = [dataclasses.replace(p, payload={**p.payload, "language": language}) for p in kept]
    return kept, recorded, skipped
