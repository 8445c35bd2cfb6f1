"""A grading worker process: `python -m reasoneval.scoring.maths._worker MEMORY_MB`.

Reads one JSON job per line on stdin, writes one JSON result per line on stdout. It is started as a
fresh interpreter (not forked), so it never inherits the parent's threads or locks and needs no
`if __name__ == "__main__"` guard in the caller. The parent kills it when a job runs past its wall time.
"""

from __future__ import annotations

import sys
from typing import Any

from reasoneval.workers import channel_to_parent


def _limit_memory(memory_mb: int) -> None:
    import resource

    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main() -> None:
    memory_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    # The protocol owns the real stdout; anything a library prints goes to stderr instead.
    channel = channel_to_parent()
    try:
        _limit_memory(memory_mb)
        sys.setrecursionlimit(5000)
        from reasoneval.scoring.maths import verify

        verify.check_available()
        verify.warm()
    except BaseException as e:  # tell the parent why, rather than dying silently and being restarted forever
        channel.send({"fatal": f"{type(e).__name__}: {e}"[:300]})
        raise SystemExit(1) from None
    channel.send({"ready": True})
    while True:
        try:
            job = channel.recv()  # a line that is not JSON is skipped
        except EOFError:
            return
        result: dict[str, Any] = {"id": job.get("id")}
        try:
            result.update(status="ok", value=verify.run_job(job["op"], tuple(job["args"])))
        except MemoryError:
            result.update(status="error", value="memory limit exceeded")
        except RecursionError:
            result.update(status="error", value="recursion limit exceeded")
        except Exception as e:  # a parser failure on model output is a verdict, not a crash
            result.update(status="error", value=f"{type(e).__name__}: {e}"[:200])
        channel.send(result)


if __name__ == "__main__":
    main()
