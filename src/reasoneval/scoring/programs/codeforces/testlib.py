"""testlib.h for the C++ checkers and interactors written against it (docs/contests.md, "testlib.h").

It is fetched at run time from its upstream, pinned to one commit and that file's sha256, and cached; it is never part
of this repository. Where it comes from, first that applies:

1. `$REASONEVAL_TESTLIB_H`: a testlib.h file you chose (used as it is; its sha256 goes with every verdict's key).
2. The cache, `$XDG_CACHE_HOME/reasoneval/testlib/<commit>/testlib.h` (else `~/.cache/...`): checked against the
   pinned sha256 (TESTLIB_SHA256, or `$REASONEVAL_TESTLIB_SHA256` for another file you vouch for); with the pin
   emptied (a fork that wants trust on first use), against the digest recorded when it was downloaded
   (`testlib.h.sha256` beside it).
3. A download of TESTLIB_URL (the file at the pinned commit), checked the same way, then written to the cache.

Offline, or a digest that does not match: a one-line error naming both digests, where to put the file and which
variable to set.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from reasoneval.atomic import atomic_write_text
from reasoneval.errors import UserError
from reasoneval.machine import user_cache_dir

TESTLIB_ENV = "REASONEVAL_TESTLIB_H"
TESTLIB_SHA256_ENV = "REASONEVAL_TESTLIB_SHA256"
# testlib's master at this commit (its `#define VERSION "0.9.45"`, 206,468 bytes, LF line endings). The pair is pinned
# on two independent witnesses that agree (docs/contests.md, "testlib.h", says how it was checked): the testlib.h
# that PyPI's autocode-mcp 1.0.6 ships (autocode_mcp/templates/testlib.h) hashes to TESTLIB_SHA256, and a public
# project's replay scripts pin this same commit to this same sha256; nixpkgs' testlib package fetches this commit.
TESTLIB_COMMIT = "1e4e8a24c79c6bad3becbdb5a332ffc352b7d5dd"
TESTLIB_VERSION = "0.9.45"
TESTLIB_URL = f"https://raw.githubusercontent.com/MikeMirzayanov/testlib/{TESTLIB_COMMIT}/testlib.h"
TESTLIB_SHA256 = "bb323e3c89285214966076e0d23d5a295c5f6126da7ff198c1276ddb95ecb1a0"
FETCH_TIMEOUT_S = 30.0
INCLUDES_TESTLIB = re.compile(r'^\s*#\s*include\s*[<"]testlib\.h[>"]', re.MULTILINE)


@dataclass(frozen=True)
class TestlibHeader:
    text: str
    sha256: str
    source: str  # where it came from: the env variable's file, the cache file, or the URL


def needs_testlib(source: str) -> bool:
    return INCLUDES_TESTLIB.search(source) is not None


def cached_testlib_path() -> Path:
    return user_cache_dir() / "testlib" / TESTLIB_COMMIT / "testlib.h"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _what_to_do(cache: Path) -> str:
    return (f"download testlib.h {TESTLIB_VERSION} at commit {TESTLIB_COMMIT[:12]} ({TESTLIB_URL}) to {cache}, or "
            f"set {TESTLIB_ENV} to a testlib.h file")


def _expected(cache: Path) -> str | None:
    pinned = os.environ.get(TESTLIB_SHA256_ENV, "").strip().lower() or TESTLIB_SHA256
    if pinned:
        return pinned
    record = cache.with_name(cache.name + ".sha256")
    return record.read_text(encoding="ascii").strip() if record.is_file() else None


def _checked(data: bytes, where: str, cache: Path) -> bytes:
    want, got = _expected(cache), _digest(data)
    if want is not None and got != want:
        raise UserError(f"testlib.h from {where} has sha256 {got}, not the pinned {want}: "
                        f"{_what_to_do(cache)} (or delete {cache} to download it again)")
    return data


def find_testlib_header() -> TestlibHeader:
    """testlib.h's text, from the variable's file, the cache, or the pinned download (the module's docstring)."""
    chosen = os.environ.get(TESTLIB_ENV, "").strip()
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise UserError(f"{TESTLIB_ENV}={chosen} is not a file: point it at a testlib.h, or unset it to use "
                            f"the cached download ({cached_testlib_path()})")
        data = path.read_bytes()
        return TestlibHeader(data.decode("utf-8", "replace"), _digest(data), str(path))
    cache = cached_testlib_path()
    if cache.is_file():
        data = _checked(cache.read_bytes(), str(cache), cache)
        return TestlibHeader(data.decode("utf-8", "replace"), _digest(data), str(cache))
    try:
        with urllib.request.urlopen(TESTLIB_URL, timeout=FETCH_TIMEOUT_S) as r:
            data = r.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise UserError(f"a C++ checker or interactor includes testlib.h, which could not be downloaded "
                        f"({type(e).__name__}: {str(e)[:120]}): {_what_to_do(cache)}") from None
    data = _checked(data, TESTLIB_URL, cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    part = cache.with_name(f"{cache.name}.{os.getpid()}.part")
    part.write_bytes(data)
    os.replace(part, cache)
    if _expected(cache) is None:
        atomic_write_text(cache.with_name(cache.name + ".sha256"), _digest(data) + "\n")
    return TestlibHeader(data.decode("utf-8", "replace"), _digest(data), TESTLIB_URL)
