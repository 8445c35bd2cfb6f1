"""The `reasoneval run` command that generates what a run directory lacks, for the advice `report` and `score`
print when a command asked for samples the run does not have (they only read samples; issue 41.6)."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Mapping, Sequence

from reasoneval.records import SamplingParams, sampling_options_set
from reasoneval.results.schema import RunConfig, RunResult
from reasoneval.run.flags import flag_of


def rerun_command(result: RunResult, tasks: Sequence[str] | None = None) -> str:
    """`reasoneval run ...` with the run's model, engine or server, sampling, seed and prompt (the settings its run
    id hashes, so it resumes this run directory and generates only what is missing), the result's tasks, --limit
    and K."""
    return run_command(result.config, tasks or list(result.tasks), result.n, result.run_dir)


def run_command(cfg: RunConfig, tasks: Sequence[str], n: int, run_dir: Path) -> str:
    """`reasoneval run ...` with config `cfg`'s settings (rerun_command), these tasks and K = n, into run_dir's
    results folder."""
    s = cfg.settings
    args = ["reasoneval", "run", "--model", s.model]
    if cfg.engine == "openai" and cfg.base_url:
        args += ["--base-url", cfg.base_url]
    elif cfg.engine and cfg.engine != "openai":
        args += ["--engine", cfg.engine]
    if s.api:
        args += ["--api", s.api]
    args += ["--tasks", ",".join(tasks)]
    if cfg.limit is not None:  # the run's problems are each task's first N
        args += ["--limit", str(max(len(cfg.problem_keys.get(t) or ()) for t in tasks))]
    args += ["--n", str(n)]
    if s.seed is not None:
        args += ["--seed", str(s.seed)]
    if s.sampling is not None:  # every option away from its default (a new sampling option with no edit here)
        flags = {f.name: flag_of(f) for f in dataclasses.fields(SamplingParams)}
        for name, value in sampling_options_set(s.sampling, changed=True).items():
            if isinstance(value, (tuple, list)):  # a repeatable flag
                args += [a for v in value for a in (flags[name], str(v))]
            elif isinstance(value, Mapping):
                args += [flags[name], json.dumps(dict(value), ensure_ascii=False)]
            else:
                args += [flags[name], f"{value:g}" if isinstance(value, float) else str(value)]
    if s.system_prompt:
        args += ["--system-prompt", s.system_prompt]
    style = s.prompt_style or {}
    if style.get("style"):
        args += ["--prompt-style", str(style["style"])]
    if style.get("num_fewshot") is not None:
        args += ["--num-fewshot", str(style["num_fewshot"])]
    args += ["--output-dir", str(Path(run_dir).parent.parent)]
    return shlex.join(args)


def missing_advice(result: RunResult) -> str:
    """What to do about a `report` or `score` of a run directory that asked for samples it does not have."""
    return (f"`report` and `score` only read the samples a run has; generate the missing ones with this run's "
            f"settings (add the --data-dir, --prompt-template or engine options you gave it), then run this command again: "
            f"{rerun_command(result)}")
