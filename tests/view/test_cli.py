"""`reasoneval view` as a command: it prints its URL (with the token on a non-local bind) and serves until
interrupted; a folder that does not exist is a one-line error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.view.helpers import get

ROOT = Path(__file__).resolve().parents[2]


def start(*args: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    proc = subprocess.Popen([sys.executable, "-m", "reasoneval", "view", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://" in line, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    return proc, line.split(" at ", 1)[1].split()[0]


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_view_command_serves_until_interrupted(tmp_path: Path, host: str) -> None:
    root = tmp_path / "results"
    root.mkdir()
    proc, url = start(str(root), "--host", host, "--port", "0")
    try:
        base = f"http://127.0.0.1:{urlsplit(url).port}"
        if host == "127.0.0.1":
            assert "token" not in url
            assert get(base, "/")[0] == 200
        else:
            token = url.split("token=", 1)[1]
            assert get(base, "/")[0] == 401
            assert get(base, f"/?token={token}")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0


def test_view_of_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    r = subprocess.run([sys.executable, "-m", "reasoneval", "view", str(tmp_path / "nope"), "--port", "0"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"reasoneval: error: {tmp_path / 'nope'} is not a directory; pass the "
                                             "results folder (default: results)"]
