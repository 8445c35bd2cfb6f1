"""`cascade`: a rule first, a judge where the rule cannot decide. Usable by any task (`run --judge-model M
--judge-base-url URL` wraps each task's scoring in it; config.json then records the rule, the judge's model, prompt
and settings).

The rule (the task's own scorer) decides what it can: an answer it accepts is correct, and a response with no answer
is wrong (there is nothing to judge). Every other sample (an extracted answer the rule rejects, or a grading timeout
or error) goes to the judge with the question, the reference and the extracted answer, never the response's
reasoning. Where the rule gave a verdict (rejected) and the judge one too, both are recorded, and their agreement is
a figure of the result. A sample the judge cannot grade (its calls failed or answered out of format, after retries)
is ungraded: counted wrong, and the result's `ungraded` figure says how many there are.

Each sample's value carries the stage figures as counted ratios (metrics.value_metrics, `x.count` / `x.of`):
`decided_by_rule`, `decided_by_judge`, `ungraded` (samples each stage decided, of all samples) and
`rule_judge_agreement` (agreements, of the samples both decided), shown with their counts under the task in the
table, in a line per judged task under it and in report.html (report/table.judge_stage_lines), and in summary.json's
`extra` (`count`, `of`, `mean`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem, SampleRecord
from reasoneval.run_files import JUDGEMENTS_FILE
from reasoneval.scoring.base import Score, Scorer, ScoringContext, TaskScoring, cluster, create_scorer
from reasoneval.scoring.judge.client import JudgeClient, JudgeItem, Judgement, JudgeSettings
from reasoneval.scoring.judge.hle import calibration_error

if TYPE_CHECKING:
    from reasoneval.metrics import GroupMetrics

log = logging.getLogger("reasoneval")

CASCADE_VERSION = "2"  # 2: the stage figures are counted ratios (x.count / x.of)
# The rule's statuses whose verdict stands without the judge (besides a correct answer).
RULE_FINAL = ("no_answer",)


# The rules whose rejections a judge may overturn: free-form answers. A choice letter, a program run against tests
# and IFEval's checks decide every sample themselves; their tasks keep their scoring when a judge is given.
JUDGEABLE = ("math", "cascade")


def cascade_scoring(scoring: TaskScoring, judge: JudgeSettings) -> TaskScoring:
    """`scoring` as the rule of a cascade with `judge` (its extra columns stay beside it, scored by their rule); a
    scoring whose rule decides everything itself (not JUDGEABLE) as it is."""
    if scoring.scorer not in JUDGEABLE:
        return scoring
    own_prompt = None
    if scoring.scorer == "cascade":
        rule = dict(scoring.settings.get("rule") or {})
        own_prompt = scoring.settings.get("judge_prompt")
    else:
        rule = {"scorer": scoring.scorer, "settings": dict(scoring.settings)}
    settings = JudgeSettings.make(judge.model, judge.base_url, str(own_prompt or judge.prompt),
                                  temperature=judge.temperature, max_tokens=judge.max_tokens, retries=judge.retries,
                                  concurrency=judge.concurrency, timeout_s=judge.timeout_s, api_key_env=judge.api_key_env)
    wrapped: dict[str, Any] = {"rule": rule, "judge": settings.to_json()}
    if own_prompt:  # the task's own judge prompt (HLE's) stays with it: another judge later asks it too
        wrapped["judge_prompt"] = own_prompt
    return TaskScoring("cascade", wrapped, scoring.extra)


def judged_by(scoring: TaskScoring, model: str | None, base_url: str) -> TaskScoring:
    """`report`'s --judge-model / --judge-base-url on a run's scoring: with a model, the cascade with that judge (a run
    generated without one, judged now); with the endpoint only, or the model it has, the judge it has (its settings
    kept), served at `base_url` (its verdicts stay valid: where a judge is served is not in their key)."""
    judge = scoring.settings.get("judge") if scoring.scorer == "cascade" else None
    if model is not None and not (judge and judge.get("model") == model):  # the same judge keeps its settings
        return cascade_scoring(scoring, JudgeSettings.make(model, base_url))
    if not judge:
        return scoring
    return TaskScoring("cascade", {**scoring.settings, "judge": {**judge, "base_url": base_url}}, scoring.extra)


def judge_client(context: ScoringContext, settings: JudgeSettings) -> JudgeClient:
    """The scoring pass's client for this judge (one per judge identity, sharing the run's journal)."""
    journal = context.cache_dir / JUDGEMENTS_FILE if context.cache_dir is not None else None
    client: JudgeClient = context.resource(f"judge:{settings.identity()}",
                                           lambda: JudgeClient(settings, journal))
    return client


def _figures(rule: bool, judge: bool, ungraded: bool, both: bool, agree: bool) -> dict[str, float]:
    return {"decided_by_rule.count": float(rule), "decided_by_rule.of": 1.0,
            "decided_by_judge.count": float(judge), "decided_by_judge.of": 1.0,
            "ungraded.count": float(ungraded), "ungraded.of": 1.0,
            "rule_judge_agreement.count": float(both and agree), "rule_judge_agreement.of": float(both)}


class CascadeScorer:
    """The rule's verdict where it decides, else the judge's (see the module's docstring).

    Settings: rule ({"scorer", "settings"}: the task's own scoring), judge (JudgeSettings as JSON; None: no judge,
    so every sample the rule cannot decide is ungraded: a task that needs a judge, run without one),
    judge_prompt (the prompt a task asks its judge with, e.g. HLE's; used when --judge-model is given).
    """

    name = "cascade"
    version = f"cascade-{CASCADE_VERSION}"  # an instance's names its rule's and its judge's too

    def __init__(self, context: ScoringContext, rule: Mapping[str, Any] | None = None,
                 judge: Mapping[str, Any] | None = None, judge_prompt: str | None = None) -> None:
        if not rule or "scorer" not in rule:
            raise UserError("the cascade scorer needs its rule: {'scorer': NAME, 'settings': {...}}")
        self.rule: Scorer = create_scorer(TaskScoring(str(rule["scorer"]), dict(rule.get("settings") or {})), context)
        self.settings = JudgeSettings.from_json(judge) if judge else None
        self.client = judge_client(context, self.settings) if self.settings is not None else None
        judged_by = self.settings.identity() if self.settings is not None else "none"
        self.confidences: list[tuple[float | None, bool]] = []
        self.version = f"cascade-{CASCADE_VERSION}+{self.rule.name}-{self.rule.version}+judge={judged_by}"

    def score_many(self, problems: Sequence[Problem], samples: Sequence[SampleRecord]) -> list[Score]:
        rule_scores = self.rule.score_many(problems, samples)
        ask = [i for i, s in enumerate(rule_scores)
               if not s.correct and s.status not in RULE_FINAL and s.answer is not None and not s.details.get("final")]
        judged: dict[int, Judgement] = {}
        if ask and self.client is not None:
            verdicts = self.client.judge_many([JudgeItem(problems[i].problem, problems[i].answer,
                                                         str(rule_scores[i].answer)) for i in ask])
            judged = dict(zip(ask, verdicts))
        out: list[Score] = []
        ungraded = 0
        for i, s in enumerate(rule_scores):
            details = dict(s.details)
            details["rule"] = {"correct": s.correct, "status": s.status}
            if i not in ask:
                out.append(Score(s.correct, _figures(True, False, False, False, False), s.answer, s.status,
                                 {**details, "decided_by": "rule"}))
                continue
            j = judged.get(i)
            rule_decided = s.status == "ok"  # the rule rejected an answer it read (not a timeout or error)
            if j is None or j.verdict is None:
                ungraded += 1
                why = j.error if j is not None else "no judge configured (--judge-model, --judge-base-url)"
                out.append(Score(False, _figures(False, False, True, False, False), s.answer, "ungraded",
                                 {**details, "decided_by": "ungraded", "reason": why}))
                continue
            details["judge"] = {"correct": j.verdict, "cached": j.cached}
            out.append(Score(j.verdict, _figures(False, True, False, rule_decided, j.verdict == s.correct), s.answer,
                             "ok", {**details, "decided_by": "judge"}))
        self._calibration(out)
        if ungraded:
            log.warning("%d of %d samples ungraded (%s): counted wrong; the result's `ungraded` figure says how many",
                        ungraded, len(samples), "the judge failed or answered out of format after retries"
                        if self.client is not None else "no judge configured")
        return out

    def _calibration(self, scores: Sequence[Score]) -> None:
        """Keep each sample's stated confidence (a rule that reads one: HLE's) and final verdict."""
        for score in scores:
            confidence = score.details.get("confidence")
            self.confidences.append((confidence if isinstance(confidence, float) else None, score.correct))

    def task_figures(self) -> dict[str, GroupMetrics]:
        """Figures of the whole task, beyond each sample's: HLE's calibration error (in [0, 1]) when some response
        states a confidence (a response that states none counts as 100% sure, as HLE's judge records it)."""
        from reasoneval.metrics import GroupMetrics  # here: `run --help` imports this module, not numpy

        if not any(c is not None for c, _ in self.confidences):
            return {}
        error = calibration_error([1.0 if c is None else c for c, _ in self.confidences],
                                  [ok for _, ok in self.confidences])
        if error is None:
            return {}
        return {"calibration_error": GroupMetrics(num_problems=len(self.confidences), mean=error, stderr=None)}

    def cluster_many(self, groups: Sequence[tuple[Problem, Sequence[str | None]]]) -> list[list[int | None]]:
        return cluster(self.rule, groups)
