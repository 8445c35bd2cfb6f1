"""Shared by the benchmarks: the loopback server as a separate process, and a data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (str(ROOT / "src"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)


class ServerProcess:
    """tests/fixtures/openai_server.py in its own interpreter, so it never shares the harness's GIL."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fixtures.openai_server", "--port", "0", *args],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("the test server did not start")

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/_stats") as r:
            return dict(json.loads(r.read()))

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def write_problems(data_dir: Path, task: str, count: int) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / f"{task}.jsonl", "w", encoding="utf-8") as f:
        for i in range(count):
            f.write(json.dumps({"id": f"p{i}", "problem": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n")
    return data_dir
