import dataclasses
from pathlib import Path

from reasoneval.records import SamplingParams
from reasoneval.results.identity import RunSettings, model_slug, run_dir_for, sample_seed


def settings(**kw: object) -> RunSettings:
    base = dict(model="m", model_identity=None, api="chat", system_prompt=None, prompt_template=None,
                sampling=SamplingParams(), seed=42)
    base.update(kw)
    return RunSettings(**base)  # type: ignore[arg-type]


def test_run_id_changes_with_output_affecting_settings_only() -> None:
    a = settings()
    assert a.run_id == settings().run_id
    assert len(a.run_id) == 12
    for changed in (settings(model="m2"), settings(model_identity="/ckpt/step-200"), settings(api="completions"),
                    settings(system_prompt="be brief"), settings(prompt_template="{problem}"), settings(seed=1),
                    settings(sampling=SamplingParams(temperature=1.0)),
                    settings(sampling=SamplingParams(max_tokens=100)),
                    settings(sampling=SamplingParams(extra_body={"repetition_penalty": 1.1}))):
        assert changed.run_id != a.run_id
    # K, concurrency, URL, tasks, limit are not fields of RunSettings at all
    names = {f.name for f in dataclasses.fields(RunSettings)}
    assert not names & {"n", "concurrency", "base_url", "tasks", "limit", "engine"}


def test_run_dir_layout() -> None:
    s = settings(model="Qwen/QwQ-32B")
    assert run_dir_for(Path("results"), s) == Path("results") / "Qwen--QwQ-32B" / s.run_id
    assert model_slug("/models/my ckpt/") == "models--my_ckpt"


def test_sample_seed_is_stable_distinct_and_in_range() -> None:
    seeds = {sample_seed(42, "aime24", "abc", j) for j in range(1024)}
    assert len(seeds) == 1024
    assert all(0 <= s <= 2**31 - 1 for s in seeds)
    assert sample_seed(42, "aime24", "abc", 3) == sample_seed(42, "aime24", "abc", 3)
    assert sample_seed(42, "aime24", "abc", 3) != sample_seed(43, "aime24", "abc", 3)
    assert sample_seed(42, "aime24", "abc", 3) != sample_seed(42, "aime25", "abc", 3)
    # a fixed value guards against accidental changes of the derivation (which would break resume)
    assert sample_seed(42, "t", "k", 0) == 1870061368
