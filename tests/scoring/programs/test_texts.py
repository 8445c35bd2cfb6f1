"""The drivers' texts as they run in the sandbox (sandbox/texts.py): each driver file with the shared prelude's text
in place of its prelude import, importing nothing of the package, and defining none of the prelude's names again."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from reasoneval.scoring.programs.sandbox import prelude
from reasoneval.scoring.programs.sandbox.texts import (
    DRIVER_SOURCE,
    HERE,
    STDIO_DRIVER_BOOT,
    STDIO_DRIVER_SOURCE,
    preamble,
    with_prelude,
)

PRELUDE_NAMES = {n.name for n in ast.parse(Path(prelude.__file__).read_text()).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _top_level_names(text: str) -> list[str]:
    return [n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def _top_level_bindings(text: str) -> list[str]:
    """Every name the text binds at its top level but by an import: functions, classes and assignments."""
    out = _top_level_names(text)
    for n in ast.parse(text).body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        out += [x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)]
    return out


@pytest.mark.parametrize("filename,source", [("driver.py", DRIVER_SOURCE), ("stdio_driver.py", STDIO_DRIVER_SOURCE)])
def test_each_driver_runs_with_the_prelude_and_without_the_package(filename: str, source: str) -> None:
    tree = ast.parse(source)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert "reasoneval" not in imported and imported <= set(sys.stdlib_module_names)
    names = _top_level_names(source)
    assert all(names.count(n) == 1 for n in PRELUDE_NAMES), "a prelude function is defined twice in the text"
    # the parts share one namespace in the text: a name bound twice would replace another part's (a helper named
    # like the prelude's JSON scanner `_scan` once broke every program)
    bound = _top_level_bindings(source)
    assert sorted({n for n in bound if bound.count(n) > 1}) == [], "a name is bound twice in the text"
    own = _top_level_names((HERE / filename).read_text())
    assert not PRELUDE_NAMES & set(own), "the driver file defines a prelude function again"
    # the text starts in an isolated interpreter as the sandbox starts it (no package on the path), up to main()
    probe = source.replace('if __name__ == "__main__":\n    main()', "print('loaded')")
    r = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0 and r.stdout.strip() == "loaded", r.stderr


def test_a_driver_that_imports_the_package_is_refused() -> None:
    text = (HERE / "driver.py").read_text()
    assert with_prelude(text) == DRIVER_SOURCE
    bad = text.replace("# </prelude>\n", "# </prelude>\nfrom reasoneval.errors import UserError\n")
    with pytest.raises(RuntimeError, match="imports the reasoneval package"):
        with_prelude(bad, "driver.py")
    assert with_prelude("print(1)\n") == "print(1)\n"  # an earlier driver without a prelude block runs as it is


_rss_anon_text = '''
def _rss_anon():
    with open("/proc/self/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("RssAnon:")))
'''


def test_the_stdio_drivers_boot_hands_the_keeper_compiled_code_and_no_parse_of_it() -> None:
    """The boot forks the keeper before it reads the driver's text (from IN, where the harness writes it ahead of the
    first batch) and hands it the code (marshalled): the keeper runs this text's code as `__keeper__`, on the pipes
    the boot made, and its memory holds neither the text nor a parser's leftovers, which every test's process would
    copy (the driver's memory, which compiled the text, holds them): it is within 1 MiB of a bare interpreter's."""
    probe = '''
''' + _rss_anon_text + '''


def keeper_main(ctl_r, cmd_r, res_w):
    os.write(res_w, ("%s %d %s" % (__name__, _rss_anon(), "compare_lcb" in globals())).encode())
    os._exit(0)


def main():
    ctl_w, cmd_w, res_r = globals()["BOOT_KEEPER"]
    print(os.read(res_r, 200).decode(), _rss_anon())


if __name__ == "__main__":
    main()
'''
    text = STDIO_DRIVER_SOURCE.replace('if __name__ == "__main__":\n    main()\n', probe)
    assert text != STDIO_DRIVER_SOURCE
    r = subprocess.run([sys.executable, "-I", "-c", STDIO_DRIVER_BOOT, "0", "2"], capture_output=True, timeout=60,
                       cwd="/", input=preamble(text))
    assert r.returncode == 0, r.stderr
    name, keeper_kb, has_driver_code, driver_kb = r.stdout.decode().split()
    assert name == "__keeper__" and has_driver_code == "True"
    assert int(driver_kb) - int(keeper_kb) > 1024, r.stdout  # the driver compiled ~60 KB of text; the keeper did not
    bare = subprocess.run([sys.executable, "-I", "-c", f"{_rss_anon_text}print(_rss_anon())"], capture_output=True,
                          text=True, timeout=60, cwd="/")
    # (the driver's code objects, ~0.3 MiB, are the keeper's own)
    assert int(keeper_kb) - int(bare.stdout) < 1024, (keeper_kb, bare.stdout)


def test_each_driver_text_fits_one_exec_argument_with_the_fallbacks_boot() -> None:
    """A driver's text goes to the sandbox as one argument of an exec (`python -I -c TEXT`, in the fallback after its
    boot code); Linux refuses an argument over MAX_ARG_STRLEN (32 pages: 128 KiB) with E2BIG, and every contest batch
    would be a sandbox error. (The stdio driver's boot reads its text on IN.)"""
    from reasoneval.scoring.programs.codeforces.judge import NATIVE_DRIVER_SOURCE
    from reasoneval.scoring.programs.sandbox import seccomp
    from reasoneval.scoring.programs.sandbox.fallback import _FALLBACK_BOOT

    for text in (DRIVER_SOURCE, STDIO_DRIVER_BOOT, NATIVE_DRIVER_SOURCE):
        assert len((_FALLBACK_BOOT + seccomp.BOOT + text).encode("utf-8")) < 32 * 4096 - 4096
