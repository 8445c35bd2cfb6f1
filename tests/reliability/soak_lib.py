"""The kill soak, shared by tests/reliability/test_kill_soak.py (a few kills) and scripts/soak.py (20).

A run against the loopback server is SIGKILLed at seeded random moments and re-run each time until
done. Then: every (task, problem, sample) is journaled exactly once; no process started after a kill
requested a sample that was already in the journal at that kill (requests in flight at a kill may
repeat); no process requested a sample again once the server had answered it (a retry follows a failed
request); and summary.json's metrics equal those of an uninterrupted run with the same seeds.

Requests are attributed to the process that sent them by its API key (each process gets its own), not
by arrival time: a killed process's last request can sit in the server's socket buffer and be read
after the kill, which is not a repeat by the next process.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasoneval.results.identity import sample_seed
from reasoneval.tasks import problem_key
from tests.fixtures.openai_server import OpenAIServer, RequestRecord
from tests.reliability._helpers import (
    arith_reply,
    arith_rows,
    cli,
    journal,
    journal_lines,
    ok_keys,
    popen_cli,
    run_args,
    write_data,
)


@dataclass
class SoakResult:
    kills: int = 0  # SIGKILLs delivered
    runs: int = 0  # processes started after the reference run (killed ones and the last)
    samples: int = 0
    repeated_requests: int = 0  # requests for a sample that was in flight at a kill
    retries: int = 0  # requests a process made again after the server failed to answer them
    wall_s: float = 0.0
    violations: list[str] = field(default_factory=list)

    def verdict(self) -> str:
        state = "PASS" if not self.violations else f"FAIL ({len(self.violations)} violations: {self.violations[0]})"
        return (f"soak {state}: {self.kills} SIGKILLs over {self.runs} runs, {self.samples} samples, "
                f"{self.repeated_requests} in-flight requests repeated, {self.retries} retries, {self.wall_s:.0f} s")


def _key(run: int) -> dict[str, str]:
    """The environment that gives process number `run` its own API key (Authorization: Bearer soak-run-<run>)."""
    return {"OPENAI_API_KEY": f"soak-run-{run}"}


def _run_of(q: RequestRecord) -> int | None:
    auth = q.authorization or ""
    return int(auth.rsplit("-", 1)[1]) if auth.startswith("Bearer soak-run-") else None


def _delay(body: dict) -> float:
    seed = body.get("seed") or 0
    return 0.01 + (seed % 9) * 0.01  # 10-90 ms, deterministic per sample


def run_soak(work: Path, *, kills: int, seed: int = 0, tasks: dict[str, int] | None = None, n: int = 8,
             concurrency: int = 4, time_limit_s: float = 600.0) -> SoakResult:
    tasks = tasks or {"aime24": 6, "math500": 4}
    res = SoakResult()
    t_start = time.monotonic()
    write_data(work / "data", tasks)
    expected = {(t, problem_key(r["problem"], r["answer"]), j)
                for t, count in tasks.items() for r in arith_rows(t, count) for j in range(n)}
    seed_of = {k: sample_seed(42, k[0], k[1], k[2]) for k in expected}
    key_of = {s: k for k, s in seed_of.items()}
    common = ("--tasks", ",".join(tasks), "--n", str(n), "--concurrency", str(concurrency), "--json")
    rng = random.Random(seed)
    with OpenAIServer(responder=arith_reply, delay_s=_delay) as server:
        # The reference: an uninterrupted run; its phases size the kill moments.
        t0 = time.monotonic()
        r = cli(*run_args(server.base_url, work, *common, output="fresh"), env=_key(0), timeout=300)
        total_s = time.monotonic() - t0
        if r.returncode != 0:
            res.violations.append(f"reference run failed ({r.returncode}): {r.stderr.strip()[-300:]}")
            return res
        fresh = json.loads(r.stdout)
        reqs = server.requests()
        gen = [q for q in reqs if q.path.endswith("completions")]
        startup_s = min(q.received_at for q in gen) - t0
        gen_s = max(q.finished_at or q.received_at for q in gen) - min(q.received_at for q in gen)
        report_s = max(0.0, total_s - startup_s - gen_s)
        server.reset()

        # Rounds: each a fresh output directory, killed until a run gets through (a run that
        # finishes before its kill moment ends its round) or all the kills are delivered.
        rnd = 0
        while res.kills < kills and time.monotonic() - t_start < time_limit_s:
            rnd += 1
            results = work / f"results-{rnd}"
            args = run_args(server.base_url, work, *common, output=results.name)
            first_run = res.runs + 1
            snapshots: list[tuple[int, set[int]]] = []  # (the killed process's number, seeds journaled at its kill)
            finished = False
            while res.kills < kills and time.monotonic() - t_start < time_limit_s:
                done_now = len(set(ok_keys(journal_lines(journal(results)))))
                remaining = 1 - done_now / len(expected)
                # Anywhere from interpreter start-up to the report: the kill may hit imports, the
                # store's open, generation, a journal write, grading or summary.json's write.
                moment = rng.uniform(0.0, startup_s + gen_s * remaining + report_s)
                res.runs += 1
                proc = popen_cli(*args, env=_key(res.runs))
                spawned = time.monotonic()
                while proc.poll() is None and time.monotonic() - spawned < moment:
                    time.sleep(0.005)
                if proc.poll() is not None:  # it finished before its kill moment: the round is done
                    _, err = proc.communicate()
                    if proc.returncode != 0:
                        res.violations.append(f"a run exited {proc.returncode}: {err.decode()[-300:]}")
                    finished = True
                    break
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
                res.kills += 1
                lines = journal_lines(journal(results))
                keys = ok_keys(lines)
                if len(keys) != len(set(keys)):
                    res.violations.append(f"after kill {res.kills}: a sample is journaled twice")
                snapshots.append((res.runs, {d["seed"] for d in lines if d.get("status") == "ok"}))
            if not finished:
                res.runs += 1
                r = cli(*args, env=_key(res.runs), timeout=300)
                if r.returncode != 0:
                    res.violations.append(f"the final run exited {r.returncode}: {r.stderr.strip()[-300:]}")
            # this round's processes' requests, and any without a process's key (request_violations reports them)
            requests = [q for q in server.requests() if q.path.endswith("completions")
                        and ((run := _run_of(q)) is None or run >= first_run)]
            _check_round(res, results, requests, snapshots, expected, seed_of, key_of, fresh)
    res.wall_s = time.monotonic() - t_start
    return res


def _check_round(res: SoakResult, results: Path, requests: list[RequestRecord],
                 snapshots: list[tuple[int, set[int]]], expected: set[tuple[str, str, int]],
                 seed_of: dict[tuple[str, str, int], int], key_of: dict[int, tuple[str, str, int]],
                 fresh: dict[str, Any]) -> None:
    path = journal(results)
    lines = journal_lines(path)
    keys = ok_keys(lines)
    res.samples += len(keys)
    if len(keys) != len(set(keys)):
        res.violations.append(f"{len(keys) - len(set(keys))} sample(s) journaled more than once")
    if set(keys) != expected:
        res.violations.append(f"{len(expected - set(keys))} sample(s) missing, "
                              f"{len(set(keys) - expected)} unexpected")
    for d in lines:
        if d.get("status") == "ok" and seed_of.get((d["task"], d["problem_key"], d["index"])) != d["seed"]:
            res.violations.append(f"sample {d['task']}/{d['problem_id']}#{d['index']} has the wrong seed")
            break
    res.violations += request_violations(requests, snapshots, key_of, res)
    summary = json.loads((path.parent / "summary.json").read_text()) if path else {}
    if summary.get("tasks") != fresh["tasks"] or summary.get("aggregate") != fresh["aggregate"]:
        res.violations.append(f"{results.name}: summary.json's metrics differ from the uninterrupted run's")
    if summary.get("complete") is not True:
        res.violations.append(f"{results.name}: summary.json is not complete")


def request_violations(requests: list[RequestRecord], snapshots: list[tuple[int, set[int]]],
                       key_of: dict[int, tuple[str, str, int]], res: SoakResult) -> list[str]:
    """What one round's requests break: a process started after a kill asked for a sample journaled at that kill,
    or a process asked for a sample again though the server had answered it. Counts repeats and retries in res."""
    out: list[str] = []
    run_of = [(_run_of(q), q) for q in requests]
    if any(run is None for run, _ in run_of):
        return ["a request came without its process's API key"]
    for killed, journaled in snapshots:
        again = {q.seed for run, q in run_of if run > killed and q.seed in journaled}  # type: ignore[operator]
        if again:
            out.append(f"after a kill, {len(again)} journaled sample(s) were requested again, "
                       f"e.g. {key_of.get(next(iter(again)))}")
    # One process asks for a sample again only as a retry: after the server failed to answer its earlier request.
    by_process: dict[tuple[int | None, int | None], list[RequestRecord]] = defaultdict(list)
    for run, q in run_of:
        by_process[run, q.seed].append(q)
    res.repeated_requests += len(by_process) - len({q.seed for q in requests})
    for (run, seed), asked in by_process.items():
        res.retries += len(asked) - 1
        if any(q.status == 200 for q in asked[:-1]):
            statuses = ", ".join(str(q.status) for q in asked)
            out.append(f"sample {key_of.get(seed)} was requested {len(asked)} times by process {run} "  # type: ignore[arg-type]
                       f"though the server answered it (statuses {statuses})")
            break
    return out
