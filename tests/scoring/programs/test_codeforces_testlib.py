"""testlib.h for C++ checkers: where it comes from (a chosen file, the cache, a pinned download over a loopback
server here), the one-line error offline or on a digest mismatch (with the real pin and with a test's own), and a
checker that includes it built and run by the judge. The header used is our own stand-in with the few functions the
checker calls, not testlib."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from reasoneval.errors import UserError
from reasoneval.scoring.programs.codeforces import testlib as testlib_module
from reasoneval.scoring.programs.codeforces.testlib import cached_testlib_path, find_testlib_header, needs_testlib
from tests.scoring.programs.test_codeforces_judge import DERANGEMENT_TESTS, fence, judge, problem

STAND_IN = r"""#pragma once
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
enum TResult { _ok = 0, _wa = 1, _pe = 2, _fail = 3 };
struct InStream {
    FILE* f = nullptr;
    TResult bad = _fail;
    int readInt(int lo, int hi) {
        int x;
        if (!f || std::fscanf(f, "%d", &x) != 1) std::exit(bad == _wa ? _pe : _fail);
        if (x < lo || x > hi) std::exit(bad);
        return x;
    }
    bool seekEof() {
        int c;
        while ((c = std::fgetc(f)) != EOF) if (!std::isspace(c)) return false;
        return true;
    }
};
InStream inf, ouf, ans;
void registerTestlibCmd(int argc, char** argv) {
    if (argc < 4) std::exit(_fail);
    inf.f = std::fopen(argv[1], "r"); ouf.f = std::fopen(argv[2], "r"); ans.f = std::fopen(argv[3], "r");
    ouf.bad = _wa;
}
void quitf(TResult r, const char* fmt, ...) {
    va_list ap; va_start(ap, fmt); std::vfprintf(stderr, fmt, ap); va_end(ap); std::exit(r);
}
"""
TESTLIB_CHECKER = r"""#include "testlib.h"
#include <vector>
int main(int argc, char** argv) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt(1, 1000000);
    std::vector<int> seen(n + 1, 0);
    for (int i = 1; i <= n; i++) {
        int p = ouf.readInt(1, n);
        if (seen[p] || p == i) quitf(_wa, "p[%d] = %d", i, p);
        seen[p] = 1;
    }
    if (!ouf.seekEof()) quitf(_wa, "extra output");
    quitf(_ok, "a derangement of %d", n);
}
"""


@pytest.fixture
def fresh_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No chosen file, no digest in the environment, an empty cache under tmp_path; the code's own pin."""
    monkeypatch.delenv(testlib_module.TESTLIB_ENV, raising=False)
    monkeypatch.delenv(testlib_module.TESTLIB_SHA256_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def no_testlib(fresh_machine: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh machine with the pin emptied (a fork's trust on first use), to test the other paths with the stand-in."""
    monkeypatch.setattr(testlib_module, "TESTLIB_SHA256", "")
    return fresh_machine


@pytest.fixture
def served(fresh_machine: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A loopback server with the stand-in at TESTLIB_URL; yields the paths it was asked for (the pin as the test
    sets it: the code's own unless it asks for another)."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = STAND_IN.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    monkeypatch.setattr(testlib_module, "TESTLIB_URL", f"http://127.0.0.1:{server.server_port}/testlib.h")
    yield asked
    server.shutdown()
    server.server_close()


def test_which_sources_need_it() -> None:
    assert needs_testlib(TESTLIB_CHECKER) and needs_testlib("#include <testlib.h>\n")
    assert not needs_testlib("#include <cstdio>\n// testlib.h is not used\n")


def test_offline_is_a_one_line_error_naming_what_to_do(no_testlib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testlib_module, "TESTLIB_URL", "http://127.0.0.1:9/testlib.h")  # nothing listens there
    with pytest.raises(UserError) as e:
        find_testlib_header()
    msg = str(e.value)
    assert "\n" not in msg and "could not be downloaded" in msg
    assert testlib_module.TESTLIB_ENV in msg and str(cached_testlib_path()) in msg
    # the judge stops with that error rather than calling every sample's verdict a judge error
    p = problem(DERANGEMENT_TESTS, checker={"language": "cpp", "source": TESTLIB_CHECKER})
    with pytest.raises(UserError, match=testlib_module.TESTLIB_ENV):
        judge(p, [fence("python", "print(2, 3, 1)\n")])


def test_pinned_download_is_checked_and_cached(served: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testlib_module, "TESTLIB_SHA256", hashlib.sha256(STAND_IN.encode()).hexdigest())
    got = find_testlib_header()
    assert got.text == STAND_IN and served == ["/testlib.h"]
    assert cached_testlib_path().read_text() == STAND_IN
    assert find_testlib_header().source == str(cached_testlib_path()) and served == ["/testlib.h"]  # not fetched again
    # a file in the cache that is not the pinned one is refused, with what to do
    cached_testlib_path().write_text(STAND_IN + "// changed\n")
    with pytest.raises(UserError, match="not the pinned") as e:
        find_testlib_header()
    assert "\n" not in str(e.value) and testlib_module.TESTLIB_ENV in str(e.value)


def test_a_wrong_download_is_refused(served: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testlib_module, "TESTLIB_SHA256", "0" * 64)
    with pytest.raises(UserError, match="has sha256 .* not the pinned 0000"):
        find_testlib_header()
    assert not cached_testlib_path().exists()


def test_without_a_pin_the_first_download_is_recorded(served: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testlib_module, "TESTLIB_SHA256", "")
    first = find_testlib_header()
    record = cached_testlib_path().with_name("testlib.h.sha256")
    assert record.read_text().strip() == first.sha256
    cached_testlib_path().write_text("// something else\n")
    with pytest.raises(UserError, match="not the pinned"):
        find_testlib_header()


def test_a_chosen_file_wins_and_a_missing_one_is_an_error(no_testlib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(testlib_module.TESTLIB_ENV, str(no_testlib / "nowhere.h"))
    with pytest.raises(UserError, match="is not a file"):
        find_testlib_header()
    (no_testlib / "testlib.h").write_text(STAND_IN)
    monkeypatch.setenv(testlib_module.TESTLIB_ENV, str(no_testlib / "testlib.h"))
    assert find_testlib_header().text == STAND_IN


def test_a_testlib_checker_is_built_with_the_header_and_decides(no_testlib: Path, monkeypatch: pytest.MonkeyPatch,
                                                                mode: str) -> None:
    (no_testlib / "testlib.h").write_text(STAND_IN)
    monkeypatch.setenv(testlib_module.TESTLIB_ENV, str(no_testlib / "testlib.h"))
    p = problem(DERANGEMENT_TESTS, checker={"language": "cpp", "source": TESTLIB_CHECKER})
    got = judge(p, [fence("python", "n = int(input())\nprint(*([n] + list(range(1, n))))\n"),
                    fence("python", "n = int(input())\nprint(*range(1, n + 1))\n"),
                    fence("python", "print('x')\n")])
    assert [d["verdict"] for d in got] == ["passed", "wrong_answer", "wrong_answer"]
    assert "p[1] = 1" in got[1]["detail"] and got[2]["detail"].startswith("presentation error")


def test_the_code_pins_one_commit_and_its_sha256() -> None:
    commit, digest = testlib_module.TESTLIB_COMMIT, testlib_module.TESTLIB_SHA256
    assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    assert len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
    # the URL names the commit the digest is for (a branch or tag could move), and so does the cache's folder
    assert testlib_module.TESTLIB_URL.endswith(f"/MikeMirzayanov/testlib/{commit}/testlib.h")
    assert commit in str(cached_testlib_path())


def test_with_the_real_pin_a_file_that_is_not_testlib_is_refused(served: list[str]) -> None:
    pinned = testlib_module.TESTLIB_SHA256
    stand_in = hashlib.sha256(STAND_IN.encode()).hexdigest()
    # a download that is not the pinned file: one line naming the expected and the actual digest, nothing cached
    with pytest.raises(UserError) as e:
        find_testlib_header()
    msg = str(e.value)
    assert "\n" not in msg and f"has sha256 {stand_in}, not the pinned {pinned}" in msg
    assert testlib_module.TESTLIB_ENV in msg and not cached_testlib_path().exists()
    # a copy put in the cache by hand is checked on every use, not only when it arrives
    cached_testlib_path().parent.mkdir(parents=True)
    cached_testlib_path().write_text(STAND_IN)
    with pytest.raises(UserError, match=f"has sha256 {stand_in}, not the pinned {pinned}"):
        find_testlib_header()
    assert served == ["/testlib.h"]  # the cache's copy was refused without a second download


def test_the_environment_can_vouch_for_another_file(served: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(testlib_module.TESTLIB_SHA256_ENV, hashlib.sha256(STAND_IN.encode()).hexdigest().upper())
    assert find_testlib_header().text == STAND_IN and cached_testlib_path().read_text() == STAND_IN
    cached_testlib_path().write_text(STAND_IN + "// tampered\n")  # and the cached copy is checked again
    with pytest.raises(UserError, match="not the pinned"):
        find_testlib_header()
