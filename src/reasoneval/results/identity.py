"""Run identity: which settings change a run's outputs, the run id, the run directory, seeds."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reasoneval.records import SamplingParams
from reasoneval.serial import JsonRecord, json_field


@dataclass(frozen=True)
class RunSettings(JsonRecord):
    """Everything that changes what the model outputs, and nothing else: config.json's `settings`, and what
    the run id hashes (its JSON form, `to_json_dict()`).

    Not in it: tasks (units inside a run), --limit, K, concurrency, URL, engine kind.
    A run imported from a file of generations (`score`), and a run written by 0.1.0 before it recorded them,
    know only the model: api, sampling and seed are None then, and not written.
    """

    model: str
    # The server's own identity of the model (vLLM's /v1/models `root`, a GGUF file's hash).
    model_identity: str | None = None
    api: str | None = json_field(default=None, omit_none=True)
    system_prompt: str | None = None
    prompt_template: str | None = None
    sampling: SamplingParams | None = json_field(default=None, omit_none=True)
    seed: int | None = json_field(default=None, omit_none=True)
    # The few-shot choice (PromptConfig.identity(): --prompt-style, --num-fewshot, the exemplars' hash);
    # None when none was made, and then not in the id, so runs made before it keep their ids.
    prompt_style: Mapping[str, Any] | None = json_field(default=None, omit_none=True)

    @property
    def run_id(self) -> str:
        blob = json.dumps(self.to_json_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def model_slug(model: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/").replace("/", "--"))
    return slug.strip("._") or "model"


def run_dir_for(output_dir: Path, settings: RunSettings) -> Path:
    return Path(output_dir) / model_slug(settings.model) / settings.run_id


def sample_seed(run_seed: int, task: str, problem_key: str, index: int) -> int:
    """Seed of sample `index` of a problem: stable across runs, processes and K."""
    digest = hashlib.sha256(f"{run_seed}\x1f{task}\x1f{problem_key}\x1f{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (2**31)
