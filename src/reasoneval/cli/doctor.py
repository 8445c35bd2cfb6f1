"""`reasoneval doctor`: what the code sandbox does on this machine (its mode, what a program can reach, which
memory bound is in force, how it dies with the harness), as the `code` scorer would use it; and which llama.cpp CPU
kernels the embedded model uses here (engines/local/kernels.py: a crash of the repacked ones, remembered)."""

from __future__ import annotations

import argparse
import json
import os


def add_doctor_parser(p: argparse.ArgumentParser) -> None:
    from reasoneval.scoring.programs.sandbox.run import MODES

    p.epilog = "example:\n  reasoneval doctor\n  reasoneval doctor --sandbox rlimits"
    p.add_argument("--sandbox", choices=MODES, default=os.environ.get("REASONEVAL_SANDBOX", "auto").strip() or "auto",
                   help="the mode to check (default: $REASONEVAL_SANDBOX, else auto, as the code scorer picks)")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")
    p.set_defaults(func=_cmd_doctor)


def _cmd_doctor(a: argparse.Namespace) -> int:
    from reasoneval.scoring.programs.sandbox import get_sandbox

    facts = {**get_sandbox(a.sandbox).describe(), **_cpp_compiler(), **_local_kernels()}
    if a.json:
        print(json.dumps(facts, indent=2))
    else:
        width = max(len(k) for k in facts)
        for key, value in facts.items():
            print(f"{key + ':':{width + 1}} {value}")
    return 0


def _cpp_compiler() -> dict[str, object]:
    """Whether the codeforces judge can compile C++ (scoring/programs/codeforces/judge.py)."""
    from reasoneval.scoring.programs.codeforces.judge import GXX

    return {"c++ compiler": f"{GXX} (g++ -O2 -std=c++17 for the codeforces judge)" if os.path.isfile(GXX) else
            f"none: {GXX} is missing, C++ programs cannot be judged (apt-get install g++)"}


def _local_kernels() -> dict[str, object]:
    from reasoneval.engines.local import kernels

    known = kernels.remembered()
    if known is None:
        return {"local_kernels": f"repacked ({kernels.repacked_kind()}) where llama.cpp has them: none has crashed on "
                                 "this machine with this llama-cpp-python (cpu_repack=auto switches and remembers if "
                                 "one does)",
                "local_kernels_cache": str(kernels.cache_path())}
    return {"local_kernels": f"plain since {known.recorded}: {known.reason} (llama-cpp-python {known.llama_cpp_python})",
            "local_kernels_detail": known.detail,
            "local_kernels_cache": f"{kernels.cache_path()} (delete it, or run with --engine-arg cpu_repack=on, to test "
                                   "the repacked kernels again)"}
