"""`reasoneval view` is safe by default: hostile text (script tags, event handlers, `</script>`) in answers,
problem ids and model names runs nowhere in Chromium; paths outside the results folder are refused; a bind other
than loopback refuses every request without its token; the server writes nothing into the folder."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import reasoneval
from reasoneval.results.identity import sample_seed
from reasoneval.tasks import problem_key
from tests.fixtures.openai_server import Reply
from tests.report.browser import browser  # noqa: F401  (fixture)
from tests.view.helpers import get, snapshot, viewing

EVIL = "<img src=x onerror=\"window.pwned=1\"></script><script>window.pwned=2</script><b onmouseover=window.pwned=3>"
Q, K = 3, 2


def hostile_run(make_server: Any, tmp: Path, step: int) -> Path:
    """A run whose model name, problem ids and answers are hostile text; checkpoint `step` of one training run."""
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    rows = [{"id": f"p{i}{EVIL}", "problem": f"What is {i} plus {i}?", "answer": str(2 * i)} for i in range(Q)]
    (data / "math500.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    replies = {}
    for i, r in enumerate(rows):
        for j in range(K):
            said = r["answer"] if (i + step) % 2 else EVIL  # every problem flips; the wrong answer is hostile too
            replies[sample_seed(42, "math500", problem_key(r["problem"], r["answer"]), j)] = Reply(
                text=f"{EVIL} so \\boxed{{{said}}}", completion_tokens=10)
    model = f"/ck/{EVIL}/checkpoint-{step}"
    server = make_server(model=model, responder=lambda body: replies[body["seed"]])
    result = reasoneval.evaluate(base_url=server.base_url, model=model, data_dir=str(data), tasks=["math500"], n=K,
                                 seed=42, output_dir=str(tmp / "results"), retry_backoff=0.01, grading_workers=1,
                                 progress=False, print_table=False)
    return Path(result.run_dir)


@pytest.fixture
def hostile(make_openai_server: Any, tmp_path: Path) -> tuple[Path, list[Path]]:
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        dirs = [pool.submit(hostile_run, make_openai_server, tmp_path, s).result() for s in (1, 2)]
    return tmp_path / "results", dirs


def test_hostile_text_runs_nowhere(hostile: tuple[Path, list[Path]], browser: Any) -> None:  # noqa: F811
    root, dirs = hostile
    before = snapshot(root)
    with viewing(root) as (url, base):
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: errors.append("dialog " + d.message))
        rel = [d.relative_to(root).as_posix() for d in dirs]

        def check(path: str, wait: str) -> None:
            page.goto(url.rstrip("/") + path)
            page.wait_for_selector(wait)
            page.hover("body")
            assert page.evaluate("window.pwned") is None, path
            assert page.evaluate("document.querySelectorAll('img, b[onmouseover], script:not([nonce]):not([type])')"
                                 ".length") == 0 or path.startswith("/files/"), path
            assert "</script><script>window.pwned=2</script>" in page.text_content("body"), path  # shown as text

        check("/", "#runs tbody tr")
        check("/run/" + rel[0], "#headline tbody tr")
        check("/training", "#training-runs a")
        page.click("#training-runs a")
        page.wait_for_selector("#plot-pass-1 circle")
        assert page.evaluate("window.pwned") is None
        assert EVIL in page.text_content("#training-name")
        check(f"/compare?a={rel[0]}&b={rel[1]}", "#compare")
        assert EVIL in page.text_content("table.flips")  # ids and answers of flipped problems, as text
        page.goto(url.rstrip("/") + f"/files/{rel[0]}/report.html")
        page.wait_for_selector("#problems tbody tr")
        page.click("#problems tbody tr >> nth=0")
        page.wait_for_selector("#detail details.sample")
        assert page.evaluate("window.pwned") is None
        assert errors == []
        page.close()
    assert snapshot(root) == before  # the server wrote nothing into the folder


def test_paths_outside_the_folder_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "results"
    (root / "m" / "run1").mkdir(parents=True)
    (root / "m" / "run1" / "report.html").write_text("<p>ok</p>")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    os.symlink(secret, root / "m" / "link.txt")  # a link inside the folder to a file outside it
    os.symlink(tmp_path, root / "m" / "up")
    before = snapshot(root)
    with viewing(root) as (url, base):
        assert get(base, "/files/m/run1/report.html")[0] == 200
        for path in ("/files/../secret.txt", "/files/%2e%2e/secret.txt", "/files/m/..%2f..%2fsecret.txt",
                     "/files/m/link.txt", "/files/m/up/secret.txt", "/files//etc/passwd", "/files/%2fetc%2fpasswd",
                     "/run/..%2f..", "/api/run/..%2f..%2f..", "/compare?a=../..&b=m/run1"):
            status, body, _ = get(base, path)
            assert status in (400, 403, 404), (path, status)
            assert "TOP SECRET" not in body and "root:" not in body, path
        assert get(base, "/files/m/run1/report.html", method="POST")[0] == 405
        assert get(base, "/", method="DELETE")[0] == 405
    assert snapshot(root) == before


def test_non_local_bind_needs_the_token(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    with viewing(root, host="0.0.0.0") as (url, base):
        token = url.split("token=", 1)[1]
        assert len(token) >= 24
        assert get(base, "/")[0] == 401
        assert get(base, "/api/runs")[0] == 401
        assert get(base, "/files/x")[0] == 401
        assert get(base, "/?token=wrong" + token[:4])[0] == 401
        assert get(base, "/", {"Authorization": "Bearer nope"})[0] == 401
        status, body, headers = get(base, f"/?token={token}")
        assert status == 200 and "Runs under" in body
        cookie = headers["set-cookie"].split(";")[0]
        assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
        assert get(base, "/api/runs", {"Cookie": cookie})[0] == 200  # the page's own requests carry it
        assert get(base, "/api/runs", {"Authorization": f"Bearer {token}"})[0] == 200


def test_loopback_bind_answers_only_loopback_names(tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    with viewing(root) as (url, base):
        assert url.startswith("http://127.0.0.1:") and "token" not in url
        assert get(base, "/")[0] == 200
        assert get(base, "/", {"Host": "localhost"})[0] == 200
        assert get(base, "/", {"Host": "attacker.example:80"})[0] == 403  # DNS rebinding
        status, body, headers = get(base, "/")
        assert "script-src 'nonce-" in headers["content-security-policy"]
