"""The Ray cluster a sweep or watcher runs on: join one, or start one of this machine's free GPUs.

GPUs busy outside Ray (memory in use, via NVML when pynvml is installed, or named with --busy-gpus) are
left out of a locally started cluster (CUDA_VISIBLE_DEVICES) and reported.
"""

from __future__ import annotations

import os
from typing import Sequence

# GPU memory in use (MiB) above which NVML reports a GPU busy.
BUSY_MIB = 1024


def nvml_gpus(busy_mib: int = BUSY_MIB) -> tuple[int, dict[int, str]]:
    """(GPU count, {busy GPU index: why}) from NVML; (0, {}) without pynvml or NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return 0, {}
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver: no GPUs to manage
        return 0, {}
    try:
        count = int(pynvml.nvmlDeviceGetCount())
        busy = {}
        for i in range(count):
            used = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).used >> 20
            if used > busy_mib:
                busy[i] = f"{used} MiB in use outside this sweep"
        return count, busy
    finally:
        pynvml.nvmlShutdown()


def start_cluster(ray_address: str | None, *, num_gpus: int | None, num_cpus: int | None,
                  busy_gpus: Sequence[int] = ()) -> tuple[bool, list[str]]:
    """Join `ray_address`, or start a local cluster of the free GPUs. Returns (started here, report lines)."""
    from reasoneval.engines.ray import import_ray, init_ray

    ray = import_ray()
    notes: list[str] = []
    if ray.is_initialized() or ray_address:
        return init_ray(ray_address), notes
    detected, busy = nvml_gpus()
    total = detected if num_gpus is None else num_gpus
    for i in busy_gpus:
        busy.setdefault(int(i), "marked busy (--busy-gpus)")
    free = [i for i in range(total) if i not in busy]
    for i, why in sorted(busy.items()):
        if i < total:
            notes.append(f"GPU {i} is busy ({why}): left alone")
    if total:
        # Ray hands out the ids in CUDA_VISIBLE_DEVICES: a busy GPU is never given to a job.
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, free))
    started = init_ray(None, num_cpus=num_cpus, num_gpus=len(free))
    notes.append(f"local Ray cluster: {len(free)} GPU(s) {free if total else ''}".rstrip())
    return started, notes


__all__ = ["BUSY_MIB", "nvml_gpus", "start_cluster"]
