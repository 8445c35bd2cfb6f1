"""Competition programming tasks: LiveCodeBench, CodeContests, APPS, TACO (docs/contests.md).

Each loader reads its source's own schema (the Hugging Face rows, and the shared data dir's copies) and gives a
Problem whose payload is what the `contest` scorer runs (scoring/programs/contest.py):

    tests: [{"input": str, "output": str, "kind": "public" | "private" | "generated"}]
    mode: "stdin" (a script: input on stdin, output on stdout) | "call" (LeetCode: Solution().<func_name>(*args),
      each input line a JSON argument, the output one JSON value)
    func_name, starter_code, time_limit_s, memory_mb (where the source has them), compare (APPS/TACO: "tokens")

and metadata for the report's breakdowns: difficulty, platform, contest_date, source_id.

Sources:
- livecodebench/code_generation_lite (HF): question_title, question_content, platform, question_id, contest_id,
  contest_date, starter_code, difficulty, public_test_cases (JSON), private_test_cases (base64 of zlib of a
  pickled JSON string, or plain JSON), metadata (JSON with func_name). The shared data dir's
  livecodebench_public.jsonl: problem, starter_code, tests ([{input, output, testtype}], public tests only).
- deepmind/code_contests (HF): name, description, public_tests / private_tests / generated_tests
  ({input: [...], output: [...]}), source, difficulty (enums as ints), cf_rating, time_limit ({seconds, nanos}),
  memory_limit_bytes. The shared copy: problem (the statement, ending in its time and memory limits), tests
  ({inputs, outputs}).
- codeparrot/apps (HF): problem_id, question, input_output (JSON: inputs, outputs, fn_name), difficulty, url,
  starter_code.
- BAAI/TACO (HF): question, input_output (JSON), difficulty, source, url, starter_code, time_limit,
  memory_limit.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import pickle
import re
import zlib
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem
from reasoneval.tasks.keys import problem_key

Row = Mapping[str, Any]

# LiveCodeBench's releases: release_vN holds the problems of contests up to the end of this month
# (LiveCodeBench's README: v1 400 problems May 2023-Mar 2024, v2 511 to May 2024, v3 612 to Jul 2024, v4 713 to
# Sep 2024, v5 880 to Jan 2025, v6 1055 to Apr 2025).
LCB_RELEASES = {"v1": "2024-03-31", "v2": "2024-05-31", "v3": "2024-07-31", "v4": "2024-09-30",
                "v5": "2025-01-31", "v6": "2025-04-30"}
LCB_FIRST_DATE = "2023-05-01"
LIVECODEBENCH_OPTIONS = ("release", "since", "until", "all_tests")
CONTEST_OPTIONS = ("all_tests",)
_BOOL = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}

# deepmind/code_contests enums (its proto: contest_problem.proto)
CC_SOURCES = {0: "unknown", 1: "codechef", 2: "codeforces", 3: "hackerearth", 4: "codejam", 5: "atcoder", 6: "aizu"}
CC_DIFFICULTIES = {0: "unknown", 1: "easy", 2: "medium", 3: "hard", 4: "harder", 5: "hardest", 6: "external",
                   **{7 + i: c for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUV")}}
_CC_TIME = re.compile(r"Time Limit: \{'seconds': (\d+), 'nanos': (\d+)\}")
_CC_MEMORY = re.compile(r"Memory Limit: (\d+) Bytes")
_FUNC = re.compile(r"def\s+(\w+)\s*\(\s*self")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


# Rating bands at Codeforces' title boundaries (problem ratings, not players': a problem rated 1900 is about a Div. 2 D;
# the bands only group the breakdown). Here, not in metrics: loading a task
# imports no numpy (`reasoneval tasks`).
RATING_BANDS = ((1200, "<1200 (newbie-pupil)"), (1600, "1200-1599 (pupil-specialist)"),
                (1900, "1600-1899 (expert)"), (2100, "1900-2099 (candidate master)"),
                (2400, "2100-2399 (master)"), (math.inf, ">=2400 (grandmaster)"))


def rating_band(rating: float) -> str:
    return next(name for upper, name in RATING_BANDS if rating < upper)


def row_rating(value: Any) -> int | None:
    """A row's rating: a positive number (open-r1/codeforces writes null for unrated problems, CodeContests 0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return int(value)


def _str(where: str, row: Row, *names: str) -> str:
    for n in names:
        v = row.get(n)
        if isinstance(v, str) and v.strip():
            return v
    raise UserError(f"{where}: row needs a non-empty text under {' or '.join(map(repr, names))} "
                    f"(row keys: {', '.join(sorted(row))})")


def _json_field(where: str, value: Any, name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise UserError(f"{where}: {name} is not valid JSON; give the source's own text") from None
    return value


def decode_lcb_private(where: str, value: Any) -> list[dict[str, Any]]:
    """LiveCodeBench's private_test_cases: JSON, or base64 of zlib of a pickled JSON string (lcb_runner's
    `json.loads(pickle.loads(zlib.decompress(base64.b64decode(...))))`). The pickle holds one str: it is read with an
    unpickler that refuses every global (no class, no function: nothing in the data can run)."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    text = str(value)
    try:
        return list(json.loads(text))
    except ValueError:
        pass
    try:
        raw = zlib.decompress(base64.b64decode(text.encode("utf-8")))
        inner = _SafeUnpickler(raw).load()
    except Exception as e:
        raise UserError(f"{where}: private_test_cases is neither JSON nor base64(zlib(pickle(JSON))) "
                        f"({type(e).__name__}: {str(e)[:100]})") from None
    if not isinstance(inner, (str, bytes)):
        raise UserError(f"{where}: private_test_cases' pickle holds a {type(inner).__name__}, not a JSON string")
    return list(json.loads(inner))


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        import io
        super().__init__(io.BytesIO(data))

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def _lcb_tests(where: str, cases: Sequence[Any], kind: str) -> tuple[list[dict[str, Any]], str | None]:
    tests, mode = [], None
    for c in cases:
        if not isinstance(c, Mapping) or "input" not in c or "output" not in c:
            raise UserError(f"{where}: each test case needs input and output (got {str(c)[:80]})")
        t = str(c.get("testtype") or "stdin")
        mode = mode or t
        tests.append({"input": str(c["input"]), "output": str(c["output"]), "kind": kind})
    return tests, mode


def livecodebench_problem(task: str, where: str, row: Row, default_id: str) -> Problem:
    """A livecodebench/code_generation_lite row, or a row of the data dir's livecodebench_public.jsonl."""
    pid = str(row.get("id") or default_id)
    text = _str(where, row, "question_content", "problem")
    starter = str(row.get("starter_code") or "")
    public = _json_field(where, row.get("public_test_cases", row.get("tests")), "public_test_cases") or []
    private = decode_lcb_private(where, row.get("private_test_cases"))
    tests, mode = _lcb_tests(where, public, "public")
    more, mode2 = _lcb_tests(where, private, "private")
    tests += more
    if not tests:
        raise UserError(f"{where}: LiveCodeBench row has no test cases")
    mode = "call" if (mode or mode2) == "functional" else "stdin"
    meta_json = _json_field(where, row.get("metadata") or "{}", "metadata") or {}
    func = str(meta_json.get("func_name") or "") if isinstance(meta_json, Mapping) else ""
    if mode == "call" and not func:
        m = _FUNC.search(starter)
        if not m:
            raise UserError(f"{where}: a functional LiveCodeBench row needs metadata.func_name or a starter_code "
                            "method")
        func = m.group(1)
    date = str(row.get("contest_date") or "")
    meta = {k: v for k, v in {
        "difficulty": (str(row["difficulty"]).lower() if row.get("difficulty") else None),
        "platform": row.get("platform") or None,
        "contest_date": date[:10] if _DATE.match(date) else None,
        "source_id": row.get("question_id") or None,
        "title": row.get("question_title") or None,
    }.items() if v is not None}
    payload = {"tests": tests, "mode": mode, "func_name": func or None, "starter_code": starter}
    key = content_key(text, payload, row.get("question_id"))
    return Problem(task=task, id=pid, problem=text, answer="", key=key, payload=payload, metadata=meta)


def content_key(text: str, payload: Mapping[str, Any], source_id: Any = None) -> str:
    """A contest problem's key: its statement and everything that grades it (every test, the mode, function,
    starter code and limits) with the source's own id, so rows that differ anywhere stay distinct problems (a key
    of the statement and the first tests merged rows that differed only in later tests). The payload enters as
    its sha256: a problem's tests may be megabytes, hashed once, not whitespace-normalised."""
    graded = json.dumps([payload, source_id], sort_keys=True, ensure_ascii=False, default=str)
    return problem_key(text, hashlib.sha256(graded.encode("utf-8")).hexdigest())


def livecodebench_window(problems: list[Problem], options: Mapping[str, str]) -> tuple[list[Problem], dict[str, str]]:
    """The problems of a release and date window (options: release=v1..v6, since=YYYY-MM-DD, until=YYYY-MM-DD,
    both ends included) and the options as recorded in config.json."""
    unknown = sorted(set(options) - set(LIVECODEBENCH_OPTIONS))
    if unknown:
        raise UserError(f"unknown --task-arg {unknown[0]!r} for livecodebench; known: {', '.join(LIVECODEBENCH_OPTIONS)}")
    recorded_all = _all_tests(options)
    options = {k: v for k, v in options.items() if k != "all_tests"}
    if not options:
        return problems, recorded_all
    release = options.get("release")
    if release is not None and release.removeprefix("release_") not in LCB_RELEASES:
        raise UserError(f"--task-arg release={release}: not a LiveCodeBench release; known: "
                        f"{', '.join(LCB_RELEASES)}")
    since, until = options.get("since", LCB_FIRST_DATE), options.get("until")
    for name, v in (("since", since), ("until", until)):
        if v is not None and not _DATE.fullmatch(v):
            raise UserError(f"--task-arg {name}={v}: give a date as YYYY-MM-DD")
    cutoff = LCB_RELEASES[release.removeprefix("release_")] if release else None
    end = min(d for d in (until, cutoff) if d is not None) if (until or cutoff) else None
    undated = [p.id for p in problems if "contest_date" not in p.metadata]
    if undated:
        raise UserError(f"livecodebench: {len(undated)} problems have no contest_date (e.g. {undated[0]}), so a "
                        "release or date window cannot be applied; use the Hub's livecodebench/code_generation_lite "
                        "rows (the data dir's livecodebench_public.jsonl has no dates)")
    kept = [p for p in problems if since <= p.metadata["contest_date"] and (end is None or p.metadata["contest_date"] <= end)]
    if not kept:
        raise UserError(f"livecodebench: no problem between {since} and {end or 'the last'}")
    recorded = {k: v for k, v in (("release", release), ("since", options.get("since")), ("until", until)) if v}
    return kept, {**recorded, **recorded_all}


def _all_tests(options: Mapping[str, str]) -> dict[str, str]:
    """all_tests=true|false: run every test of a sample, not only up to its first failure (the contest scorer's
    setting of that name; TaskSpec.scoring_options passes it on)."""
    if "all_tests" not in options:
        return {}
    v = options["all_tests"].strip().lower()
    if v not in _BOOL:
        raise UserError(f"--task-arg all_tests={options['all_tests']}: give true or false")
    return {"all_tests": "true" if _BOOL[v] else "false"}


def contest_options(problems: list[Problem], options: Mapping[str, str]) -> tuple[list[Problem], dict[str, str]]:
    """The options of code_contests, apps and taco: all_tests only."""
    unknown = sorted(set(options) - set(CONTEST_OPTIONS))
    if unknown:
        raise UserError(f"unknown --task-arg {unknown[0]!r}; known: {', '.join(CONTEST_OPTIONS)}")
    return problems, _all_tests(options)


def _cc_tests(row: Row) -> list[dict[str, Any]]:
    tests = []
    for field, kind in (("public_tests", "public"), ("private_tests", "private"), ("generated_tests", "generated")):
        block = row.get(field) or {}
        ins, outs = block.get("input") or [], block.get("output") or []
        tests += [{"input": str(i), "output": str(o), "kind": kind} for i, o in zip(ins, outs)]
    if not tests and isinstance(row.get("tests"), Mapping):  # the shared copy: tests merged
        t = row["tests"]
        tests = [{"input": str(i), "output": str(o), "kind": "test"}
                 for i, o in zip(t.get("inputs") or [], t.get("outputs") or [])]
    return tests


def code_contests_problem(task: str, where: str, row: Row, default_id: str) -> Problem:
    pid = str(row.get("id") or default_id)
    text = _str(where, row, "description", "problem")
    tests = _cc_tests(row)
    if not tests:
        raise UserError(f"{where}: CodeContests row has no tests (public_tests/private_tests/generated_tests)")
    time_s: float | None = None
    tl = row.get("time_limit")
    if isinstance(tl, Mapping) and (tl.get("seconds") or tl.get("nanos")):
        time_s = float(tl.get("seconds") or 0) + float(tl.get("nanos") or 0) / 1e9
    memory = row.get("memory_limit_bytes")
    m = _CC_TIME.search(text)
    if time_s is None and m:
        time_s = int(m.group(1)) + int(m.group(2)) / 1e9
    m = _CC_MEMORY.search(text)
    if not memory and m:
        memory = int(m.group(1))
    diff = row.get("difficulty")
    src = row.get("source")
    meta = {k: v for k, v in {
        "difficulty": CC_DIFFICULTIES.get(diff, str(diff)) if isinstance(diff, int) else (diff or None),
        "platform": CC_SOURCES.get(src, str(src)) if isinstance(src, int) else (src or None),
        "rating": row.get("cf_rating") or None,
        "rating_band": rating_band(row["cf_rating"]) if row_rating(row.get("cf_rating")) else None,
        "source_id": row.get("name") or None,
    }.items() if v is not None}
    payload = {"tests": tests, "mode": "stdin", "time_limit_s": time_s, "memory_mb": _megabytes(int(memory)) if memory else None}
    payload = {k: v for k, v in payload.items() if v is not None}
    return Problem(task=task, id=pid, problem=text, answer="", key=content_key(text, payload, row.get("name")),
                   payload=payload, metadata=meta)


def _megabytes(n: int) -> int:
    """A limit in bytes as the judge states it: 268435456 is 256 MiB, 256000000 Codeforces' "256 megabytes"."""
    return n >> 20 if n % (1 << 20) == 0 else n // 1_000_000


_TACO_TIME = re.compile(r"([\d.]+)\s*(second|sec|s\b)", re.IGNORECASE)
_TACO_MEMORY = re.compile(r"([\d.]+)\s*(megabytes|mb)", re.IGNORECASE)


def apps_problem(task: str, where: str, row: Row, default_id: str) -> Problem | None:
    """A codeparrot/apps or BAAI/TACO row: stdin tests, or call-based tests with fn_name. A row without tests
    (a few APPS rows have an empty input_output) is skipped, as APPS's own evaluation cannot grade it."""
    pid = str(row.get("id") or default_id)
    text = _str(where, row, "question", "problem")
    raw = row.get("input_output")
    io = _json_field(where, raw, "input_output") if raw not in (None, "") else None
    if not isinstance(io, Mapping) or not io.get("inputs"):
        return None
    fn = io.get("fn_name")
    tests = []
    for inp, out in zip(io.get("inputs") or [], io.get("outputs") or []):
        if fn:  # arguments as a list; APPS writes the expected value as a one-element list, mostly
            args = inp if isinstance(inp, list) else [inp]
            tests.append({"input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(out), "kind": "test"})
        else:
            tests.append({"input": _joined(inp), "output": _joined(out), "kind": "test"})
    time_s = memory = None
    m = _TACO_TIME.search(str(row.get("time_limit") or ""))
    if m:
        time_s = float(m.group(1))
    m = _TACO_MEMORY.search(str(row.get("memory_limit") or ""))
    if m:
        memory = int(float(m.group(1)))
    meta = {k: v for k, v in {
        "difficulty": str(row.get("difficulty")) if row.get("difficulty") else None,
        "platform": str(row.get("source")) if row.get("source") else None,
        "source_id": str(row.get("problem_id", "")) or None,
        "url": row.get("url") or None,
    }.items() if v is not None}
    payload = {"tests": tests, "mode": "call" if fn else "stdin", "func_name": fn or None,
               "starter_code": str(row.get("starter_code") or ""), "compare": "tokens",
               "time_limit_s": time_s, "memory_mb": memory}
    payload = {k: v for k, v in payload.items() if v is not None}
    # APPS's problem_id, else TACO's url (TACO has no id; the same statement recurs under several sources)
    source = row.get("problem_id") if row.get("problem_id") is not None else row.get("url")
    return Problem(task=task, id=pid, problem=text, answer="", key=content_key(text, payload, source),
                   payload=payload, metadata=meta)


def _joined(v: Any) -> str:
    """APPS writes some inputs/outputs as lists of lines."""
    return "\n".join(map(str, v)) if isinstance(v, list) else str(v)


def keep_row(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """Hub rows are kept verbatim (the row_to_problem loaders read the source's own schema), a date the `datasets`
    library parsed (LiveCodeBench's contest_date) as ISO text, so the cached row is plain JSON."""
    return {k: _plain_json(v) for k, v in row.items()}


def _plain_json(v: Any) -> Any:
    import datetime

    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, Mapping):
        return {k: _plain_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain_json(x) for x in v]
    return v
