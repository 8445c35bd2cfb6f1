"""Our contest judge against lcb_runner's grader (the PyPI package `nvidia-livecodebench`, in an environment of its
own, run by bench/lcb_grade.py), side by side in one run on the same machine, same programs, same worker count:

    python -m venv /tmp/lcbvenv && /tmp/lcbvenv/bin/pip install nvidia-livecodebench
    REASONEVAL_DATA_DIR=... PYTHONPATH=src python bench/contest_speed.py --lcb-python /tmp/lcbvenv/bin/python \
        [--workers 2] [--stdin-problems 16] [--call-problems 24] [--samples 8] [--min-tests 10] [--fixed-problems 40] \
        [--repeats 2] [--fixed-repeats 2] [--only a|b|c] [--json FILE]

(a) tests/s on CodeContests stdin programs (code_contests.jsonl), `--samples` responses per problem;
(b) tests/s on LeetCode-style `class Solution` programs (livecodebench_public.jsonl's functional problems), the same;
(c) at one response per problem, the fixed cost per response in worker-seconds (workers x wall) beyond the per-test
    time, for stdin and call programs: both sides grade each response once with the problem's first test only and
    once with all its tests; per test = (W_all - W_one) / (tests_all - tests_one), fixed = W_one / responses - per
    test (0 where the difference is below the noise: then the fixed cost is an upper bound). Each figure is printed
    with the ratio ours / lcb_runner (tests/s: higher is better for us; fixed cost: lower).

Every figure is given twice: by wall time (worker-seconds = workers x wall: what a user waits for) and by CPU time
(every process of that side, read from a cgroup v1 `cpuacct` group the bench puts itself in, so that processes no
one waits for, such as a sandbox's PID 1, count too: what the work costs, which moves much less than wall time when
other jobs load the machine; "nan" where there is no such cgroup to make; run as root).

The programs are written here, not taken from any source: a response reads its input (stdin: `sys.stdin.read()`;
call: its arguments), looks it up in a table of the problem's expected outputs that the bench builds from the
tests, and prints / returns the answer, so that every test runs on both sides (no early stop) and the cost measured
is the judge's own per test and per response, not the solution's. Each response of a problem differs by a comment
(neither side can reuse a result). The data files carry no reference solutions (docs of the shared data dir).
`--min-tests` cycles a problem's tests up to that many (the shared copies hold a median of 3 tests a problem; real
CodeContests and LiveCodeBench problems have dozens), `--max-data-kb` skips problems whose tests are bigger. The
machine's calibration and the grading workers' sessions (ours: once per run; lcb_runner's: its pool's start and
imports) are done before the timed part and printed apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import ScoringContext
from reasoneval.scoring.programs.contest import (
    BASE_PRELOAD,
    LCB_IMPORTS,
    PRELOAD,
    ContestScorer,
    extract_last_block,
)
from reasoneval.scoring.programs.sandbox.interpreter import default_python
from reasoneval.scoring.programs.sandbox.keeper import header_names, name_ops, names_needed, scan_code
from reasoneval.scoring.programs.scorer import sandbox_pool
from reasoneval.tasks.contests import code_contests_problem, livecodebench_problem

HERE = Path(__file__).resolve().parent


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SystemExit(f"contest_speed: {path} not found; set REASONEVAL_DATA_DIR to the shared data directory")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _data_bytes(p: Problem) -> int:
    return sum(len(t["input"]) + len(t["output"]) for t in p.payload["tests"])


def _with_tests(p: Problem, tests: list[dict[str, Any]]) -> Problem:
    return Problem(task=p.task, id=p.id, problem=p.problem, answer="", key=p.key, payload={**p.payload, "tests": tests})


def cycled(p: Problem, n: int) -> Problem:
    """The problem with its tests repeated (in order) up to at least n."""
    tests = list(p.payload["tests"])
    out = list(tests)
    while len(out) < n:
        out.append(tests[len(out) % len(tests)])
    return _with_tests(p, out)


def first_test_only(p: Problem) -> Problem:
    return _with_tests(p, p.payload["tests"][:1])


def load_problems(data_dir: Path, stdin_n: int, call_n: int, max_bytes: int) -> tuple[list[Problem], list[Problem]]:
    stdin = []
    for i, row in enumerate(_rows(data_dir / "code_contests.jsonl")):
        p = code_contests_problem("code_contests", f"code_contests row {i}", row, f"code_contests-{i}")
        if _data_bytes(p) <= max_bytes and len({_key(t["input"]) for t in p.payload["tests"]}) == len(
                {(_key(t["input"]), t["output"]) for t in p.payload["tests"]}):
            stdin.append(p)
    call = []
    for i, row in enumerate(_rows(data_dir / "livecodebench_public.jsonl")):
        p = livecodebench_problem("livecodebench", f"livecodebench row {i}", row, f"livecodebench-{i}")
        if p.payload["mode"] == "call" and _data_bytes(p) <= max_bytes:
            call.append(p)
    return stdin[:stdin_n], call[:call_n]


def _key(text: str) -> int:
    return zlib.crc32(" ".join(text.split()).encode("utf-8"))


# what a model's program typically starts with (unused here, but every test on our side, and every program on
# lcb_runner's, pays for them)
MODEL_IMPORTS = "from collections import defaultdict, deque, Counter\nimport heapq, bisect, math, itertools\n"


def stdin_program(p: Problem, sample: int) -> str:
    """A script that reads all of stdin and prints the answer it finds for it in its table."""
    table = {_key(t["input"]): t["output"] for t in p.payload["tests"]}
    return (f"# response {sample}\nimport sys\nimport zlib\n{MODEL_IMPORTS}\nANSWERS = {table!r}\n\n"
            "data = sys.stdin.read()\n"
            "key = zlib.crc32(' '.join(data.split()).encode('utf-8'))\n"
            "print(ANSWERS.get(key, '-1'), end='')\n")


def call_program(p: Problem, sample: int) -> str:
    """A `class Solution` whose method returns the answer it finds for its arguments in its table."""
    table = {json.dumps([json.loads(line) for line in t["input"].split("\n")]): json.loads(t["output"])
             for t in p.payload["tests"]}
    name = p.payload["func_name"]
    return (f"# response {sample}\nimport json\n{MODEL_IMPORTS}\nANSWERS = {table!r}\n\n\nclass Solution:\n"
            f"    def {name}(self, *args):\n        return ANSWERS.get(json.dumps(list(args)))\n")


def response(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{code}```\n"


def lcb_input_output(p: Problem) -> str:
    tests = p.payload["tests"]
    io: dict[str, Any] = {"inputs": [t["input"] for t in tests], "outputs": [t["output"] for t in tests]}
    if p.payload["mode"] == "call":
        io["fn_name"] = p.payload["func_name"]
    return json.dumps(io)


class CpuMeter:
    """CPU time of this process and all its descendants, from a cgroup v1 cpuacct group of its own (descendants
    that leave it for a v2 memory cgroup stay in it: the hierarchies are separate). `read()` is None without one."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self) -> None:
        self.path: Path | None = None
        self.home: Path | None = None
        try:
            own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
                       if "cpuacct" in line.split(":", 2)[1].split(","))
            self.home = self.ROOT / own.strip().lstrip("/")
            path = self.home / f"reasoneval-speed-{os.getpid()}"
            path.mkdir()
            (path / "cgroup.procs").write_text(str(os.getpid()))
            self.path = path
        except (OSError, StopIteration, IndexError):
            self.path = None

    def read(self) -> float | None:
        if self.path is None:
            return None
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        if self.path is not None and self.home is not None:
            try:
                (self.home / "cgroup.procs").write_text(str(os.getpid()))
                self.path.rmdir()
            except OSError:
                pass
            self.path = None


_METER: list[CpuMeter] = []  # made on first use (importing this module moves no process into a cgroup)


def cpu_meter() -> CpuMeter:
    if not _METER:
        _METER.append(CpuMeter())
    return _METER[0]


def cpu_now() -> float:
    got = cpu_meter().read()
    return float("nan") if got is None else got


LCB_IDLE_CPU = [0.0]  # set in main()


def run_lcb(lcb_python: str, problems: list[Problem], texts: list[tuple[int, str]], workers: int
            ) -> tuple[list[list[Any]], float, float]:
    """lcb_runner's verdicts, its wall time (bench/lcb_grade.py measures it once its workers have started and
    imported the grader: a once-per-run cost, as our calibration is) and its CPU time (its whole process, less
    LCB_IDLE_CPU: what the same process costs grading nothing, i.e. its start, imports and warm-up)."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = Path(d) / "in.json", Path(d) / "out.json"
        inp.write_text(json.dumps({"problems": [{"input_output": lcb_input_output(p)} for p in problems],
                                   "programs": texts}))
        cpu0 = cpu_now()
        subprocess.run([lcb_python, str(HERE / "lcb_grade.py"), str(inp), str(out), "--workers", str(workers),
                        "--warm"], check=True, cwd=d, stderr=subprocess.DEVNULL)
        cpu = cpu_now() - cpu0 - LCB_IDLE_CPU[0]
        res = json.loads(out.read_text())
    return res["results"], float(res["wall_s"]), cpu


def header_names_used(texts: list[tuple[int, str]]) -> list[list[list[Any]]]:
    """Per program, the header's names our lean keeper gives it ([name, module, attribute or None]): its scan of the
    program, the header's names as the keeper reads them (sandbox/keeper.py)."""
    for name in PRELOAD:
        __import__(name)
    namespace: dict[str, Any] = {"__builtins__": __builtins__}
    exec(compile(LCB_IMPORTS, "<header>", "exec"), namespace)
    names = header_names(LCB_IMPORTS, namespace)
    if names is None:
        raise SystemExit("contest_speed: the header's names could not be read on this interpreter")
    ops, out = name_ops(), []
    for _, text in texts:
        code = extract_last_block(text) or ""
        need = names_needed(scan_code(compile(code, "<solution>", "exec"), ops), names)
        if need is None:
            raise SystemExit("contest_speed: a bench program reaches its globals (it would get the whole header)")
        out.append([[n, *names[n]] for n in need])
    return out


def run_floor(problems: list[Problem], texts: list[tuple[int, str]], repeats: int) -> float:
    """The least CPU-s of `repeats` runs of bench/fork_floor.py (a fresh process per test forked from a ready
    interpreter, and nothing else) on these programs, with the interpreter that runs our sandbox's programs."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = Path(d) / "in.json", Path(d) / "out.json"
        inp.write_text(json.dumps({"problems": [{"input_output": lcb_input_output(p)} for p in problems],
                                   "programs": texts, "preload": list(BASE_PRELOAD),
                                   "names": header_names_used(texts)}))
        python = default_python(os.geteuid() == 0)
        cpus = []
        for _ in range(repeats):
            subprocess.run([python, "-I", str(HERE / "fork_floor.py"), str(inp), str(out)], check=True, cwd=d)
            cpus.append(float(json.loads(out.read_text())["cpu_s"]))
    return min(cpus)


SESSION_START: list[float] = []  # the wall time of each warm-up (our sessions' start), printed beside the figures


def run_ours(problems: list[Problem], texts: list[tuple[int, str]], workers: int
             ) -> tuple[list[dict[str, Any]], float, float]:
    """Our verdicts, wall time and CPU time (this process, the sandboxes and everything that ran in them). A fresh
    scoring context (no result cache, a new sandbox pool) per measurement; the calibration is measured and the
    grading workers' sessions (one sandbox per worker for the whole run: sandbox/session.py) are started before the
    clock starts, as lcb_runner's pool workers are (once per run in a real run); closing them is timed, as
    lcb_runner's pool's shutdown is."""
    with ScoringContext(workers=workers) as ctx:
        scorer = ContestScorer(ctx)
        scorer.factor()
        warm = [problems[i % len(problems)] for i in range(workers)]  # a batch per worker: a program that prints 0
        t_warm = time.perf_counter()
        scorer.score_many(warm, [SampleRecord(task=p.task, problem_key=p.key, problem_id=p.id, index=j, seed=0,
                                              status="ok", text=response("print(0)\n"))
                                 for j, p in enumerate(warm)])
        SESSION_START.append(time.perf_counter() - t_warm)
        samples = [SampleRecord(task=problems[i].task, problem_key=problems[i].key, problem_id=problems[i].id,
                                index=j, seed=0, status="ok", text=text) for j, (i, text) in enumerate(texts)]
        c0 = cpu_now()
        t0 = time.perf_counter()
        scores = scorer.score_many([problems[i] for i, _ in texts], samples)
        ctx.close()  # the pool's sandboxes end and are reaped inside the measurement
        wall = time.perf_counter() - t0
        cpu = cpu_now() - c0
    return [dict(s.details) for s in scores], wall, cpu


def _lcb_passed(res: list[Any]) -> bool:
    return bool(res) and all(x is True for x in res)


Cost = dict[str, tuple[float, float]]  # side -> (wall s, CPU s)


def measure(label: str, lcb_python: str, problems: list[Problem], texts: list[tuple[int, str]], workers: int,
            repeats: int, lcb_first: bool) -> tuple[Cost, int]:
    """Both sides' wall and CPU time (the least of `repeats` runs, the sides alternating) and the tests run."""
    n_tests = sum(len(problems[i].payload["tests"]) for i, _ in texts)
    runs: dict[str, list[tuple[float, float]]] = {"lcb": [], "ours": []}
    for r in range(repeats):
        order = ["lcb", "ours"] if (r % 2 == 0) == lcb_first else ["ours", "lcb"]
        for who in order:
            if who == "lcb":
                res, wall, cpu = run_lcb(lcb_python, problems, texts, workers)
                bad = sum(1 for x in res if not _lcb_passed(x))
                if bad:
                    print(f"  {label}: lcb_runner failed {bad} of {len(res)} programs, e.g. "
                          f"{next(x for x in res if not _lcb_passed(x))[:5]}", file=sys.stderr)
            else:
                ours, wall, cpu = run_ours(problems, texts, workers)
                bad = sum(1 for o in ours if o["verdict"] != "passed")
                if bad:
                    o = next(o for o in ours if o["verdict"] != "passed")
                    print(f"  {label}: ours failed {bad} of {len(ours)} programs, e.g. {o['verdict']}: "
                          f"{o.get('detail', '')[:80]}", file=sys.stderr)
            runs[who].append((wall, cpu))
    return {who: (min(w for w, _ in v), min(c for _, c in v)) for who, v in runs.items()}, n_tests


def throughput(label: str, a: argparse.Namespace, problems: list[Problem], program: Any, lcb_first: bool
               ) -> dict[str, Any]:
    problems = [cycled(p, a.min_tests) for p in problems]
    texts = [(i, response(program(p, j))) for i, p in enumerate(problems) for j in range(a.samples)]
    cost, n = measure(label, a.lcb_python, problems, texts, a.workers, a.repeats, lcb_first)
    (lw, lc), (ow, oc) = cost["lcb"], cost["ours"]
    row = {"set": label, "programs": len(texts), "tests": n, "lcb_wall_s": lw, "ours_wall_s": ow, "lcb_cpu_s": lc,
           "ours_cpu_s": oc, "ratio_tests_per_s": lw / ow, "ratio_tests_per_cpu_s": lc / oc}
    print(f"{label}: {len(problems)} problems x {a.samples} responses, {n} tests, {a.workers} workers: lcb_runner "
          f"{lw:.2f} s ({n / lw:.0f} tests/s), ours {ow:.2f} s ({n / ow:.0f} tests/s): "
          f"ours/lcb_runner tests/s = {lw / ow:.2f}; CPU: lcb_runner {lc:.1f} s, ours {oc:.1f} s: "
          f"ours/lcb_runner tests per CPU-s = {lc / oc:.2f}", flush=True)
    if program is stdin_program:
        floor = run_floor(problems, texts, a.repeats)
        row.update(floor_cpu_s=floor, ratio_floor_lcb_cpu=lc / floor)
        print(f"  the floor of a fresh process per test (bench/fork_floor.py: fork a ready interpreter, run the "
              f"program, exit; no sandbox, limits, watching or comparing): {floor:.1f} CPU-s for the same tests: "
              f"lcb_runner's CPU / the floor's = {lc / floor:.2f}, the most any judge that forks per test could "
              f"reach here by CPU; ours costs {oc / floor:.2f}x the floor", flush=True)
    return row


def fixed_cost(label: str, a: argparse.Namespace, problems: list[Problem], program: Any, lcb_first: bool
               ) -> dict[str, Any]:
    full = [cycled(p, a.min_tests) for p in problems]
    one = [first_test_only(p) for p in full]
    texts = [(i, response(program(p, 0))) for i, p in enumerate(full)]
    c1, n1 = measure(label + " one test", a.lcb_python, one, texts, a.workers, a.fixed_repeats, lcb_first)
    cf, nf = measure(label + " all tests", a.lcb_python, full, texts, a.workers, a.fixed_repeats, not lcb_first)
    r, w = len(texts), a.workers
    out: dict[str, Any] = {"set": label, "responses": r, "tests_one": n1, "tests_all": nf}
    for who in ("lcb", "ours"):
        (w1, cpu1), (wf, cpuf) = c1[who], cf[who]
        # a slope below zero is noise (call programs' tests cost about 1 ms each, less than the spread of the
        # walls on a loaded machine): then the per-test cost counts as 0 and the fixed cost is the whole cost of a
        # one-test response (an upper bound)
        per_test = max(0.0, w * (wf - w1) / (nf - n1))
        per_test_cpu = max(0.0, (cpuf - cpu1) / (nf - n1))
        out[who] = {"one": [w1, cpu1], "all": [wf, cpuf], "per_test_ws": per_test, "fixed_ws": w * w1 / r - per_test,
                    "per_test_cpu_s": per_test_cpu, "fixed_cpu_s": cpu1 / r - per_test_cpu}
    lo, oo = out["lcb"], out["ours"]
    print(f"{label}, one response per problem, {r} responses, {a.workers} workers: fixed cost per response "
          f"lcb_runner {lo['fixed_ws']:.3f} worker-s, ours {oo['fixed_ws']:.3f}: ours/lcb_runner = "
          f"{oo['fixed_ws'] / lo['fixed_ws']:.2f} (CPU-s: {lo['fixed_cpu_s']:.3f}, {oo['fixed_cpu_s']:.3f}: "
          f"{oo['fixed_cpu_s'] / lo['fixed_cpu_s']:.2f}); per test lcb_runner {1000 * lo['per_test_ws']:.1f} ms, "
          f"ours {1000 * oo['per_test_ws']:.1f} ms (CPU: {1000 * lo['per_test_cpu_s']:.1f}, "
          f"{1000 * oo['per_test_cpu_s']:.1f} ms); walls: lcb_runner {c1['lcb'][0]:.2f} / {cf['lcb'][0]:.2f} s, "
          f"ours {c1['ours'][0]:.2f} / {cf['ours'][0]:.2f} s for {n1} / {nf} tests", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lcb-python", default="/tmp/lcbvenv/bin/python")
    ap.add_argument("--data-dir", default=os.environ.get("REASONEVAL_DATA_DIR", ""))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stdin-problems", type=int, default=16, help="CodeContests problems in (a)")
    ap.add_argument("--call-problems", type=int, default=24, help="LeetCode-style problems in (b)")
    ap.add_argument("--samples", type=int, default=8, help="responses per problem in (a) and (b)")
    ap.add_argument("--min-tests", type=int, default=10, help="cycle each problem's tests up to this many")
    ap.add_argument("--fixed-problems", type=int, default=40, help="problems of each kind in (c), one response each")
    ap.add_argument("--max-data-kb", type=int, default=256, help="skip problems whose tests are bigger")
    ap.add_argument("--repeats", type=int, default=2, help="runs per measurement in (a) and (b), sides alternating; "
                    "the least counts")
    ap.add_argument("--fixed-repeats", type=int, default=2, help="the same in (c)")
    ap.add_argument("--only", choices=("a", "b", "c"), action="append", help="run only these parts")
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args()
    if not a.data_dir:
        raise SystemExit("contest_speed: give --data-dir or set REASONEVAL_DATA_DIR (the shared data directory)")
    if not Path(a.lcb_python).is_file():
        raise SystemExit(f"contest_speed: {a.lcb_python} not found; make lcb_runner's venv as the docstring says")
    parts = set(a.only or ("a", "b", "c"))
    n = max(a.stdin_problems, a.call_problems, a.fixed_problems)
    stdin, call = load_problems(Path(a.data_dir), n, n, a.max_data_kb << 10)
    meter = cpu_meter()
    print(f"CPU time: {'from ' + str(meter.path) if meter.path else 'nan (no cgroup v1 cpuacct group could be made)'}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{len(stdin)} stdin and {len(call)} call problems available", flush=True)
    with ScoringContext(workers=a.workers) as ctx:
        t0 = time.perf_counter()
        factor = ContestScorer(ctx).factor()
        print(f"ours: calibration factor {factor}, {time.perf_counter() - t0:.2f} s (once per run, not timed below); "
              f"sandbox mode {sandbox_pool(ctx).sandbox.mode} (REASONEVAL_SANDBOX=bwrap|rlimits picks one)",
              flush=True)
    idle = [run_lcb(a.lcb_python, [], [], a.workers)[2] for _ in range(2)]
    LCB_IDLE_CPU[0] = min(idle)
    print(f"lcb_runner: its process grading nothing (start, imports, workers warmed) costs {min(idle):.2f} CPU-s: "
          "subtracted from each of its CPU figures", flush=True)
    figures: dict[str, Any] = {"workers": a.workers, "calibration_factor": factor, "lcb_idle_cpu_s": min(idle)}
    start = time.perf_counter()
    if "a" in parts:
        figures["a"] = throughput("(a) CodeContests stdin", a, stdin[:a.stdin_problems], stdin_program, True)
    if "b" in parts:
        figures["b"] = throughput("(b) LeetCode-style call", a, call[:a.call_problems], call_program, False)
    if "c" in parts:
        figures["c_stdin"] = fixed_cost("(c) stdin", a, stdin[:a.fixed_problems], stdin_program, True)
        figures["c_call"] = fixed_cost("(c) call", a, call[:a.fixed_problems], call_program, False)
    figures["load_average_end"] = os.getloadavg()[0]
    if SESSION_START:
        figures["ours_session_start_s"] = statistics.median(SESSION_START)
        print(f"ours: starting the {a.workers} workers' sessions took {statistics.median(SESSION_START):.3f} s of wall "
              f"(median of {len(SESSION_START)}), before each clock started, as lcb_runner's pool's start")
    print(f"done in {time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.1f} at the end "
          f"(median of the three: {statistics.median(os.getloadavg()):.1f})")
    cpu_meter().close()
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
