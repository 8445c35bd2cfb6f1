"""Which llama.cpp CPU kernels the local engine uses on this machine, decided once and remembered.

llama.cpp repacks weights for the CPU's widest kernels (AMX tiles, AVX interleavings: "extra buffer types"). On some
Intel CPUs with AMX, llama-cpp-python's repacked kernels crash (SIGSEGV) at load, in the first decode or only later
while generating. Under `cpu_repack=auto` a crash with the repacked kernels (in the start-up self-test or while
generating) switches the engine to the plain kernels and is remembered here, so the next run on this machine starts
on the plain kernels at once: no crash, no self-test to repeat, one plain line instead of a crash report.

The cache is one JSON file (`$REASONEVAL_KERNEL_CACHE`, else `$XDG_CACHE_HOME/reasoneval/kernels.json`, else
`~/.cache/reasoneval/kernels.json`) with one entry per machine key: the CPU's model and flags, the machine
architecture and the llama-cpp-python version. A new llama.cpp or another CPU is another key, so it is tested
again. `reasoneval doctor` shows the entry and its detail; deleting the file (or `cpu_repack=on`) tests again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

from reasoneval.atomic import atomic_write_text
from reasoneval.engines.local.model import cpu_flags
from reasoneval.machine import cpu_model, user_cache_file

CACHE_ENV = "REASONEVAL_KERNEL_CACHE"
PLAIN = "plain"

# What the terminal says when the repacked kernels crashed: one plain line (the crash's detail goes to run.log,
# config.json's engine.cpu_repack_fallback and `reasoneval doctor`).
UNSTABLE = "llama.cpp's repacked {what} kernels are unstable on this CPU: using the plain kernels"


def cache_path() -> Path:
    return user_cache_file(CACHE_ENV, "kernels.json")


def _cpu_model() -> str:
    return cpu_model() or platform.processor() or "unknown CPU"


def llama_cpp_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("llama_cpp_python")
    except Exception:
        return None


def machine_key() -> str:
    """What the kernels' stability depends on: the CPU (model and flags), the architecture and llama.cpp's version."""
    parts = [platform.machine(), _cpu_model(), " ".join(sorted(cpu_flags())), llama_cpp_version() or "?"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def repacked_kind() -> str:
    """The name of the repacked kernels this CPU gets, for the one line the user reads."""
    flags = cpu_flags()
    if flags & {"amx_tile", "amx_int8", "amx_bf16"}:
        return "AMX"
    if "avx512f" in flags:
        return "AVX-512"
    return "CPU"


@dataclass(frozen=True)
class KernelVerdict:
    """A remembered decision: `kernels` is "plain" (the repacked ones crashed); `detail` is the crash as seen."""

    kernels: str
    reason: str
    detail: str
    recorded: str
    cpu: str
    llama_cpp_python: str | None


def _read_all(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered(path: Path | None = None) -> KernelVerdict | None:
    """This machine's remembered kernel decision, or None (never tested, another llama.cpp, an unreadable file)."""
    entry = _read_all(path or cache_path()).get(machine_key())
    if not isinstance(entry, dict):
        return None
    try:
        verdict = KernelVerdict(**{k: entry[k] for k in KernelVerdict.__dataclass_fields__})  # type: ignore[arg-type]
    except (KeyError, TypeError):
        return None
    return verdict if verdict.kernels == PLAIN else None


def remember_plain(reason: str, detail: str, path: Path | None = None) -> KernelVerdict:
    """Record that the repacked kernels crashed on this machine (best effort: an unwritable cache only means the next
    run tests again)."""
    path = path or cache_path()
    verdict = KernelVerdict(kernels=PLAIN, reason=reason, detail=detail,
                            recorded=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                            cpu=_cpu_model(), llama_cpp_python=llama_cpp_version())
    entries = _read_all(path)
    entries[machine_key()] = asdict(verdict)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass
    return verdict
