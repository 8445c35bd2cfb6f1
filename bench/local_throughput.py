"""Output tokens/s of the `local` engine against a plain one-sequence llama-cpp-python loop.

    PYTHONPATH=src python bench/local_throughput.py [--requests 24] [--max-tokens 96] [--rounds 3] [--samples-per-question 1]

Every configuration runs in its own process on the same chat requests (arith-like questions,
temperature 0.7, top_p 0.95, one seed each), the configurations interleaved and their order rotated
in every round, because the machine is shared and its speed drifts. Each figure is output tokens
over wall time from the first request to the last answer (model loading excluded); the ratio to the
plain loop is taken within each round and the median over rounds is reported. With
`--samples-per-question K` the requests are K samples (seeds) of each question in turn, as an
evaluation asks for them: the workload where prompt-prefix reuse shares whole prompts.

With `--contention` every round runs each configuration twice: on the machine as it is, and with another process
burning one core throughout (a Python busy loop started before the configuration and killed after it), and two
tables are printed; under contention the reference is `plain1`, the plain loop with one thread, which a busy
machine does not starve (issue 39: with a core taken, llama.cpp's spinning threads wait for each other).

Configurations (`--configs`, comma-separated):
  plain          `Llama.create_chat_completion` in a loop, one request at a time, `reset()` before each
                 (what the old worker ran: every prompt evaluated whole, so the seed decides the sample),
                 on llama.cpp's plain kernels as cpu_repack=off (the repacked AMX ones crash on some CPUs)
  plain1         the plain loop with one llama.cpp thread
  plain-cache    the same loop without `reset()`: llama-cpp-python's own prompt-prefix cache, which
                 evaluates a repeated prompt's last token alone (a one-row ubatch: not exact)
  engine:P:MODE  `LocalEngine` with parallel=P and cpu_repack=MODE (auto|on|off), P requests in flight;
                 engine:P:MODE:noreuse the same with reuse_prefix=false (every prompt evaluated whole);
                 engine:P:MODE:noadapt the same with adapt_threads=false (always all threads)
  baseline       `create(EngineOptions())` of the reasoneval found on --baseline-src (e.g. the code before
                 batched decoding, from `git worktree add`), one request in flight per replica
  baseline:P:MODE  engine:P:MODE run by the reasoneval found on --baseline-src (one with per-engine options):
                 the same configuration before and after a change, interleaved in one run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIGS = ("plain,engine:1:auto,engine:1:off,engine:4:auto,engine:8:auto,engine:16:auto,engine:8:off,"
                   "engine:8:auto:noreuse")


def questions(n: int, k: int = 1) -> list[str]:
    """n requests: k samples of each question in turn."""
    return [f"What is {17 + 7 * (i // k)} + {25 + 11 * (i // k)}? Think step by step, then give the answer."
            for i in range(n)]


def child(config: str, n: int, max_tokens: int, threads: int | None, k: int = 1) -> dict[str, Any]:
    """Runs one configuration in this process; returns tokens, seconds and the texts."""
    qs = questions(n, k)
    if config in ("plain", "plain1", "plain-cache"):
        from reasoneval.engines.local import default_model_path, plain_kernels_llama, threads_per_replica

        t = 1 if config == "plain1" else threads or threads_per_replica(1)
        # llama.cpp's plain kernels, as engine:N:off: the repacked (AMX) ones crash on some Intel CPUs.
        llm = plain_kernels_llama(model_path=str(default_model_path()), n_ctx=4096, n_threads=t,
                                  n_threads_batch=t, verbose=False)
        texts, tokens = [], 0
        t0 = time.perf_counter()
        for seed, q in enumerate(qs):
            if config != "plain-cache":
                llm.reset()
            out = llm.create_chat_completion(messages=[{"role": "user", "content": q}], temperature=0.7,
                                             top_p=0.95, top_k=0, min_p=0.0, max_tokens=max_tokens, seed=seed)
            texts.append(out["choices"][0]["message"]["content"])
            tokens += out["usage"]["completion_tokens"]
        return {"tokens": tokens, "seconds": time.perf_counter() - t0, "texts": texts}

    from reasoneval.records import Request, SamplingParams

    params = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=max_tokens)
    reqs = [Request(task="bench", problem_key=f"k{i // k}", problem_id=f"p{i // k}", index=i % k, seed=i,
                    params=params, messages=({"role": "user", "content": q},)) for i, q in enumerate(qs)]
    if config == "baseline":  # the reasoneval of --baseline-src, from before per-engine options
        from reasoneval.engines.base import EngineOptions  # type: ignore[attr-defined]
        from reasoneval.engines.local import create

        engine = create(EngineOptions())
    else:  # engine:P:MODE[:noreuse], or baseline:P:MODE[:noreuse] (the same, from --baseline-src)
        from reasoneval.engines.base import CommonOptions
        from reasoneval.engines.local import LocalEngine, Options

        _, parallel, mode, *flags = config.split(":")
        extra = {} if config.split(":")[0] == "baseline" else {"adapt_threads": "noadapt" not in flags}
        engine = LocalEngine(CommonOptions(), Options(parallel=int(parallel), cpu_repack=mode, threads=threads,
                                                      reuse_prefix="noreuse" not in flags, **extra))

    async def go() -> dict[str, Any]:
        info = await engine.start()
        slots = asyncio.Semaphore(info.max_concurrency or 1)

        async def one(r: Request) -> Any:
            async with slots:
                return await engine.generate(r)

        try:
            t0 = time.perf_counter()
            outs = await asyncio.gather(*(one(r) for r in reqs))
            seconds = time.perf_counter() - t0
        finally:
            await engine.close()
        described = engine.describe() if hasattr(engine, "describe") else {}
        return {"tokens": sum(o.completion_tokens or 0 for o in outs), "seconds": seconds,
                "texts": [o.text for o in outs], "cpu_repack": described.get("cpu_repack")}

    return asyncio.run(go())


def run_child(config: str, args: argparse.Namespace) -> dict[str, Any]:
    src = args.baseline_src if config.split(":")[0] == "baseline" else str(ROOT / "src")
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", config, "--requests", str(args.requests),
           "--max-tokens", str(args.max_tokens), "--samples-per-question", str(args.samples_per_question)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{config} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def burner() -> subprocess.Popen[bytes]:
    """Another process burning one core until killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run_config(config: str, args: argparse.Namespace, busy: bool) -> dict[str, Any]:
    burn = burner() if busy else None
    try:
        if burn is not None:
            time.sleep(0.5)  # the burner is running before the configuration starts
        out = run_child(config, args)
    finally:
        if burn is not None:
            burn.kill()
            burn.wait()
    out["tok_s"] = out["tokens"] / out["seconds"]
    return out


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples-per-question", type=int, default=1, help="K samples (seeds) of each question")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS)
    ap.add_argument("--baseline-src", default=None, help="a src/ folder holding another reasoneval")
    ap.add_argument("--contention", action="store_true",
                    help="also run every configuration with another process burning one core (a second table)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.requests, args.max_tokens, args.threads, args.samples_per_question)))
        return
    configs = [c for c in args.configs.split(",") if c]
    if args.baseline_src and not any(c.split(":")[0] == "baseline" for c in configs):
        configs.append("baseline")
    if "plain" not in configs:
        configs.insert(0, "plain")
    if args.contention and "plain1" not in configs:
        configs.insert(1, "plain1")
    phases = ["quiet", "busy"] if args.contention else ["quiet"]
    print(f"{args.requests} chat requests ({args.samples_per_question} per question) x <= {args.max_tokens} "
          f"tokens, {args.rounds} rounds; "
          f"cores: {len(os.sched_getaffinity(0))}; load average before: {loadavg()}", flush=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {ph: {c: [] for c in configs} for ph in phases}
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            for ph in phases:
                out = run_config(c, args, busy=ph == "busy")
                results[ph][c].append(out)
                print(f"  round {r + 1} {ph} {c:>16}: {out['tok_s']:7.1f} tok/s ({out['tokens']} tokens in "
                      f"{out['seconds']:.1f} s; load {loadavg()})", flush=True)
    print(f"\nload average after: {loadavg()}")
    plain_texts = results["quiet"]["plain"][0]["texts"]
    for ph in phases:
        refs = ["plain", "plain1"] if ph == "busy" else ["plain"] + (["plain1"] if "plain1" in configs else [])
        print(f"\n{'With another process burning one core throughout' if ph == 'busy' else 'The machine as it is'}:\n")
        print("| configuration | tokens/s (median) | " + " | ".join(
            f"× {ref} (median of per-round ratios)" for ref in refs) + " | texts equal to the plain loop's |")
        print("| --- | --- | " + " | ".join("---" for _ in refs) + " | --- |")
        for c in configs:
            runs = results[ph][c]
            tok_s = statistics.median(o["tok_s"] for o in runs)
            ratios = [statistics.median(o["tok_s"] / p["tok_s"] for o, p in zip(runs, results[ph][ref])) for ref in refs]
            same = sum(a == b for a, b in zip(runs[0]["texts"], plain_texts))
            repack = runs[0].get("cpu_repack")
            label = c + (f" (cpu_repack={repack})" if repack and c.split(":")[0] in ("engine", "baseline") else "")
            print(f"| {label} | {tok_s:.1f} | " + " | ".join(f"{x:.2f}×" for x in ratios)
                  + f" | {same}/{len(plain_texts)} |")


if __name__ == "__main__":
    main()
