"""Sampling parameters in each engine family's form, in one place.

`SamplingParams` (records.py) follows OpenAI semantics: unset top_k / min_p mean "off". Its fields declared
`sent` (records.sampling_option) are request fields under their own names in every engine family; an unset one
(None, or an empty sequence) is never sent, so the server's (or llama.cpp's "off") applies.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from reasoneval.records import EVERY_ENGINE, SENT, SamplingParams

# extra_body keys that map onto vLLM SamplingParams fields of the same name.
VLLM_EXTRA_KEYS = frozenset({"repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens",
                             "ignore_eos", "stop_token_ids", "skip_special_tokens", "include_stop_str_in_output"})


def sent_fields(p: SamplingParams) -> dict[str, Any]:
    """The set sampling options as request fields (tuples as lists), in declaration order."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(p):
        value = getattr(p, f.name)
        if not f.metadata.get(SENT) or value is None or (isinstance(value, (tuple, list, Mapping)) and not value):
            continue
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def engine_specific(p: SamplingParams) -> set[str]:
    """The set options that not every engine takes (added after the first ones): an engine's Capabilities name
    the ones it takes, with its extra_body keys."""
    every = {f.name for f in dataclasses.fields(p) if f.metadata.get(EVERY_ENGINE)}
    return set(sent_fields(p)) - every


def openai_fields(p: SamplingParams, seed: int) -> dict[str, Any]:
    """Request-body fields of an OpenAI-compatible server (top_k / min_p are vLLM / SGLang extensions accepted at
    the top level); extra_body is passed through verbatim, over them."""
    return {**sent_fields(p), "seed": seed, "n": 1, **p.extra_body}


def vllm_fields(p: SamplingParams, seed: int, max_tokens: int) -> dict[str, Any]:
    """Keyword arguments of vllm.SamplingParams (extra_body keys are checked at start, see VLLM_EXTRA_KEYS)."""
    return {**sent_fields(p), "n": 1, "max_tokens": max_tokens, "seed": seed, **p.extra_body}


def llama_fields(p: SamplingParams) -> dict[str, Any]:
    """The embedded llama.cpp model's request parameters (engines.local.decoder reads them by name): the set
    options, with extra_body's keys (repetition_penalty, ...) over them."""
    return {**sent_fields(p), **p.extra_body}
