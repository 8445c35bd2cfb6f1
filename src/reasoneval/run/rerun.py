"""The `reasoneval run` command that generates what a run directory lacks, for the advice `report` and `score`
print when a command asked for samples the run does not have (they only read samples; issue 41.6)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

from reasoneval.records import SamplingParams
from reasoneval.results.schema import RunConfig, RunResult


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
    if s.sampling is not None:
        default = SamplingParams()
        for name in ("temperature", "top_p", "top_k", "min_p", "max_tokens"):
            value = getattr(s.sampling, name)
            if value is not None and value != getattr(default, name):
                args += [f"--{name.replace('_', '-')}", f"{value:g}" if isinstance(value, float) else str(value)]
        for stop in s.sampling.stop:
            args += ["--stop", stop]
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
