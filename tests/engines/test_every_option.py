"""Every built-in engine x every sampling option: the option reaches what samples (the request the server receives,
under the server's own name for it; vLLM's SamplingParams; the embedded model's sampler), or the run refuses it at
start with one line naming the option, the engine and what to do. There is no third outcome (an option accepted and
dropped).

The options: every field of SamplingParams set away from its default, and every --extra-body key some backend takes
(engines.sampling's maps), and one no backend takes. The servers: the loopback OpenAI server, in process for the
`openai` engine and started by the `launch` engine as its server (once per --server, recording what it receives).
vLLM cannot run here: its keyword arguments are checked on the engine's call (and against vLLM's own signature by the
`vllm`-marked test); the embedded llama.cpp model's sampler is checked on the calls it makes to llama.cpp.
"""

# own-environment: vllm (its CPU build, installed by scripts/ci_vllm.sh for the `vllm`-marked tests)
from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from reasoneval.engines import capabilities, check_supported
from reasoneval.engines import sampling as S
from reasoneval.engines.launch import engine as launch
from reasoneval.engines.options import SERVERS
from reasoneval.errors import UserError
from reasoneval.records import CLI, EVERY_ENGINE, SENT, Request, SamplingParams
from tests.engines._options import make_engine
from tests.fixtures.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]

# A value for every --extra-body key some backend takes (its type as the backends declare it).
EXTRA_VALUES: dict[str, Any] = {
    "repetition_penalty": 1.3, "repeat_penalty": 1.2, "presence_penalty": 0.4, "frequency_penalty": 0.3,
    "min_tokens": 2, "ignore_eos": True, "stop_token_ids": [5], "skip_special_tokens": False,
    "include_stop_str_in_output": True, "logit_bias": {"5": -1.0}, "response_format": {"type": "text"},
    "chat_template_kwargs": {"enable_thinking": False}, "no_stop_trim": True, "regex": "a+",
    "json_schema": '{"type": "string"}', "ebnf": 'root ::= "a"', "grammar": 'root ::= "a"', "mirostat_mode": 2,
    "mirostat_tau": 4.0, "mirostat_eta": 0.2, "made_up_key": 1}
BACKEND_MAPS = (S.VLLM_FIELDS, S.VLLM_SERVER_FIELDS, S.SGLANG_SERVER_FIELDS, S.LLAMACPP_SERVER_FIELDS,
                S.LLAMACPP_LOCAL_FIELDS)


def test_every_key_a_backend_takes_has_a_value_here() -> None:
    keys = set().union(*BACKEND_MAPS)
    assert keys <= set(EXTRA_VALUES) and "made_up_key" not in keys


# A value away from its default for each field, from how its flag parses (a new option needs no edit here); these
# first options get values of their own (a top_k of 7, a max_tokens of 9: small enough for every backend).
FIELD_VALUES: dict[str, Any] = {"temperature": 0.3, "top_p": 0.5, "top_k": 7, "min_p": 0.02, "max_tokens": 9,
                                "stop": ("ZZ",)}
BY_PARSE: dict[Any, Any] = {float: 0.25, int: 3}


def field_value(f: dataclasses.Field[Any]) -> Any:
    if f.name in FIELD_VALUES:
        return FIELD_VALUES[f.name]
    cli = f.metadata[CLI]
    if cli.get("action") == "append":
        return ("ZZ",)
    assert cli.get("parse") in BY_PARSE, f"{f.name}: no test value for a sampling option parsed by {cli.get('parse')}"
    return BY_PARSE[cli["parse"]]


def every_engine_takes(name: str) -> bool:
    """Whether the option is one every engine takes (declared `in_first_run_ids`); any other is taken only where an
    engine's Capabilities name it."""
    fields = {f.name: f for f in dataclasses.fields(SamplingParams)}
    return name in fields and bool(fields[name].metadata[EVERY_ENGINE])


def options() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(SamplingParams):
        if not f.metadata[SENT]:
            continue  # extra_body: its keys below
        out[f.name] = {f.name: field_value(f)}
    for key, value in EXTRA_VALUES.items():
        out[f"extra_body.{key}"] = {"extra_body": {key: value}}
    return out


OPTIONS = options()


def sent_as(name: str) -> tuple[str, Any]:
    """(our name, the value) an option is set to."""
    if name.startswith("extra_body."):
        key = name.split(".", 1)[1]
        return key, EXTRA_VALUES[key]
    value = OPTIONS[name][name]
    return name, list(value) if isinstance(value, tuple) else value


def refusal(engine: str, args: dict[str, Any], params: SamplingParams) -> str | None:
    try:
        check_supported(engine, capabilities(engine, args), "chat", params)
    except UserError as e:
        return str(e)
    return None


def request(params: SamplingParams, seed: int) -> Request:
    return Request(task="t", problem_key="k", problem_id="p", index=0, seed=seed, params=params,
                   messages=({"role": "user", "content": "What is 2+2?"},))


def assert_refused(message: str, name: str, who: str) -> None:
    key = name.split(".", 1)[1] if name.startswith("extra_body.") else "--" + name.replace("_", "-")
    assert "\n" not in message and key in message and who in message, message
    assert "remove them" in message or "leave it unset" in message, message  # what to do


# ------------------------------------------------------------------------------ servers: openai, launch


@pytest.fixture
def loopback() -> Iterator[OpenAIServer]:
    with OpenAIServer(model="test-model", default="The answer is \\boxed{4}.") as server:
        yield server


def test_openai_engine_sends_every_option_to_the_server(loopback: OpenAIServer) -> None:
    async def go() -> None:
        engine = make_engine("openai", base_url=loopback.base_url, model="test-model")
        await engine.start()
        try:
            for i, kw in enumerate(OPTIONS.values()):
                await engine.generate(request(SamplingParams(**kw), seed=1000 + i))
        finally:
            await engine.close()

    for name, kw in OPTIONS.items():
        assert refusal("openai", {}, SamplingParams(**kw)) is None, name  # a server you started: any field
    asyncio.run(go())
    bodies = {r.seed: r.body for r in loopback.requests() if r.body and "messages" in r.body}
    for i, name in enumerate(OPTIONS):
        key, value = sent_as(name)
        assert bodies[1000 + i][key] == value, name


@pytest.mark.parametrize("server", SERVERS)
def test_launch_sends_each_option_under_its_servers_name_or_refuses_it(
        server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The launch engine's whole path (its server process, health wait, client), the server being the loopback one
    started as `launch` starts vLLM, SGLang or llama.cpp's, recording the requests it receives."""
    record = tmp_path / "received.jsonl"

    def plan(model: str | None, opts: launch.Options, port: int) -> launch.ServerPlan:
        return launch.ServerPlan(opts.server, (sys.executable, "-m", "tests.fixtures.openai_server", "--port",
                                               str(port), "--record", str(record)), port, ("/v1/models",))

    monkeypatch.setattr(launch, "build_plan", plan)
    monkeypatch.setattr(launch, "_missing_server_hint", lambda server: None)
    monkeypatch.chdir(ROOT)
    args = {"server": server}
    outcome = {name: refusal("launch", args, SamplingParams(**kw)) for name, kw in OPTIONS.items()}
    names = S.SGLANG_SERVER_FIELDS if server == "sglang" else \
        S.VLLM_SERVER_FIELDS if server == "vllm" else S.LLAMACPP_SERVER_FIELDS

    async def go() -> None:
        engine = make_engine("launch", server=server, model="m", log_dir=str(tmp_path / "logs"), startup_timeout=60,
                             cpu_repack="on")
        await engine.start()
        try:
            for i, (name, kw) in enumerate(OPTIONS.items()):
                if outcome[name] is None:
                    await engine.generate(request(SamplingParams(**kw), seed=2000 + i))
        finally:
            await engine.close()

    asyncio.run(go())
    bodies = {line["body"].get("seed"): line["body"] for line in map(json.loads, record.read_text().splitlines())}
    for i, name in enumerate(OPTIONS):
        key, value = sent_as(name)
        if outcome[name] is not None:
            assert key not in names, (name, outcome[name])
            assert_refused(outcome[name], name, f"launch engine (--server {server})")
            assert 2000 + i not in bodies
            continue
        body = bodies[2000 + i]
        theirs = names.get(key, key)  # a first option: under its own name everywhere
        assert body[theirs] == value, (name, theirs, body)
        if theirs != key:
            assert key not in body, (name, body)  # only under the server's name
    if server == "llamacpp":  # the case that was dropped: llama.cpp's server reads repeat_penalty
        assert bodies[2000 + list(OPTIONS).index("extra_body.repetition_penalty")]["repeat_penalty"] == 1.3
    else:
        assert outcome["extra_body.repeat_penalty"] is not None


# ------------------------------------------------------------------------------ in-process: vllm, local, echo


class _Recorded:
    """Stands in for vllm.SamplingParams (vLLM cannot run here): the keyword arguments the engine passes."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


def test_vllm_engine_passes_each_option_to_vllms_sampling_params_or_refuses_it() -> None:
    from reasoneval.engines.vllm import VLLMEngine

    engine = VLLMEngine.__new__(VLLMEngine)
    engine.max_model_len, engine._sampling_cls, engine._final_only = None, _Recorded, "final"
    for name, kw in OPTIONS.items():
        key, value = sent_as(name)
        message = refusal("vllm", {}, SamplingParams(**kw))
        if message is not None:
            assert key not in S.VLLM_FIELDS
            assert_refused(message, name, "vllm engine")
            continue
        got = engine.sampling_params(request(SamplingParams(**kw), seed=3), prompt_len=5).kwargs
        assert got[key] == value, (name, got)


@pytest.mark.vllm
def test_vllm_takes_every_field_of_its_map() -> None:
    """vLLM's own SamplingParams (the CPU build in CI): every name the engine sends is one of its arguments, and a
    request with all of them set is accepted."""
    import inspect

    import vllm

    # vLLM's SamplingParams is a msgspec Struct in recent versions (its fields), a class with keywords before.
    accepted = set(getattr(vllm.SamplingParams, "__struct_fields__", ()) or
                   inspect.signature(vllm.SamplingParams).parameters)
    first = {"temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed", "n"}
    assert set(S.VLLM_FIELDS.values()) | first <= accepted
    p = SamplingParams(**{k: v for kw in OPTIONS.values() for k, v in kw.items() if k != "extra_body"},
                       extra_body={k: EXTRA_VALUES[k] for k in S.VLLM_FIELDS})
    vllm.SamplingParams(**S.vllm_fields(p, 1, 16))


class _LlamaC:
    """Stands in for llama.cpp's sampler API in the decoder's `_sampler` (which builds a chain from these calls):
    records each call's arguments, so the test sees what llama.cpp is handed for every option."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple[Any, ...]] = {}

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any) -> str:
            self.calls[name] = args
            return name
        return call


LOCAL_READS: dict[str, Callable[[dict[str, tuple[Any, ...]]], Any]] = {
    # option -> where llama.cpp's sampler chain receives it
    "temperature": lambda c: c["llama_sampler_init_temp"][0],
    "top_p": lambda c: c["llama_sampler_init_top_p"][0],
    "top_k": lambda c: c["llama_sampler_init_top_k"][0],
    "min_p": lambda c: c["llama_sampler_init_min_p"][0],
    "repetition_penalty": lambda c: c["llama_sampler_init_penalties"][2],
    "frequency_penalty": lambda c: c["llama_sampler_init_penalties"][3],
    "presence_penalty": lambda c: c["llama_sampler_init_penalties"][4],
}


def test_local_engine_hands_each_option_to_llamacpps_sampler_or_refuses_it() -> None:
    from reasoneval.engines.local.decoder import Decoder

    decoder = Decoder.__new__(Decoder)
    decoder.n_vocab = 100
    for name, kw in OPTIONS.items():
        key, value = sent_as(name)
        params = SamplingParams(**kw)
        message = refusal("local", {}, params)
        if message is not None:
            assert key not in S.LLAMACPP_LOCAL_FIELDS
            assert_refused(message, name, "local engine")
            continue
        fields = S.llama_fields(params)  # what the engine sends its worker (engines.local.engine)
        assert fields[key] == value
        if key in ("max_tokens", "stop"):  # read by the decoding loop, not the sampler
            continue
        decoder.C = c = _LlamaC()
        decoder._sampler(fields, seed=1)
        assert LOCAL_READS[key](c.calls) == pytest.approx(value), (name, c.calls)


def test_echo_never_samples_so_it_refuses_every_option_beyond_the_first() -> None:
    for name, kw in OPTIONS.items():
        message = refusal("echo", {}, SamplingParams(**kw))
        if every_engine_takes(name):
            assert message is None, name  # the first options: every engine takes them (echo answers a fixed text)
        else:
            assert message is not None, name
            assert_refused(message, name, "echo engine")


# ------------------------------------------------------------------------------ ray: its inner engine decides


@pytest.mark.parametrize("inner", ["auto", "local", "openai", "echo"])
def test_ray_takes_what_its_inner_engine_takes(inner: str) -> None:
    args = {} if inner == "auto" else {"inner": inner}
    for name, kw in OPTIONS.items():
        params = SamplingParams(**kw)
        message = refusal("ray", args, params)
        inners = ["vllm", "local"] if inner == "auto" else [inner]
        refused_inside = [e for e in inners if refusal(e, {}, params) is not None]
        assert (message is not None) == bool(refused_inside), (inner, name, message)
        if message is not None:
            assert_refused(message, name, f"ray engine (inner={inner})")
