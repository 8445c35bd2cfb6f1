"""The scorer interface: a task names how its responses are scored; each scorer is one registered module.

A scorer turns (problem, sample) pairs into `Score`s. `Score.correct` is what pass@k, the mean and
maj@k use; `value` is the scorer's own figure (a flag, a float, or named sub-scores such as IFEval's
instruction-level results) and `details` anything a report may show. Scorers that can tell when two
answers are the same (math equivalence, choice letters) also implement `cluster_many`, which maj@k
uses; for the others, answers are grouped by identical text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.registry import SCORER_GROUP, Registry
from reasoneval.serial import JsonRecord, json_field

ScoreValue = bool | float | Mapping[str, float]


@dataclass(frozen=True)
class Score:
    """One sample's score."""

    correct: bool
    value: ScoreValue
    # The answer the scorer extracted from the response (None: none found).
    answer: str | None
    # "ok" | "no_answer" | "timeout" | "error"
    status: str
    details: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Scorer(Protocol):
    """Scores samples. `version` changes whenever a rule changes (it is recorded with the results)."""

    name: str
    version: str

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        """Score sample i against problems[i]; returns one Score per sample, in order."""
        ...


@runtime_checkable
class AnswerClusterer(Protocol):
    """Optional: group a problem's answers into classes of equivalent answers (for maj@k)."""

    def cluster_many(self, groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
        """Per (problem, answers): a class id per answer (equal ids = equivalent), None for no answer."""
        ...


# Seconds a grading item may take (--grading-timeout), by default.
GRADING_TIMEOUT_S = 5.0

# A setting value that the pipeline replaces by the answer regex of the task's prompt style
# (reasoneval.prompts.fewshot: "#### N", "The answer is N.", ...), or drops when the style has none.
FROM_PROMPT_STYLE = "<prompt style>"


@dataclass(frozen=True)
class TaskScoring(JsonRecord):
    """How a task's responses are scored: a registered scorer and its settings (e.g. rel_tol).

    extra: further scorers reported beside the primary one, by metric name (e.g. lm-eval's
    "strict-match"); each gives an accuracy ± SE over problems of its own (`TaskMetrics.extra`), while
    pass@k, maj@k and `correct` stay the primary scorer's.
    """

    scorer: str = "math"
    settings: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, TaskScoring] = json_field(default_factory=dict, omit_empty=True)

    def with_style_pattern(self, pattern: str | None) -> TaskScoring:
        """This scoring with FROM_PROMPT_STYLE settings (its own and its extras') resolved to `pattern`."""
        settings = {k: v for k, v in self.settings.items() if v != FROM_PROMPT_STYLE}
        settings.update({k: pattern for k, v in self.settings.items() if v == FROM_PROMPT_STYLE and pattern is not None})
        return TaskScoring(self.scorer, settings, {n: s.with_style_pattern(pattern) for n, s in self.extra.items()})


class ScoringContext:
    """Shared resources of the scorers of one scoring pass: worker pools, the grade cache, limits.

    Pools start on first use and stop in `close()`, so a pass that scores nothing starts nothing.
    """

    def __init__(self, *, workers: int | None = None, timeout_s: float = GRADING_TIMEOUT_S,
                 cache_dir: Path | None = None) -> None:
        self.workers = workers
        self.timeout_s = timeout_s
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._resources: dict[str, Any] = {}

    def resource(self, name: str, make: Callable[[], Any]) -> Any:
        """The shared resource `name` (e.g. the grading pool), made by `make()` on first use.

        A resource with a `close()` method is closed with the context.
        """
        if name not in self._resources:
            self._resources[name] = make()
        return self._resources[name]

    def close(self) -> None:
        resources, self._resources = self._resources, {}
        for r in resources.values():
            close = getattr(r, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> ScoringContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# name -> factory(context, **settings) -> Scorer
ScorerFactory = Callable[..., Scorer]


def scorer_lacks(obj: Any) -> list[str]:
    """What of the Scorer protocol `obj` (a Scorer class or instance) lacks: `name` and `version` (strings, recorded
    with the results; on a class, class attributes: an instance may refine its version) and `score_many`."""
    missing = [a for a in ("name", "version") if not isinstance(getattr(obj, a, None), str)]
    return missing + ([] if callable(getattr(obj, "score_many", None)) else ["score_many"])


def _check_scorer(name: str, factory: Any) -> None:
    if not callable(factory):
        raise UserError(f"scorer {name!r} is {factory!r}, not a factory (context, **settings) -> Scorer")
    missing = scorer_lacks(factory) if isinstance(factory, type) else []  # a function factory: its Scorer, when made
    if missing:
        raise UserError(f"scorer {name!r} ({factory.__module__}:{factory.__qualname__}) is not a Scorer: it lacks "
                        f"{', '.join(missing)} (reasoneval.scoring.Scorer: name and version strings, score_many)")


# The shipped scorers, each imported only when a task is scored with it (so a scorer module can import
# this package without a cycle). Other packages add scorers through the `reasoneval.scorers` entry
# point group (`name = "package.module:Factory"`; reasoneval.registry).
SCORERS: Registry[ScorerFactory] = Registry("scorer", group=SCORER_GROUP, check=_check_scorer)
SCORERS.add_lazy("math", "reasoneval.scoring.maths.scorer:MathScorer")
SCORERS.add_lazy("choice", "reasoneval.scoring.maths.scorer:ChoiceScorer")
SCORERS.add_lazy("code", "reasoneval.scoring.programs.scorer:CodeScorer")
SCORERS.add_lazy("contest", "reasoneval.scoring.programs.contest:ContestScorer")
SCORERS.add_lazy("codeforces", "reasoneval.scoring.programs.codeforces.judge:CodeforcesScorer")
SCORERS.add_lazy("ifeval", "reasoneval.scoring.ifeval.scorer:IFEvalScorer")
SCORERS.add_lazy("strict_match", "reasoneval.scoring.lmeval:StrictMatchScorer")
SCORERS.add_lazy("flexible_extract", "reasoneval.scoring.lmeval:FlexibleExtractScorer")
SCORERS.add_lazy("exact_match", "reasoneval.scoring.lmeval:ExactMatchScorer")
SCORERS.add_lazy("math_verify", "reasoneval.scoring.lmeval:MathVerifyScorer")
SCORERS.add_lazy("cascade", "reasoneval.scoring.judge.cascade:CascadeScorer")
SCORERS.add_lazy("hle", "reasoneval.scoring.judge.hle:HLERule")


def needs_calibration(scoring: TaskScoring) -> bool:
    """Whether the task's scorer scales CPU-time limits by the machine's calibration, which a run measures once and
    keeps in its directory (`calibration.json`). A scorer class says so with `needs_calibration = True`: the
    capability is asked of the scorer, never inferred from its name."""
    return bool(getattr(SCORERS.get(scoring.scorer), "needs_calibration", False))


def create_scorer(scoring: TaskScoring, context: ScoringContext) -> Scorer:
    """The scorer a task names, with its settings; a setting the scorer does not take is a one-line error."""
    factory = SCORERS.get(scoring.scorer)
    try:
        scorer = factory(context, **dict(scoring.settings))
    except TypeError as e:
        raise UserError(f"scorer {scoring.scorer!r} does not take settings {dict(scoring.settings)}: {e}") from None
    missing = scorer_lacks(scorer)
    if missing:
        origin = SCORERS.origin(scoring.scorer)
        raise UserError(f"scorer {scoring.scorer!r}{f' of package {origin}' if origin else ''} made "
                        f"{type(scorer).__name__}, not a Scorer: it lacks {', '.join(missing)}")
    return scorer


def check_scorers(scorings: Iterable[TaskScoring]) -> None:
    """Resolve every scorer the tasks name (their extra columns too) before any sample is generated: an unknown
    or broken one is a one-line error now, not after the generation (its settings are checked when it is made)."""
    for scoring in scorings:
        for s in (scoring, *scoring.extra.values()):
            SCORERS.get(s.scorer)


def cluster_by_text(groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
    """Answer classes by identical (stripped) text: the default for scorers without a notion of equivalence."""
    out: list[list[int | None]] = []
    for _, answers in groups:
        ids: dict[str, int] = {}
        out.append([None if a is None else ids.setdefault(a.strip(), len(ids)) for a in answers])
    return out


def cluster(scorer: Scorer, groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
    if isinstance(scorer, AnswerClusterer):
        return scorer.cluster_many(groups)
    return cluster_by_text(groups)
