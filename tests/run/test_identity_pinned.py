"""Run ids and sweep fingerprints of existing runs never change: a table computed by the code as it was at dfcfac7
(before the sampling options were generated from SamplingParams' fields). A changed id would put a re-run of an old
run in a new directory; a changed fingerprint would run a finished sweep job again."""

import json
from typing import Any

import pytest

from reasoneval.fleet.jobs import Job
from reasoneval.records import SamplingParams
from reasoneval.results.identity import RunSettings
from reasoneval.run.flags import rename_old_keys
from reasoneval.run.options import EvalConfig

# (EvalConfig options, run id of model "m", sweep fingerprint)
PINNED: list[tuple[dict[str, Any], str, str]] = [
    ({}, '96fb32404eb2', 'd86adc6955eec004'),
    ({'temperature': 1.0}, '2e095c831158', '68fbda8293044054'),
    ({'top_p': 0.5}, 'd2793db42118', '60e473707585f747'),
    ({'top_k': 20}, '5dea2a61e431', '28a56b9ed18bb7e6'),
    ({'min_p': 0.05}, 'ae99d0ce2ed5', 'fb9f76efa554a756'),
    ({'max_tokens': 1024}, 'c9ff32ce6146', '4b0fef071cddeedd'),
    ({'stop': ['</answer>']}, '7d7ee5eb8fad', '9e64aead8be1ffa1'),
    ({'extra_body': {'repetition_penalty': 1.05}}, 'b5f333644b34', '1bf3987984e5e8ca'),
    ({'greedy': True}, 'eeeb864f7c9a', '5dbac08dc3e2017e'),
    ({'seed': 7}, 'e778733a750b', '318ffacfef792938'),
    ({'api': 'completions'}, '150d67d6051a', 'ed2b37ce725a5448'),
    ({'system_prompt': 'be brief'}, '7fa2f4061d8a', '1ead18405279785b'),
    ({'num_fewshot': 4}, '64ba0819a208', 'a8ee9ec6012bd4ad'),
    ({'prompt_style': 'minerva', 'style_stop': False}, '73ff724786fa', '9ea0c68d86e75f52'),
    ({'fewshot_seed': 3, 'num_fewshot': 8}, 'e6b73b47dc28', '1ed05204762b4d23'),
    ({'scorer': 'math', 'data': 'd.jsonl'}, '96fb32404eb2', '6d3a3052f72b604d'),
    ({'problem_key': 'question', 'data': 'd.jsonl'}, '96fb32404eb2', '3e6c60fcc45b5590'),
    # Computed at f27dcbe, before the --data column options became problem_field / answer_field / id_field:
    # a jobs file under any of their old names keeps its fingerprint.
    ({'question_key': 'question', 'data': 'd.jsonl'}, '96fb32404eb2', '3e6c60fcc45b5590'),
    ({'problem_field': 'question', 'data': 'd.jsonl'}, '96fb32404eb2', '3e6c60fcc45b5590'),
    ({'answer_key': 'gt', 'data': 'd.jsonl'}, '96fb32404eb2', 'cd6269264af4128f'),
    ({'id_key': 'qid', 'data': 'd.jsonl'}, '96fb32404eb2', '3b9436dac64b91c1'),
    ({'problem_key': 'q', 'answer_key': 'a', 'id_key': 'i', 'data': 'd.jsonl'}, '96fb32404eb2', '839fb7b8ea142607'),
    ({'problem_field': 'q', 'answer_field': 'a', 'id_field': 'i', 'data': 'd.jsonl'}, '96fb32404eb2',
     '839fb7b8ea142607'),
    ({'battery': 'lmeval-base'}, '96fb32404eb2', '2bd3d52cd228a750'),
    ({'n': 4, 'tasks': ['aime24'], 'limit': 10}, '96fb32404eb2', '13ef918663c84cd4'),
    ({'engine': 'vllm', 'engine_args': {'max_model_len': 4096}}, '96fb32404eb2', '09166ad15fe59759'),
    ({'log_to': ['tensorboard'], 'log_args': {'tensorboard_dir': 'tb'}}, '96fb32404eb2', 'd86adc6955eec004'),
    ({'target_se': 1.0, 'max_n': 64}, '96fb32404eb2', 'f16ab791b9fc18cc'),
]


def pinned_config(options: dict[str, Any]) -> EvalConfig:
    """The configuration a jobs file with these keys gives (an old key name read as its field)."""
    return EvalConfig(output_dir="/r", progress=False, print_table=False,
                      **rename_old_keys(EvalConfig, options, "jobs.yaml"))


def run_id_of(cfg: EvalConfig, model: str = "m") -> str:
    """The run id generate_run gives `cfg` with an engine serving `model` (run.pipeline.run_settings)."""
    from reasoneval.run.generation import run_settings

    return run_settings(cfg, model=model, model_identity=None).run_id


@pytest.mark.parametrize(("options", "run_id", "fingerprint"), PINNED, ids=[json.dumps(c) for c, _, _ in PINNED])
def test_run_ids_and_sweep_fingerprints_of_existing_runs_are_unchanged(options: dict[str, Any], run_id: str,
                                                                        fingerprint: str) -> None:
    cfg = pinned_config(options)
    assert run_id_of(cfg) == run_id
    assert Job(name="j", config=cfg).fingerprint() == fingerprint


def test_config_json_keeps_the_sampling_it_always_wrote() -> None:
    # config.json's settings.sampling, key for key and in this order: what run ids of existing runs hashed.
    assert json.dumps(SamplingParams().to_json_dict()) == (
        '{"temperature": 0.6, "top_p": 0.95, "top_k": null, "min_p": null, "max_tokens": 32768, "stop": [], '
        '"extra_body": {}}')
    settings = RunSettings.from_json_dict({"model": "m", "api": "chat", "sampling": {"temperature": 0.6}, "seed": 42})
    assert settings.sampling == SamplingParams()
