"""The trusted drivers' texts, as they run inside the sandbox with `python -I -c` (never imported there): each
driver file with its `# <prelude>` ... `# </prelude>` import block replaced by prelude.py's own text, and each
`# <NAME>` ... `# </NAME>` import block by NAME.py's text (itself without its own prelude import block: the prelude
is in the text once; its own such blocks taken in likewise). Each part's text is in a driver's text once: a block
naming a part taken in already (by an earlier block, or one nested in it) is dropped."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent
_BLOCK = re.compile(r"^# <(\w+)>.*?^# </\1>\n", re.DOTALL | re.MULTILINE)
_PRELUDE_BLOCK = re.compile(r"^# <prelude>.*?^# </prelude>\n", re.DOTALL | re.MULTILINE)
_PACKAGE_IMPORT = re.compile(r"^\s*(from|import)\s+reasoneval\b", re.MULTILINE)
PARTS = ("prelude", "keeper", "watch", "program", "scratch", "values")  # the files a driver's text may take in


def _part(name: str, taken: set[str]) -> str:
    if name not in PARTS:
        raise RuntimeError(f"`# <{name}>`: not a part a driver takes in ({', '.join(PARTS)})")
    if name in taken:
        return ""
    taken.add(name)
    text = (HERE / f"{name}.py").read_text(encoding="utf-8")
    if name == "prelude":
        return text
    return _BLOCK.sub(lambda m: _part(m.group(1), taken), _PRELUDE_BLOCK.sub("", text))


def with_prelude(text: str, name: str = "driver") -> str:
    """A driver's text with prelude.py's text in place of its `# <prelude>` import block, and each other part's in
    place of its block (a driver from before the prelude, which has none, is returned as it is)."""
    if "# <prelude>" not in text:
        return text
    if len(_PRELUDE_BLOCK.findall(text)) != 1:
        raise RuntimeError(f"{name}: expected one `# <prelude>` ... `# </prelude>` block, found "
                           f"{len(_PRELUDE_BLOCK.findall(text))}")
    taken: set[str] = set()
    source = _BLOCK.sub(lambda m: _part(m.group(1), taken), text)
    if _PACKAGE_IMPORT.search(source):
        raise RuntimeError(f"{name}: the driver's text imports the reasoneval package, which the sandbox lacks")
    return source


def driver_source(filename: str) -> str:
    """The text of driver `filename` (in this folder) as it runs in the sandbox."""
    text = (HERE / filename).read_text(encoding="utf-8")
    if "# <prelude>" not in text:
        raise RuntimeError(f"{filename}: no `# <prelude>` block")
    return with_prelude(text, filename)


DRIVER_SOURCE = driver_source("driver.py")
STDIO_DRIVER_SOURCE = driver_source("stdio_driver.py")


# The stdio driver's boot (the `-c` text): it forks the keeper first, then reads the driver's text from IN (the
# harness writes STDIO_DRIVER_PREAMBLE there before the first batch: sandbox/session.py), compiles it and hands the
# keeper the compiled code (marshalled). The keeper never parses the text, nor holds it: a string literal in the `-c`
# text itself would be parsed by every process of the sandbox at its start (~2 MiB of the interpreter's heap in
# copies of the command line and the parser's leftovers), and the keeper's memory is what every test's process copies
# (each MiB there costs a test's fork, copy-on-write faults and exit ~0.065 ms: docs/benchmarks.md).
_BOOT = """
import marshal, os, sys
_code_r, _code_w = os.pipe()
_ctl_r, _ctl_w = os.pipe()
_cmd_r, _cmd_w = os.pipe()
_res_r, _res_w = os.pipe()
if os.fork() == 0:
    for _fd in (int(sys.argv[1]), int(sys.argv[2]), _code_w, _ctl_w, _cmd_w, _res_r):
        os.close(_fd)
    _chunks = []
    while True:
        _b = os.read(_code_r, 1 << 20)
        if not _b:
            break
        _chunks.append(_b)
    os.close(_code_r)
    _g = {"__name__": "__keeper__", "__builtins__": __builtins__}
    exec(marshal.loads(b"".join(_chunks)), _g)
    del _chunks, _b
    _g["keeper_main"](_ctl_r, _cmd_r, _res_w)
    os._exit(1)
for _fd in (_code_r, _ctl_r, _cmd_r, _res_w):
    os.close(_fd)
def _exact(fd, n):
    _parts = []
    while n > 0:
        _b = os.read(fd, min(n, 1 << 20))
        if not _b:
            os._exit(1)
        _parts.append(_b)
        n -= len(_b)
    return b"".join(_parts)
_head = _exact(int(sys.argv[1]), 12)
if not _head.isdigit():
    os._exit(1)
_code = compile(_exact(int(sys.argv[1]), int(_head)).decode("utf-8"), "<stdio_driver>", "exec")
_view = memoryview(marshal.dumps(_code))
while _view:
    _view = _view[os.write(_code_w, _view):]
os.close(_code_w)
del _view, _head
exec(_code, {"__name__": "__main__", "__builtins__": __builtins__, "BOOT_KEEPER": (_ctl_w, _cmd_w, _res_r)})
"""
STDIO_DRIVER_BOOT = _BOOT


def preamble(source: str) -> bytes:
    """What the harness writes on a stdio driver's IN before its first batch: the driver's text (`source`), as a
    12-digit length and its UTF-8 bytes."""
    data = source.encode("utf-8")
    return b"%012d" % len(data) + data


STDIO_DRIVER_PREAMBLE = preamble(STDIO_DRIVER_SOURCE)
