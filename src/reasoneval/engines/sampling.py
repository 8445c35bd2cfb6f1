"""Sampling parameters in each engine family's form, in one place.

`SamplingParams` (records.py) follows OpenAI semantics: unset top_k / min_p mean "off". Its fields declared
`sent` (records.sampling_option) are request fields under their own names in every engine family; an unset one
(None, or an empty sequence) is never sent, so the server's (or llama.cpp's "off") applies.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from reasoneval.records import EVERY_ENGINE, SENT, SamplingParams

# What each backend takes beyond the first options (temperature, top_p, top_k, min_p, max_tokens, stop: every backend
# takes those under these names), as a map from our name (a later SamplingParams field, or an --extra-body key) to
# the backend's own name for it, as lighteval's to_vllm_dict / to_sglang_dict. A key not in its backend's map is
# refused at start (engines.base.check_supported): these servers drop a request field they do not know.

# vLLM: keyword arguments of vllm.SamplingParams (the `vllm` engine), and the same fields of its OpenAI server's
# requests (`launch --server vllm`), which also takes the OpenAI request fields below.
VLLM_FIELDS: Mapping[str, str] = {k: k for k in (
    "repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens", "ignore_eos", "stop_token_ids",
    "skip_special_tokens", "include_stop_str_in_output")}
_OPENAI_REQUEST = ("logit_bias", "response_format")  # OpenAI's own request fields
VLLM_SERVER_FIELDS: Mapping[str, str] = {**VLLM_FIELDS, **{k: k for k in (*_OPENAI_REQUEST, "chat_template_kwargs")}}
# SGLang's OpenAI server (its protocol's request fields; no include_stop_str_in_output, its own no_stop_trim).
SGLANG_SERVER_FIELDS: Mapping[str, str] = {k: k for k in (
    "repetition_penalty", "presence_penalty", "frequency_penalty", "min_tokens", "ignore_eos", "stop_token_ids",
    "skip_special_tokens", "no_stop_trim", "regex", "json_schema", "ebnf", "chat_template_kwargs", *_OPENAI_REQUEST)}
# llama-cpp-python's server (llama_cpp.server.types): llama.cpp's repeat_penalty is our repetition_penalty; its
# request model discards a field it does not declare, keeping its own default.
LLAMACPP_SERVER_FIELDS: Mapping[str, str] = {
    "repetition_penalty": "repeat_penalty", "repeat_penalty": "repeat_penalty", "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty", "min_tokens": "min_tokens", "mirostat_mode": "mirostat_mode",
    "mirostat_tau": "mirostat_tau", "mirostat_eta": "mirostat_eta", "grammar": "grammar", "logit_bias": "logit_bias"}
# The embedded llama.cpp model (`local`): what its sampler reads by name (engines.local.decoder).
LLAMACPP_LOCAL_FIELDS: Mapping[str, str] = {k: k for k in ("repetition_penalty", "presence_penalty",
                                                           "frequency_penalty")}
# Kept for readers of the old name.
VLLM_EXTRA_KEYS = frozenset(VLLM_FIELDS)


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


def openai_fields(p: SamplingParams, seed: int, renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Request-body fields of an OpenAI-compatible server (top_k / min_p are vLLM / SGLang extensions accepted at
    the top level); extra_body is passed through verbatim, over them; `renamed`: the options the server spells
    otherwise (Capabilities.renamed), sent under its name."""
    out = {**sent_fields(p), "seed": seed, "n": 1, **p.extra_body}
    if renamed:
        out = {renamed.get(k, k): v for k, v in out.items()}
    return out


def vllm_fields(p: SamplingParams, seed: int, max_tokens: int) -> dict[str, Any]:
    """Keyword arguments of vllm.SamplingParams (extra_body keys are checked at start, see VLLM_EXTRA_KEYS)."""
    return {**sent_fields(p), "n": 1, "max_tokens": max_tokens, "seed": seed, **p.extra_body}


def llama_fields(p: SamplingParams) -> dict[str, Any]:
    """The embedded llama.cpp model's request parameters (engines.local.decoder reads them by name): the set
    options, with extra_body's keys (repetition_penalty, ...) over them."""
    return {**sent_fields(p), **p.extra_body}
