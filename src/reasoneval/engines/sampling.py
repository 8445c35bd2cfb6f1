"""Sampling parameters in each engine family's form, in one place.

`SamplingParams` (records.py) follows OpenAI semantics: unset top_k / min_p mean "off".
"""

from __future__ import annotations

from typing import Any

from reasoneval.records import SamplingParams

# extra_body keys that map onto vLLM SamplingParams fields of the same name.
VLLM_EXTRA_KEYS = frozenset({"repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens",
                             "ignore_eos", "stop_token_ids", "skip_special_tokens", "include_stop_str_in_output"})


def openai_fields(p: SamplingParams, seed: int) -> dict[str, Any]:
    """Request-body fields of an OpenAI-compatible server; extra_body is passed through verbatim."""
    body: dict[str, Any] = {"temperature": p.temperature, "top_p": p.top_p, "max_tokens": p.max_tokens,
                            "seed": seed, "n": 1}
    # top_k / min_p are vLLM / SGLang extensions accepted at the top level.
    if p.top_k is not None:
        body["top_k"] = p.top_k
    if p.min_p is not None:
        body["min_p"] = p.min_p
    if p.stop:
        body["stop"] = list(p.stop)
    body.update(p.extra_body)
    return body


def vllm_fields(p: SamplingParams, seed: int, max_tokens: int) -> dict[str, Any]:
    """Keyword arguments of vllm.SamplingParams (extra_body keys are checked at start, see VLLM_EXTRA_KEYS)."""
    kwargs: dict[str, Any] = {"n": 1, "temperature": p.temperature, "top_p": p.top_p, "max_tokens": max_tokens,
                              "stop": list(p.stop) or None, "seed": seed}
    if p.top_k is not None:
        kwargs["top_k"] = p.top_k
    if p.min_p is not None:
        kwargs["min_p"] = p.min_p
    kwargs.update(p.extra_body)
    return kwargs
