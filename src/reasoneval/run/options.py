"""Every option of `reasoneval run`, declared once: `EvalConfig`'s fields carry their CLI metadata.

A field made with `run_option(...)` (the machinery: run/flags.py) states its default, one line of help, its group
in `--help` and how the command line spells and parses it. From that one declaration come the flag
(`add_options(parser, EvalConfig)`; subsets for `report`, `score`, `tasks`), the parsed value
(`config_from_args`), a jobs / settings file's key and `evaluate(...)`'s typed keyword (`takes_options_of`), so
adding a run option is one edit: a field here. Engine options are declared the same way in each engine's
`Options` (engines.base.option); their flags are added here too (`engine_flags`).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import typing
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Collection, Mapping, ParamSpec, Protocol, Sequence, TypeVar

from reasoneval.engines.base import CommonOptions
from reasoneval.errors import UserError
from reasoneval.records import SamplingParams
from reasoneval.results.adaptive import ADAPTIVE_MAX_N
from reasoneval.run.flags import (  # the declaration machinery
    SAMPLING,
    add_options,
    flag_of,
    given_flags,
    options_from_args,
    run_option,
)
from reasoneval.run.retry import RetryPolicy
from reasoneval.scoring.base import GRADING_TIMEOUT_S

log = logging.getLogger("reasoneval")

# The engine-facing defaults are CommonOptions' (engines/base.py), the sampling options SamplingParams' fields
# (records.py): stated there once, read here.
_COMMON = CommonOptions()
_RETRY = RetryPolicy()
# Where run directories go, unless --output-dir says (a jobs file's: beside it).
OUTPUT_DIR = "results"



# ---- parsers of flag values ---------------------------------------------------------------------

def default_engine(model: Any = None, base_url: Any = None) -> str:
    """The engine when none is named: a served model (--model / --base-url) is asked over the OpenAI API,
    else the embedded CPU model answers."""
    return "openai" if (model or base_url) else "local"


def _engine_names() -> list[str]:
    from reasoneval.engines import ENGINES

    return list(ENGINES.names())


def _scorer_names() -> list[str]:
    from reasoneval.scoring import SCORERS

    return list(SCORERS.names())


def _schedules() -> list[str]:
    from reasoneval.run.plan import SCHEDULES

    return list(SCHEDULES)


def _prompt_style_help() -> str:
    from reasoneval.prompts import FEWSHOT_STYLES, PROMPTS

    styles = ", ".join(f"{n} ({FEWSHOT_STYLES[n].default_shots}-shot)" if n in FEWSHOT_STYLES else n
                       for n in PROMPTS.names())
    return f"prompt style for every task (default: each task's own); styles: {styles}"


def engine_flags() -> dict[str, tuple[str, dataclasses.Field[Any], list[str]]]:
    """Engine options that are also top-level flags (engines.base.option(flag=...)):
    dest -> (flag, field, engines that have it). A plugin engine that cannot be loaded is left out with a warning
    (asked for by --engine, it is a one-line error then)."""
    from reasoneval.engines import ENGINES
    from reasoneval.engines.options import BUILT_IN

    # A built-in engine's Options without importing the engine (engines/options.py); a plugin's from its module.
    plugins = dict(ENGINES.available([name for name in ENGINES.names() if name not in BUILT_IN]))
    every = [(name, BUILT_IN[name] if name in BUILT_IN else plugins[name].Options) for name in ENGINES.names()
             if name in BUILT_IN or name in plugins]
    out: dict[str, tuple[str, dataclasses.Field[Any], list[str]]] = {}
    for engine, options in every:
        for f in dataclasses.fields(options):
            flag = f.metadata.get("flag")
            if not flag:
                continue
            name = flag if isinstance(flag, str) else "--" + f.name.replace("_", "-")
            out.setdefault(f.name, (name, f, []))[2].append(engine)
    return out


def _add_engine_args(parser: Any, group: Any) -> None:
    group.add_argument("--engine-arg", action="append", default=[], metavar="KEY=VALUE", dest="engine_arg",
                       help="an option of the chosen engine (repeatable); `reasoneval engines` lists them")
    g = parser.add_argument_group("engine options (also --engine-arg KEY=VALUE; `reasoneval engines`)")
    for dest, (flag, f, engines) in engine_flags().items():
        help_ = f"{f.metadata.get('help', '')} [{', '.join(engines)}]"
        if f.default is False:
            g.add_argument(flag, dest=dest, action="store_const", const=True, default=None, help=help_)
        elif isinstance(f.default, tuple):
            g.add_argument(flag, dest=dest, action="append", default=None, metavar="ARG", help=help_ + " (repeatable)")
        else:
            g.add_argument(flag, dest=dest, default=None, metavar="VALUE", help=help_)


def _collect_engine_args(ns: argparse.Namespace) -> dict[str, Any]:
    """The --engine-arg pairs; the engine flags join them in config_from_args, once the engine is known."""
    from reasoneval.engines import parse_engine_args

    return dict(parse_engine_args(getattr(ns, "engine_arg", None) or []))


def engine_flag_values(ns: argparse.Namespace, engine: str) -> dict[str, Any]:
    """The engine flags that were given, each checked to be an option of engine `engine`."""
    from reasoneval.engines import options_class

    own = {f.name for f in dataclasses.fields(options_class(engine))}
    out = {}
    for dest, (flag, _, engines) in engine_flags().items():
        value = getattr(ns, dest, None)
        if value is None:
            continue
        if dest not in own:
            raise UserError(f"{flag} is an option of the {', '.join(engines)} engine(s), not of --engine {engine}")
        out[dest] = value
    return out


def _add_dashboards(parser: Any, group: Any) -> None:
    from reasoneval.report.dashboards import add_dashboard_args

    add_dashboard_args(parser)


def _collect_log_to(ns: argparse.Namespace) -> tuple[str, ...]:
    from reasoneval.report.dashboards import backend_names

    return tuple(backend_names(getattr(ns, "log_to", None)))


def _collect_log_args(ns: argparse.Namespace) -> dict[str, Any]:
    from reasoneval.report.dashboards import LOG_ARGS

    return {k: getattr(ns, k) for k in LOG_ARGS if getattr(ns, k, None) is not None}


WHAT = "what to evaluate"
ENGINE = "model and engine"
ADAPTIVE = "adaptive sampling (instead of a fixed --n; docs/statistics.md)"
EXECUTION = "execution"
DASHBOARDS = "dashboards (docs/reporting.md)"


# ---- `reasoneval run` ---------------------------------------------------------------------------

@dataclass(frozen=True)
class EvalConfig(SamplingParams):
    """Every option of `reasoneval run` (the CLI flag is the field name with dashes, unless it says another).

    The sampling options are SamplingParams' own fields (records.py), inherited: one declaration gives the flag
    (run.flags.cli_of reads its records.CLI metadata), the typed field mypy checks `EvalConfig(...)` and
    `evaluate(...)` against, the jobs-file key and the request field. Engine-specific options go in `engine_args`
    (the engine's Options fields; `reasoneval engines`). Frozen, like SamplingParams: a changed configuration is
    `dataclasses.replace(cfg, n=32)`.
    """

    GROUPS: ClassVar[tuple[str, ...]] = (WHAT, ENGINE, SAMPLING, ADAPTIVE, EXECUTION, DASHBOARDS)

    tasks: Sequence[str] = run_option(
        (), group=WHAT, action="append", split=True, metavar="A,B",
        help="tasks or groups, comma-separated or repeated (e.g. math, aime24,math500); `reasoneval tasks` lists them")
    limit: int | None = run_option(None, group=WHAT, parse=int, help="first N problems of each task")
    task_arg: Sequence[str] = run_option(
        (), group=WHAT, action="append", metavar="[TASK:]KEY=VALUE",
        help="a task's option (repeatable), e.g. livecodebench's release=v5, since=2024-08-01, until=2025-02-01; "
        "without TASK: for every task that takes options (docs/contests.md)")
    data_dir: str | None = run_option(
        None, group=WHAT, help="folder of <task>.jsonl files (default $REASONEVAL_DATA_DIR; before the Hub)")
    data: str | None = run_option(
        None, group=WHAT, help="your own data: a JSONL/JSON/Parquet/CSV file or a Hub dataset id")
    problem_field: str = run_option(
        "problem", group=WHAT, aliases=("--problem-key", "--question-key"), metavar="FIELD",
        help="with --data: the field holding the problem text (default problem)")
    answer_field: str = run_option(
        "answer", group=WHAT, aliases=("--answer-key",), metavar="FIELD",
        help="with --data: the field holding the reference answer (default answer)")
    id_field: str | None = run_option(
        None, group=WHAT, aliases=("--id-key",), metavar="FIELD",
        help="with --data: the field holding each problem's id (default: row numbers)")
    split: str | None = run_option(None, group=WHAT, help="split of a Hub dataset given with --data")
    scorer: str | None = run_option(
        None, group=WHAT, choices=_scorer_names, metavar="NAME",
        help=lambda: "with --data: how its responses are scored: " + ", ".join(_scorer_names()) + " (default math)")

    model: str | None = run_option(None, group=ENGINE, help="model name as served (default: the server's only model)")
    engine: str | None = run_option(
        None, group=ENGINE, choices=_engine_names,
        help="default: openai with --model/--base-url, else the embedded CPU model (local)")
    base_url: str | None = run_option(
        None, group=ENGINE,
        help="OpenAI-compatible API incl. /v1 (default $OPENAI_BASE_URL, else http://localhost:8000/v1)")
    api: str = run_option(_COMMON.api, group=ENGINE, choices=("chat", "completions"),
                          help="completions for base models (raw prompt)")
    api_key_env: str = run_option(_COMMON.api_key_env, group=ENGINE, metavar="NAME",
                                  help="environment variable holding the API key (never written anywhere)")
    engine_args: Mapping[str, Any] = run_option(
        default_factory=dict, group=ENGINE, flag="--engine-arg", add=_add_engine_args, collect=_collect_engine_args,
        help="an option of the chosen engine (repeatable); `reasoneval engines` lists them")

    n: int = run_option(16, group=SAMPLING, parse=int, help="samples per problem, K (default 16)")
    seed: int = run_option(42, group=SAMPLING, parse=int, help="run seed; sample j of a problem gets its own seed")
    system_prompt: str | None = run_option(None, group=SAMPLING, metavar="TEXT", help="system message of every chat request")
    prompt_template: str | None = run_option(None, group=SAMPLING, metavar="FILE",
                                             help="prompt with a {problem} placeholder")
    # Few-shot prompting (reasoneval.prompts.fewshot): a style for every task (default: each task's own;
    # its few-shot style when num_fewshot is given), exemplars per prompt, and whether the style's stop
    # sequences are sent.
    prompt_style: str | None = run_option(None, group=SAMPLING, metavar="NAME", help=_prompt_style_help)
    num_fewshot: int | None = run_option(
        None, group=SAMPLING, parse=int, metavar="N",
        help="exemplars before the problem (default: the style's); with no --prompt-style, each task's few-shot "
        "style (gsm8k: gsm8k, lm-eval's draw from the train split; math tasks: minerva)")
    # The generator seed of a drawing style's exemplars (None: the style's, lm-eval's default 1234).
    fewshot_seed: int | None = run_option(
        None, group=SAMPLING, parse=int, metavar="SEED",
        help="seed of the per-problem exemplar draw of gsm8k and hendrycks_math (lm-eval's fewshot seed: 1234 by "
        "default; `lm_eval --seed 42` makes it 42)")
    style_stop: bool = run_option(
        True, group=SAMPLING, flag="--no-style-stop", action="false",
        help="do not send the few-shot style's stop sequences (e.g. 'Question:'); --stop adds more")
    # Greedy decoding, one sample per problem: sets temperature 0, top_p 1, n 1 (over what else is given);
    # the table then shows accuracy ± SE over problems.
    greedy: bool = run_option(False, group=SAMPLING, action="true",
                              help="greedy decoding, one sample per problem: --temperature 0 --top-p 1 --n 1")
    # lm-eval's columns (TaskScoring.extra) for every task that has them, not only where lm-eval defines the
    # task with this prompt style (TaskSpec.lmeval_styles). Scoring only: not part of the run id.
    lmeval_metrics: bool = run_option(
        False, group=SAMPLING, action="true",
        help="report lm-eval's columns (strict-match, flexible-extract, exact_match, math_verify) for every task "
        "that has them; by default only where lm-eval defines the task with the prompt style used (gsm8k with its "
        "few-shot styles, MATH with minerva)")
    # A fixed table of lm-eval rows (reasoneval.run.battery), each produced by a run with lm-eval's setting.
    battery: str | None = run_option(
        None, group=WHAT, metavar="NAME",
        help="run a battery instead of --tasks: lmeval-base = lm-eval's base-model table (gsm8k and gsm8k_cot 4/8-shot, "
        "hendrycks_math and minerva_math 4-shot, ifeval, mbpp 3-shot, humaneval), greedy, seed 42; prints and writes "
        "the table in that layout (docs/lm-eval.md)")

    # run --target-se (reasoneval.run.adaptive): sample each problem until the re-run SE of each task's mean is at
    # most target_se points; max_n samples per problem at most; budget_samples: most samples the run holds in all.
    target_se: float | None = run_option(
        None, group=ADAPTIVE, parse=float, metavar="POINTS",
        help="sample each problem until the re-run SE of each task's mean accuracy is at most this many points "
        "(e.g. 0.5), more where it is uncertain")
    max_n: int = run_option(ADAPTIVE_MAX_N, group=ADAPTIVE, parse=int,
                            help="with --target-se: most samples per problem (default 256)")
    budget_samples: int | None = run_option(
        None, group=ADAPTIVE, parse=int, metavar="B",
        help="with --target-se: stop when the run holds B samples, whatever the SE")

    concurrency: int = run_option(_COMMON.concurrency, group=EXECUTION, parse=int,
                                  help=f"requests in flight (default {_COMMON.concurrency})")
    # The order samples start in (plan.SCHEDULES): longest expected first, or sample-index-major.
    schedule: str = run_option(
        "longest-first", group=EXECUTION, choices=_schedules,
        help="order samples start in: one pilot per problem then the longest expected first (default), or every "
        "problem's sample j before any sample j+1")
    timeout: float = run_option(_COMMON.timeout_s, group=EXECUTION, parse=float,
                                help=f"seconds per request (default {_COMMON.timeout_s:g})")
    max_retries: int = run_option(_RETRY.max_retries, group=EXECUTION, parse=int,
                                  help="retries of a failed request (timeouts, 429, 5xx) (default %(default)s)")
    retry_backoff: float = run_option(_RETRY.backoff_base_s, group=EXECUTION, parse=float,
                                      help="base seconds of the exponential backoff between retries (default %(default)g)")
    rate_limit_window: float = run_option(
        _RETRY.rate_limit_window_s, group=EXECUTION, parse=float,
        help="a request the server rate-limits (429) waits as asked without using a retry; when every answer has been "
        "a 429 for this many seconds, or the server asks to wait longer, the run stops, exit 4 (default %(default)g)")
    output_dir: str = run_option(OUTPUT_DIR, group=EXECUTION, help="where run directories go (default %(default)s)")
    grading_workers: int | None = run_option(None, group=EXECUTION, parse=int,
                                             help="grading processes (default: CPU count)")
    grading_timeout: float = run_option(GRADING_TIMEOUT_S, group=EXECUTION, parse=float,
                                        help="seconds per grading item (default %(default)g)")
    # The rule-then-judge cascade (scoring/judge, docs/grading.md): scoring only, not part of the run id.
    judge_model: str | None = run_option(
        None, group=EXECUTION, metavar="NAME",
        help="a judge model for what the rule cannot decide (with --judge-base-url); recorded in config.json")
    judge_base_url: str | None = run_option(None, group=EXECUTION, metavar="URL",
                                            help="the judge's OpenAI-compatible endpoint, e.g. http://localhost:8001/v1")
    judge_server: str | None = run_option(
        None, group=EXECUTION, metavar="SERVER",
        help="launch the judge: start a vllm, sglang or llamacpp server for it (with --judge-model-path; llamacpp's "
        "default is the embedded SmolLM2), and stop it when the command ends; instead of --judge-base-url")
    judge_model_path: str | None = run_option(
        None, group=EXECUTION, metavar="PATH",
        help="the launched judge's weights: a GGUF file (llamacpp) or a checkpoint folder (vllm, sglang)")
    judge_max_tokens: int = run_option(4096, group=EXECUTION, parse=int,
                                       help="the judge's reply budget in tokens (default %(default)s); in its key")
    # None: a live bar on a terminal, log lines elsewhere.
    progress: bool | None = run_option(None, group=EXECUTION, flag="--no-progress", action="false",
                                       help="log lines instead of a live bar")
    print_table: bool = run_option(True, group=EXECUTION, flag="--json", action="false",
                                   help="print summary.json to stdout instead of the table")

    # Dashboards the scored result is logged to (reasoneval.report.dashboards: tensorboard, mlflow, wandb) and their
    # settings (dashboards.LOG_ARGS); never part of a run's identity.
    log_to: Sequence[str] = run_option(
        (), group=DASHBOARDS, add=_add_dashboards, collect=_collect_log_to,
        help="dashboards each task's metrics are logged to (tensorboard, mlflow, wandb)")
    log_args: Mapping[str, Any] = run_option(
        default_factory=dict, group=DASHBOARDS, flag="--log-run-name", add=lambda parser, group: None, collect=_collect_log_args,
        help="the dashboards' settings (--tensorboard-dir, --mlflow-tracking-uri, ...; dashboards.LOG_ARGS)")

    def __post_init__(self) -> None:
        if self.greedy:  # frozen: set as the constructor does
            for name, value in GREEDY.items():
                object.__setattr__(self, name, value)

    def validate(self) -> None:
        from reasoneval.run.plan import SCHEDULES

        checks = [
            (self.n >= 1, f"--n must be at least 1 (got {self.n})"),
            (self.concurrency >= 1, f"--concurrency must be at least 1 (got {self.concurrency})"),
            (self.limit is None or self.limit >= 1, f"--limit must be at least 1 (got {self.limit})"),
            (self.max_tokens >= 1, f"--max-tokens must be at least 1 (got {self.max_tokens})"),
            (self.max_retries >= 0, f"--max-retries must be 0 or more (got {self.max_retries})"),
            (self.timeout > 0, f"--timeout must be positive (got {self.timeout})"),
            (self.rate_limit_window > 0, f"--rate-limit-window must be positive seconds (got {self.rate_limit_window})"),
            (self.temperature >= 0, f"--temperature must be >= 0 (got {self.temperature})"),
            (0 < self.top_p <= 1, f"--top-p must be in (0, 1] (got {self.top_p})"),
            (self.api in ("chat", "completions"), f"--api must be 'chat' or 'completions' (got {self.api!r})"),
            (self.grading_timeout > 0, f"--grading-timeout must be positive (got {self.grading_timeout})"),
            (self.judge_server is not None or (self.judge_model is None) == (self.judge_base_url is None),
             "--judge-model and --judge-base-url go together: give both (the judge's name as served, and its "
             "OpenAI-compatible endpoint) or neither"),
            (self.judge_server is None or self.judge_base_url is None,
             "--judge-server launches the judge at a URL of its own: drop --judge-base-url (or --judge-server)"),
            (self.judge_model_path is None or self.judge_server is not None,
             "--judge-model-path is the launched judge's weights: add --judge-server vllm|sglang|llamacpp"),
            (self.judge_max_tokens >= 1, f"--judge-max-tokens must be at least 1 (got {self.judge_max_tokens})"),
            (self.judge_max_tokens == 4096 or self.judge_base_url is not None or self.judge_server is not None,
             "--judge-max-tokens is the judge's reply budget, and no judge is given: add --judge-model and "
             "--judge-base-url (or --judge-server), or drop it"),
            (self.schedule in SCHEDULES, f"--schedule must be one of {', '.join(SCHEDULES)} (got {self.schedule!r})"),
            (self.target_se is None or (math.isfinite(self.target_se) and 0 < self.target_se < MAX_TARGET_SE),
             f"--target-se is the re-run SE to reach, in points of accuracy, above 0 and below {MAX_TARGET_SE:g} (the "
             f"first round of 4 samples per problem already reaches {MAX_TARGET_SE:g}, whatever the answers); "
             f"e.g. 0.5 (got {self.target_se})"),
            (self.max_n >= 1, f"--max-n must be at least 1 (got {self.max_n})"),
            (self.budget_samples is None or self.budget_samples >= 1,
             f"--budget-samples must be at least 1 (got {self.budget_samples})"),
            (self.target_se is None or self.temperature > 0,
             "--target-se needs sampling: with --greedy or --temperature 0 every sample of a problem is the same, "
             "so more samples cannot lower the SE; drop one of them"),
            (self.scorer is None or bool(self.data),
             "--scorer says how a --data file is scored; a catalog task (--tasks) has its own scorer"),
        ]
        for ok, message in checks:
            if not ok:
                raise UserError(message)
        if self.scorer is not None:
            from reasoneval.scoring import SCORERS

            SCORERS.get(self.scorer)  # one line naming the known scorers
        if self.log_to or self.log_args:
            from reasoneval.report.dashboards import check_backends

            check_backends(self.log_to, self.log_args)

    def check_given(self, given: Collection[str]) -> None:
        """The options that were given (`given`: field names, as a command line, a jobs file or evaluate() named
        them) that this configuration would ignore, or that contradict another: a one-line error, or a warning
        where the rest of the command stands as asked."""
        def flags(*names: str) -> str:
            return ", ".join(flag_of(_FIELDS[n]) for n in names)

        if self.target_se is not None and "n" in given:
            raise UserError("--n sets how many samples each problem gets; --target-se samples each problem until the "
                            "SE target instead: give one of them (--max-n bounds the samples per problem of --target-se)")
        adaptive_only = [n for n in ("max_n", "budget_samples") if n in given]
        if self.target_se is None and adaptive_only:
            raise UserError(f"{flags(*adaptive_only)} only apply with --target-se (adaptive sampling); with a fixed "
                            "--n every problem gets n samples: drop it or add --target-se")
        overridden = [n for n in GREEDY if n in given]
        if self.greedy and overridden:
            raise UserError(f"--greedy sets --temperature 0 --top-p 1 --n 1, so {flags(*overridden)} would be "
                            "ignored: drop one of them")
        data_only = [n for n in ("problem_field", "answer_field", "id_field", "split") if n in given]
        if data_only and not self.data:
            raise UserError(f"{flags(*data_only)} say which fields of a --data file to read; the catalog tasks "
                            "(--tasks) have their own: drop them or give --data")
        engine = self.engine_name()
        server_only = [n for n in ("base_url", "api_key_env") if n in given]
        if server_only and engine not in ("openai", "ray"):
            raise UserError(f"{flags(*server_only)} are for a server the openai engine talks to; --engine {engine} "
                            "does not use them: drop them or the --engine")
        if "data_dir" in given and self.data and not self.tasks and self.prompt_style is None and self.num_fewshot is None:
            log.warning("--data-dir is where catalog tasks' files are read from; with --data alone it is not read")
        if "style_stop" in given and self.prompt_style is None and self.num_fewshot is None:
            log.warning("--no-style-stop has no effect without a few-shot prompt (--num-fewshot or --prompt-style): "
                        "zero-shot prompts send no stop sequences of their own")
        if "fewshot_seed" in given and self.prompt_style is None and self.num_fewshot is None and not self.battery:
            log.warning("--fewshot-seed has no effect without a few-shot prompt (--num-fewshot or --prompt-style): "
                        "it seeds the draw of a drawing style's exemplars (gsm8k, hendrycks_math)")
        from reasoneval.report.dashboards import LOG_ARGS

        # A jobs file's log_args are left over, not ignored by mistake, when the command turned logging off (log_to: []).
        for key in self.log_args if self.log_to or "log_to" not in given else ():
            backend = key.split("_")[0]
            if key in LOG_ARGS and ((backend in ("tensorboard", "mlflow", "wandb") and backend not in self.log_to)
                                    or not self.log_to):
                want = f"--log-to {backend}" if backend in ("tensorboard", "mlflow", "wandb") else "--log-to"
                raise UserError(f"{LOG_ARGS[key][0]} is a setting of {want}, which is not asked for: add {want} "
                                "or drop it")

    def samples_per_problem(self) -> int:
        """The sample-index bound scoring uses: --n, or 2 x --max-n for an adaptive run (at most max_n samples
        per problem, but its even and odd streams can differ in length)."""
        return 2 * self.max_n if self.target_se is not None else self.n

    def engine_name(self) -> str:
        return self.engine or default_engine(self.model, self.base_url)

    def sampling(self) -> SamplingParams:
        """The sampling options as the record requests carry (a list given for a tuple field is made a tuple)."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(SamplingParams):
            v = getattr(self, f.name)
            values[f.name] = tuple(v) if isinstance(v, list) else dict(v) if isinstance(v, Mapping) else v
        return SamplingParams(**values)

    def prompt(self) -> Any:
        from reasoneval.prompts import PromptConfig, read_template

        template = read_template(self.prompt_template) if self.prompt_template is not None else None
        return PromptConfig(system_prompt=self.system_prompt, template=template, num_fewshot=self.num_fewshot,
                            style_override=self.prompt_style, style_stop=self.style_stop, fewshot_seed=self.fewshot_seed)

    def common_options(self) -> Any:
        from reasoneval.engines import CommonOptions

        return CommonOptions(model=self.model, base_url=self.base_url, api=self.api,
                             api_key=os.environ.get(self.api_key_env) or None, api_key_env=self.api_key_env,
                             timeout_s=self.timeout, concurrency=self.concurrency, log_dir=self.output_dir,
                             sampling=self.sampling())


_FIELDS = {f.name: f for f in dataclasses.fields(EvalConfig)}


P = ParamSpec("P")
R = TypeVar("R", covariant=True)


class WithOptions(Protocol[P, R]):
    """A function called as `f(config=None, **options)` whose options are the keyword arguments of a dataclass `P`
    (EvalConfig's fields, SamplingParams' among them): mypy checks each keyword's name and type as the
    dataclass's constructor would, from the fields themselves (nothing to keep in step)."""

    def __call__(self, config: EvalConfig | None = None, /, *args: P.args, **options: P.kwargs) -> R: ...


def takes_options_of(cls: Callable[P, Any]) -> Callable[[Callable[..., R]], WithOptions[P, R]]:
    """Types `fn(config=None, **options: Any)` as taking `cls`'s fields as its keywords; at run time `fn` as it is."""
    def typed(fn: Callable[..., R]) -> WithOptions[P, R]:
        return typing.cast("WithOptions[P, R]", fn)
    return typed
# A setting run --target-se bounds the re-run SE below: 4 first-round samples of a Bernoulli answer have an SD of
# at most 0.5 / sqrt(4) = 25 points, so a target there is met before any allocation (plan_adaptive.FIRST_ROUND).
MAX_TARGET_SE = 25.0


def config_from_args(ns: argparse.Namespace, cls: type = EvalConfig) -> Any:
    """The EvalConfig (or subclass) that parsed `run` flags say, engine flags included; flags it would ignore, or
    that contradict each other, are a one-line error (EvalConfig.check_given)."""
    cfg = cls(**options_from_args(cls, ns))
    cfg = dataclasses.replace(cfg, engine_args={**cfg.engine_args, **engine_flag_values(ns, cfg.engine_name())})
    cfg.check_given(given_flags(ns))
    return cfg


def add_run_options(parser: argparse.ArgumentParser, cls: type = EvalConfig) -> None:
    """Every `reasoneval run` flag: the fields of `cls` in their groups."""
    add_options(parser, cls)


# What --greedy sets (over what else is given; giving one of these with it is an error): the options that choose
# how a problem's samples are drawn, with target_se (a sweep's job giving one overrides the defaults' others).
GREEDY = {"temperature": 0.0, "top_p": 1.0, "n": 1}

# The `reasoneval run` flags other commands share (same flag, default and help).
GRADING_OPTIONS = ("grading_workers", "grading_timeout")
# The judge of the rule-then-judge cascade (`run`, `score FILE`, `judge-check`).
JUDGE_OPTIONS = ("judge_model", "judge_base_url")
