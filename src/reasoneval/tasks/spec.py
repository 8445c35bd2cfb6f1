"""What a task is: its data source and the settings grading needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from reasoneval.records import Problem
from reasoneval.scoring.base import TaskScoring

# A Hub row (the source's own columns) -> a uniform row without `id` (ids are assigned from
# the row's position in the source, `<task>-<n>`), or None to skip the row.
RowMapper = Callable[[Mapping[str, Any]], "dict[str, Any] | None"]
# (task name, "file:line", source row, default id) -> Problem, or None to skip the row: for tasks whose rows keep
# their source's own schema (code, instruction following) instead of the uniform one.
RowToProblem = Callable[[str, str, Mapping[str, Any], str], "Problem | None"]
# (problems, --task-arg options) -> (the problems kept, the options as recorded in config.json): a task's options
# (LiveCodeBench's release and date window).
TaskOptions = Callable[[list[Problem], Mapping[str, str]], "tuple[list[Problem], dict[str, str]]"]
# (problems as loaded, --task-arg options) -> problems the options leave out, per reason (Codeforces' incomplete tests)
LeftOut = Callable[[list[Problem], Mapping[str, str]], "dict[str, int]"]
# problems -> how many each judging method grades (Codeforces: plain text compare, checkers, interactive)
Judging = Callable[[Sequence[Problem]], "dict[str, int]"]


@dataclass(frozen=True)
class HubSource:
    """Where a benchmark lives on the Hugging Face Hub and how its columns map to our schema."""

    dataset_id: str
    split: str
    map_row: RowMapper
    config: str | None = None
    # Gated datasets need the user to accept the terms on the Hub and a token (HF_TOKEN).
    gated: bool = False
    # Several configs read in this order and concatenated (EleutherAI/hendrycks_math: one per subject).
    configs: tuple[str, ...] = ()

    def describe(self) -> str:
        cfg = f" ({self.config})" if self.config else (f" ({'+'.join(self.configs)})" if self.configs else "")
        return f"hf:{self.dataset_id}{cfg} split={self.split}"


@dataclass(frozen=True)
class PackageFile:
    """A data file shipped inside a Python package: a plugin's own rows, in any format `--data` reads (JSONL, JSON,
    Parquet, CSV), uniform rows unless the task has `row_to_problem`. `package` is a package or a module (then the
    package holding it: `PackageFile(__name__, "rows.jsonl")` is the file beside the module declaring the task);
    `path` is relative to that package."""

    package: str
    path: str

    def resolved_package(self) -> str:
        """The package the path is relative to (importing it: a missing one is a one-line error)."""
        import importlib

        from reasoneval.errors import UserError

        try:
            module = importlib.import_module(self.package)
        except ImportError as e:
            raise UserError(f"the data file {self.path} of package {self.package} cannot be read: {self.package} "
                            f"cannot be imported ({e}); install the package that ships it") from None
        return self.package if hasattr(module, "__path__") else str(module.__package__ or "")

    def describe(self) -> str:
        """How config.json records the source: `package:<package>/<path>`."""
        return f"package:{self.resolved_package()}/{self.path}"


# The prompt style a task gets when its TaskSpec names none, by its scorer: the math scorer reads the answer the
# `boxed` style asks for. A task scored by any other scorer names its prompt style (a contest task left without one
# would be asked for a \boxed{} answer its scorer cannot read).
DEFAULT_PROMPTS = {"math": "boxed"}


@dataclass(frozen=True)
class TaskSpec:
    """A registered benchmark (or a user's data set).

    scoring: how responses are scored: a registered scorer and its settings (`math` with an
      optional `rel_tol`, `choice` for a letter answer; see reasoneval.scoring).
    prompt: the registered prompt style (reasoneval.prompts.PROMPTS) the task is asked with. Left out, a task
      scored by a scorer with a default prompt (DEFAULT_PROMPTS: math's `boxed`) gets that; any other task must
      name one (tasks.registry.declaration_errors: an error when the task is registered).
    fewshot: the few-shot style (a PROMPTS entry with exemplars) used when --num-fewshot is given
      without --prompt-style; None (the default): the task has none, and --num-fewshot without a
      --prompt-style is a one-line error (the math tasks name "minerva": math exemplars are theirs only).
    size: the expected number of problems (the source's row count) for listings before the
      data is loaded; the loaded count can differ (other copies of a benchmark differ).
    generate: for tasks generated in code (no file, no download): returns uniform rows.
    origin: where the loaded problems came from (set by `load_task`, e.g. "data_dir:/x/aime24.jsonl").
    data_sha256: the sha256 of the file the problems were read from (set by `load_task` for a data dir's file,
      the cache's or a fresh download's); `source` (config.json's datasets[task].source) ends with it.
    row_to_problem: rows in the source's own schema -> Problems (code and IFEval tasks); None: the uniform schema.
    lmeval_styles: the prompt styles under which lm-eval defines this task (gsm8k's few-shot styles, MATH
      with Minerva's prompt): the lm-eval columns (scoring.extra) are reported by default only with these,
      elsewhere on request (--lmeval-metrics).
    data_file: a data file shipped in the task's own package (PackageFile), read like `--data`; config.json
      records its source as `package:<package>/<path>` (and the problems' hash).
    version: the version of the task's definition, recorded per task in config.json (`datasets[task]
      ["version"]`). Bump it (to "2", ...) when a change to the task alters what a run measures on the same
      data: how rows become problems (answer normalisation, choice shuffling, filters), its prompt style or
      its scoring. A new data file is not a new version: config.json records the problems' hash beside it.
      Runs written before tasks had versions read as None (their definition is version "1").
    data_files: other names a data dir's file may have (`livecodebench_public` for livecodebench), tried after
      `<task>.jsonl`.
    options: what `--task-arg KEY=VALUE` does for this task (None: the task takes none); `options_given` the
      options it was loaded with, as recorded in config.json (`datasets[task].options`).
    scoring_options: options that are also the scorer's settings of that name ("true"/"false" as booleans): the
      contest tasks' all_tests.
    left_out_of, judging: what a figure covers, recorded in config.json (`datasets[task].left_out`, `.judged_by`):
      the problems the options leave out per reason (`left_out` the counts load_task found), and the problems
      each judging method grades.
    """

    name: str
    description: str
    scoring: TaskScoring = field(default_factory=TaskScoring)
    prompt: str = ""  # "": left out (DEFAULT_PROMPTS fills it in where the scorer has a default)
    fewshot: str | None = None
    hub: HubSource | None = None
    size: int | None = None
    generate: Callable[[], list[dict[str, Any]]] | None = None
    origin: str | None = None
    data_sha256: str | None = None
    row_to_problem: RowToProblem | None = None
    lmeval_styles: tuple[str, ...] = ()
    version: str = "1"
    data_files: tuple[str, ...] = ()
    options: TaskOptions | None = None
    options_given: tuple[tuple[str, str], ...] = ()
    scoring_options: tuple[str, ...] = ()
    data_file: PackageFile | None = None
    left_out_of: LeftOut | None = None
    left_out: tuple[tuple[str, int], ...] = ()
    judging: Judging | None = None

    def judged_by(self, problems: Sequence[Problem]) -> dict[str, int]:
        return self.judging(problems) if self.judging is not None else {}

    def __post_init__(self) -> None:
        if not self.prompt and self.scoring.scorer in DEFAULT_PROMPTS:  # frozen: set as the constructor does
            object.__setattr__(self, "prompt", DEFAULT_PROMPTS[self.scoring.scorer])

    @property
    def source(self) -> str:
        if self.generate is not None:
            return str(getattr(self.generate, "origin", "generated"))  # e.g. HumanEval: an installed package
        if self.data_file is not None:
            return self.data_file.describe()
        digest = f" sha256:{self.data_sha256}" if self.data_sha256 else ""
        if self.origin is not None and self.origin.startswith("data_dir:"):  # the file read, not the Hub's copy
            return self.origin + digest
        if self.hub is not None:
            via = f" via {self.origin}" if self.origin is not None and self.origin.startswith("cache:") else ""
            return self.hub.describe() + via + digest
        return self.origin or "user data"
