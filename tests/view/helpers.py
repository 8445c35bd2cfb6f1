"""`reasoneval view` started in a thread for a test, and small HTTP helpers that send raw paths."""

from __future__ import annotations

import contextlib
import http.client
import os
import threading
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from reasoneval.view.server import serve

ARTIFACTS = Path(os.environ["REASONEVAL_TEST_ARTIFACTS"]) if os.environ.get("REASONEVAL_TEST_ARTIFACTS") else None


@contextlib.contextmanager
def viewing(root: Path, host: str = "127.0.0.1") -> Iterator[tuple[str, str]]:
    """The server over `root` on a free port: (the URL it printed, its base on 127.0.0.1). Stopped on exit."""
    lines: list[str] = []
    ready, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=serve, args=(root, host, 0), daemon=True,
                         kwargs={"announce": lines.append, "ready": ready, "stop": stop})
    t.start()
    assert ready.wait(60), "the view server did not start"
    url = lines[0].split(" at ", 1)[1].split()[0]
    port = urlsplit(url).port
    try:
        yield url, f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        t.join(30)


def get(base: str, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    """One request with `path` sent as is (no normalisation of `..`): status, body, headers."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace"), {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under root with its size and modification time: a write would change it."""
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(d) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def shot(page: object, name: str) -> None:
    """A screenshot for docs/reporting.md when REASONEVAL_TEST_ARTIFACTS names a folder (docs/img)."""
    if ARTIFACTS is None:
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    try:  # keep the committed PNGs small: 64 colours are plenty for a table and line plots
        from PIL import Image

        with Image.open(path) as im:
            im.convert("RGB").quantize(64).save(path, optimize=True)
    except ImportError:
        pass
