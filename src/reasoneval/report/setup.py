"""What `compare` says before its numbers: whether the runs were made with one setup (their fingerprints,
results/fingerprint.py), and what differs where they were not."""

from __future__ import annotations

from typing import Any, Sequence

from reasoneval.results import fingerprint
from reasoneval.results.schema import RunResult

MAX_SHOWN = 12
# What a comparison of two models or checkpoints is about: differences here are the point, not a changed setup.
MODEL_KEYS = frozenset({"model", "model_identity", "weights_sha256", "hub_revision", "server_model"})


def setup_comparison(results: Sequence[RunResult]) -> list[dict[str, Any]]:
    """For each run after the first: its fingerprint id, whether it shares the first's setup (True, False, or None:
    cannot tell), and the differing keys as (key, A's value, its value)."""
    first = fingerprint.of_config(results[0].config)
    out = []
    for r in results[1:]:
        fp = fingerprint.of_config(r.config)
        out.append({"run_id": r.run_id, "fingerprint": fingerprint.fingerprint_id(fp),
                    "same_setup": fingerprint.same(first, fp),
                    "partial": bool(first.get("partial") or fp.get("partial")),
                    "differences": [[k, a, b] for k, a, b in fingerprint.differences(first, fp)]})
    return out


def setup_lines(results: Sequence[RunResult], letters: Sequence[str]) -> list[str]:
    """One line per run after the first (and one line per differing key, up to MAX_SHOWN): the warning `compare`
    prints before its table."""
    first = fingerprint.fingerprint_id(fingerprint.of_config(results[0].config))
    lines = []
    for letter, entry in zip(letters[1:], setup_comparison(results)):
        same, diffs = entry["same_setup"], entry["differences"]
        if same:
            lines.append(f"setup: A and {letter} share fingerprint {first}: a difference below is sampling noise "
                         "or the engine's own nondeterminism, not a changed setup")
            continue
        if diffs and all(k in MODEL_KEYS for k, _, _ in diffs) and not entry["partial"]:
            lines.append(f"setup: A and {letter} differ only in the model ({', '.join(k for k, _, _ in diffs)}); "
                         "the rest of the setup is shared")
            continue
        if same is None and entry["partial"]:
            head = (f"setup: A ({first}) and {letter} ({entry['fingerprint']}): cannot tell whether they share a setup "
                    "(a run made before fingerprints were recorded)")
        elif same is None:
            head = f"setup: A and {letter}: only facts unknown to one of them differ"
        else:
            head = (f"WARNING: A ({first}) and {letter} ({entry['fingerprint']}) were made with different setups "
                    "(differences below can come from them, not from the model): `reasoneval repro` tells numerics "
                    "from sampling noise")
        shown = [f"  {k}: A {fingerprint.short(a)} | {letter} {fingerprint.short(b)}" for k, a, b in diffs[:MAX_SHOWN]]
        more = [f"  ... and {len(diffs) - MAX_SHOWN} more"] if len(diffs) > MAX_SHOWN else []
        lines += [head, *shown, *more]
    return lines
