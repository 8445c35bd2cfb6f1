"""The floor of a judge that runs every test in a fresh process forked from a ready interpreter, as ours does: one
process holds the judge's preloaded modules (as our lean keeper does) and, per program, the header's names the
program uses (their modules imported) and the program compiled once, and per test it forks a child that runs the
program on the test's input (a pipe) and exits, and reaps it. Nothing else: no sandbox, namespaces, limits,
watching or comparison. Run with the interpreter that runs the programs (the sandbox's: `python3 -I`); standard
library only. bench/contest_speed.py writes the input (lcb_grade.py's, plus "preload", and per program "names":
[name, module, attribute or null], what our keeper's scan finds) and prints this floor's CPU beside both judges'
for the same tests.

    /usr/bin/python3 -I bench/fork_floor.py IN.json OUT.json

OUT: {"tests": tests run, "cpu_s": CPU of this process and every child it reaped, "wall_s"}.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
import time
from types import CodeType


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run(compiled: CodeType, module: dict, data: bytes) -> None:
    """One test: fork, the child runs the program on `data` and exits; reaped here."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.write(in_w, data)  # (the bench's inputs fit a pipe)
    os.close(in_w)
    pid = os.fork()
    if pid == 0:
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        try:
            exec(compiled, module)  # the child's copy of the module the header ran in
            sys.stdout.flush()
        except BaseException:
            os._exit(1)
        os._exit(0)
    os.close(in_r)
    os.close(out_w)
    while os.read(out_r, 1 << 16):
        pass
    os.close(out_r)
    os.waitpid(pid, 0)


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        spec = json.load(f)
    for name in spec.get("preload", ()):
        __import__(name)
    import atexit  # noqa: F401  (what every child would import at its end otherwise: ours imports it ahead too)
    import gc

    gc.freeze()  # no collection in a child copies the parent's objects (ours freezes too)
    tests = 0
    t0, c0 = time.perf_counter(), _cpu()
    for (index, response), names in zip(spec["programs"], spec["names"]):
        found = re.findall(r"```python\n(.*?)```", response, re.S)
        compiled = compile(found[-1], "<solution>", "exec")  # once per program, as ours
        module: dict = {"__name__": "__main__"}  # the header's names it uses, as our lean keeper gives them
        for name, source, attribute in names:
            __import__(source)
            module[name] = sys.modules[source] if attribute is None else getattr(sys.modules[source], attribute)
        for name in compiled.co_names:  # the modules it names, imported ahead once per program, as ours does
            if name in sys.stdlib_module_names and name not in ("this", "antigravity"):  # (those two act)
                __import__(name)
        io = json.loads(spec["problems"][index]["input_output"])
        for text in io["inputs"]:
            _run(compiled, module, text.encode("utf-8"))
            tests += 1
    with open(dst, "w", encoding="utf-8") as f:
        json.dump({"tests": tests, "cpu_s": _cpu() - c0, "wall_s": time.perf_counter() - t0}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
