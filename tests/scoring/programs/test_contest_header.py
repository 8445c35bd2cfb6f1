"""The programs' import header as the lean keeper gives it (sandbox/keeper.py, issue 48): a stdin program's tests run
in a module holding the header's names the program reads, writes or deletes (the very objects the whole header
binds), their modules imported once per sample, and the whole header where the program could reach its globals
another way. Every program here prints what it sees; the expected output is the same program run after the whole
header as one script (as lcb_runner runs it), by the interpreter that runs the sandbox's programs."""

from __future__ import annotations

import os
import subprocess
from types import CodeType

import pytest

from reasoneval.scoring.programs.contest import LCB_IMPORTS, PRELOAD
from reasoneval.scoring.programs.sandbox.interpreter import default_python
from reasoneval.scoring.programs.sandbox.keeper import (
    DYNAMIC_NAMES,
    header_names,
    lean_module,
    name_ops,
    names_needed,
    scan_code,
)
from tests.scoring.programs.test_contest import problem, score, verdicts

PROGRAMS = [
    # header names used without an import: from the modules every keeper has, and from those imported per sample
    "print(gcd(12, 18), deque([1, 2]).pop(), bisect_left([1, 3], 2), mean([1, 2, 3]), median([3, 1, 2]))",
    "print(sub(5, 3), findall('a', 'baa'), dumps([1]), ascii_lowercase[:3], List[int], type(Counter('aab')).__name__, comb(5, 2))",
    # read before the program's own import binds it: the header's value (typing's Counter, the header's last word)
    "x = Counter\nfrom collections import Counter\nprint(x is Counter, x.__module__, Counter.__module__)",
    # the program's opening imports bind first: its own values whenever anything reads them
    "from collections import Counter\nimport re\ninput = __import__('sys').stdin.readline\n"
    "print(Counter.__module__, re.__name__, Counter('aa')['a'])",
    # reaching the module's globals another way: the whole header
    "print(sorted(k for k in globals() if not k.startswith('_'))[:6], eval('gcd(4, 6)'), 'mean' in dir())",
    "print('statistics' in __import__('sys').modules, vars()['sqrt'](16.0))",
    # deleting, rebinding, and names read in functions and class bodies
    "del print\nprint(1)",
    "def f():\n    global sqrt\n    sqrt = 3\nf()\nprint(sqrt, floor(2.5), inf)",
    "class A:\n    v = pi\n    def m(self):\n        return accumulate([1, 2, 3])\nprint(round(A.v, 3), list(A().m()))",
    "print(quit, stdin is __import__('sys').stdin, getrecursionlimit(), heappush.__module__)",
    "try:\n    print(undefined_name)\nexcept NameError as e:\n    print('NameError', e)",
]


def _as_lcb_runner(program: str) -> str:
    """The program after the whole header, one script, on the sandbox's interpreter (quit is None there, as under
    lcb_runner's reliability guard and in every keeper)."""
    script = "import builtins\nbuiltins.quit = None\n" + LCB_IMPORTS + "\n" + program
    r = subprocess.run([default_python(os.geteuid() == 0), "-I", "-c", script], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL, cwd="/")
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.usefixtures("mode")
def test_a_program_sees_the_header_as_the_whole_header_gives_it() -> None:
    for program in PROGRAMS:
        expected = _as_lcb_runner(program)
        p = problem([{"input": "", "output": expected, "kind": "public"}])
        got = score(p, [program], time_limit_s=5.0)
        assert verdicts(got) == ["passed"], (program, expected, got[0].details)


@pytest.mark.usefixtures("mode")
def test_a_program_that_needs_little_of_the_header_runs_in_a_smaller_process() -> None:
    """A test's process is a copy of its sample's keeper: a program that reads no name of the header's heavy modules
    runs in a process ~2 MiB smaller (its peak RSS, inherited at the fork, shows it) than one that reaches its
    globals (`globals()`: the whole header, every module of it loaded). Each program says whether its peak is under
    one bound; the first bound a program passes under is its size, within 500 KiB."""
    bounds = list(range(2000, 40000, 500))
    check = "import resource\nprint('y' if resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < {} else 'n'){}"
    sizes = []
    for extra in ("", "\nglobals()"):
        out = score(problem([{"input": "", "output": "y", "kind": "public"}]),
                    [check.format(kb, extra) for kb in bounds], time_limit_s=5.0)
        passed = [kb for kb, v in zip(bounds, verdicts(out)) if v == "passed"]
        assert passed and set(verdicts(out)) <= {"passed", "wrong_answer"}, verdicts(out)
        sizes.append(passed[0])
    assert sizes[1] - sizes[0] >= 1500, sizes


def _compiled(program: str) -> CodeType:
    return compile(program, "<solution>", "exec")


def test_the_scan_tells_global_names_from_attributes_and_opening_imports() -> None:
    ops = name_ops()
    used, modules, names = scan_code(_compiled(
        "import sys\nfrom collections import Counter\ninput = sys.stdin.readline\n"
        "def f(x):\n    return gcd(x, 4) + len(x.split())\n"
        "class A:\n    y = pi\n    import os.path\nprint(f(Counter()))\ndel deque\n"), ops)
    # (a class body's own names count too: more of the header's names than it needs is only a few more bytes)
    assert {"gcd", "len", "pi", "A", "f", "print", "deque"} <= used <= {"gcd", "len", "pi", "A", "f", "print",
                                                                       "deque", "os", "y", "__name__",
                                                                       "__module__", "__qualname__"}
    assert "split" not in used and "split" in names  # an attribute is not a global
    assert not {"sys", "Counter", "input"} & used  # the opening imports bind them first
    assert {"sys", "collections", "os", "os.path"} <= modules
    # a global read before the program binds it is the header's
    used, _, _ = scan_code(_compiled("x = Counter\nfrom collections import Counter\n"), ops)
    assert "Counter" in used


def test_the_header_names_are_checked_against_the_header_run() -> None:
    for name in PRELOAD:
        __import__(name)
    namespace: dict = {"__builtins__": __builtins__}
    exec(compile(LCB_IMPORTS, "<h>", "exec"), namespace)
    names = header_names(LCB_IMPORTS, namespace)
    assert names is not None
    assert names["Counter"] == ["typing", "Counter"] and names["re"] == ["re", None]
    assert names["copy"] == ["copy", None] and names["print"] == ["builtins", "print"]
    assert header_names(LCB_IMPORTS + "x = 1\n", namespace) is None  # a line it cannot read: never in part
    namespace["gcd"] = lambda a, b: 0
    assert header_names(LCB_IMPORTS, namespace) is None  # a value it does not account for


def test_a_program_that_can_reach_its_globals_gets_the_whole_header() -> None:
    names, ops = {"gcd": ["math", "gcd"]}, name_ops()
    for program in ("print(globals())", "import inspect", "print(eval('1'))", "f = lambda: f.__globals__",
                    "import importlib", "x = __import__('sys').modules"):
        assert names_needed(scan_code(_compiled(program), ops), names) is None, program
    need = names_needed(scan_code(_compiled("print(gcd(2, 4))"), ops), names)
    assert need == ["gcd"]
    main = lean_module(need, names)
    assert set(main.__dict__) >= {"gcd", "__builtins__"} and "pi" not in main.__dict__
    assert "globals" in DYNAMIC_NAMES


@pytest.mark.usefixtures("mode")
def test_a_header_the_keeper_cannot_read_exactly_is_run_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A header line that is neither `from M import *` nor `import M` (here `x = 7`): the keeper cannot say which
    names the program may use, so the lean keeper runs the whole header, and the program sees all of it."""
    from reasoneval.scoring.programs import contest

    monkeypatch.setattr(contest, "LCB_IMPORTS", LCB_IMPORTS + "x = 7\n")
    p = problem([{"input": "", "output": "7 2 2", "kind": "public"}])
    got = score(p, ["print(x, gcd(4, 6), mean([1, 3]))"], time_limit_s=5.0)
    assert verdicts(got) == ["passed"], got[0].details
