"""open-r1/codeforces' `generated_checker` run in testlib's protocol (docs/contests.md, "Codeforces": "Several right
answers: the row's generated_checker decides").

The convention, as open-r1's own code and the checkers themselves show it (docs/contests.md cites both): a generated
checker is a Python file run as `checker.py INPUT REFERENCE_OUTPUT SUBMISSION_OUTPUT` (its `main(input_path,
output_path, submission_path)` called with `sys.argv[1:4]`) that prints 1 when the submission's output is right and
0 when it is not; open-r1 (`cf_scoring.py`) counts a test passed when that run exits 0 and its stdout, stripped, is
"1", and anything else as not passed.

The judge's driver runs checkers in testlib's protocol (argv INPUT OUTPUT ANSWER; exit 0 OK, 1 wrong answer, 3 the
checker failed), in the sandbox, after every process of the program is gone, under the checker's limits. The adapter
below is such a checker: it writes the generated checker to `generated_checker.py` afresh (unlinking whatever the
program may have left under that name) and runs it in a child process of its own (the same interpreter, `-I -S`, the
same limits, the program's output as a file it reads) with the arguments in open-r1's order, and maps what it
printed: "1" -> OK, "0" -> wrong answer, a crash or any other output -> wrong answer with what happened in the detail
(open-r1 counts those as not passed), out of time -> the checker failed (a judge error: a slow checker says nothing
about the program).
"""

from __future__ import annotations

PROTOCOL = "open-r1"
# Below the driver's own wall clock for a checker (native_driver.py: 10 s CPU, 20 s wall), so that a checker that
# hangs is reported as such rather than cut off by the driver.
CHECKER_TIMEOUT_S = 15.0

_ADAPTER = '''import os
import subprocess
import sys

SOURCE = {source!r}
inp, out, ans = sys.argv[1:4]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated_checker.py")
try:
    os.unlink(path)
except FileNotFoundError:
    pass
with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8",
               errors="surrogatepass") as f:
    f.write(SOURCE)
try:
    r = subprocess.run([sys.executable, "-I", "-S", path, inp, ans, out], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout={timeout!r})
except subprocess.TimeoutExpired:
    sys.stderr.write("the generated checker ran out of time ({timeout!r} s)")
    sys.exit(3)
try:
    os.unlink(path)  # not left beside the next program of the batch
except OSError:
    pass
said = r.stdout.decode("utf-8", "replace").strip()
if r.returncode == 0 and said == "1":
    sys.exit(0)
if r.returncode == 0 and said == "0":
    sys.stderr.write("the generated checker printed 0")
    sys.exit(1)
err = r.stderr.decode("utf-8", "replace").strip().splitlines()
# the driver keeps a detail's last 300 characters: the error's last line, cut, comes last
sys.stderr.write("the generated checker did not print 1 (exit " + str(r.returncode) + ", printed " + repr(said[:20])
                 + "; not passed, as open-r1 counts it): " + (err[-1][:150] if err else ""))
sys.exit(1)
'''


def open_r1_adapter(source: str) -> str:
    """A testlib-protocol Python checker that runs `source`, an open-r1 generated_checker, in open-r1's convention."""
    return _ADAPTER.format(source=source, timeout=CHECKER_TIMEOUT_S)
