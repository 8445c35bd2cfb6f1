"""The sample keeper's per-test loop on its own (a companion of bench/contest_speed.py): one stdin sample of many
tests, run by the keeper's text as the sandbox runs it (keeper.py with its parts, on the programs' interpreter), in
a user namespace of its own (for each test's namespaces) but outside the sandbox, with and without the forker
(sandbox/watch.py, Test.start_forker), alternating, and (`--cold-capset`) with the forker but capset looked up in
each test's process, as before the keeper looked it up once (watch._clone_calls). Per test it prints the page faults
and CPU of the sample keeper, of its forker and of the test's processes (their /proc stat counters), and the whole
machine's busy time (/proc/stat: everything any process or the kernel did for the test), and the ratio of the
machine's busy time without the forker to with it.

    PYTHONPATH=src python bench/sample_keeper_loop.py [--tests 3000] [--repeats 3] [--program FILE] [--cold-capset]

The sample's program after the import header (ours) is a script that sums the numbers of its input (`--program`:
another one). The driver's side here only sends each test's input and reads its record and output.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

from reasoneval.scoring.programs.contest import BASE_PRELOAD, LCB_IMPORTS, PRELOAD
from reasoneval.scoring.programs.sandbox.interpreter import default_python
from reasoneval.scoring.programs.sandbox.texts import HERE, with_prelude

PROGRAM = "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data)))\n"

# Run as `python -I -c LOOP SETTINGS_JSON`, after the keeper's text: a sample keeper as the lean keeper forks it (the
# header's names from header_names, BASE_PRELOAD imported, gc frozen), fed by this process as the driver feeds it.
LOOP = '''
import json, os, sys, time
settings = json.loads(sys.argv[1])
names = None
if settings["lean"]:
    _import_all(settings["preload"])
    names = header_names(settings["header"], _header_module(settings["header"]).__dict__)
_clone_calls()
if settings["cold_capset"]:  # as before the keeper looked capset up: each test's process looks it up itself
    _CLONE[4].__dict__.pop("capset", None)
_import_all(settings["base"])
context = {"header": settings["header"], "main": None, "ahead": frozenset(), "preload": settings["preload"],
           "names": names, "ops": name_ops()}
_freeze()
cmd_r, cmd_w = os.pipe()
res_r, res_w = os.pipe()
keeper = os.fork()
if keeper == 0:
    os.close(cmd_w)
    os.close(res_r)
    sample_keeper({}, cmd_r, res_w, [], context)
    os._exit(1)
os.close(cmd_r)
os.close(res_w)
lim = {"cpu_s": 2.0, "wall_s": 10.0, "memory_mb": 512, "mode": "stdin", "pid_max": 1 << 22,
       "forker": settings["forker"]}  # (what the driver says from FORKER_TESTS tests on)
send(cmd_w, json.dumps(lim).encode())
send(cmd_w, (settings["header"] + "\\n" + settings["program"]).encode())


def counters(pid):
    """minflt, cminflt, utime + stime, cutime + cstime (ticks) of one process."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return [int(f[7]), int(f[8]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14])]


def forker():
    kids = open("/proc/%d/task/%d/children" % (keeper, keeper)).read().split()
    return [int(k) for k in kids][:1]


def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f) - f[3] - f[4]


def test(data):
    send(cmd_w, b"t" + data)
    record, out, _err = json.loads(recv(res_r)), recv(res_r), recv(res_r)
    return record, out


data = settings["input"].encode()
for _ in range(50):
    record, out = test(data)
forkers = forker()
a, fa, m0 = counters(keeper), [counters(p) for p in forkers], busy()
for _ in range(settings["tests"]):
    record, out = test(data)
b, fb, m1 = counters(keeper), [counters(p) for p in forkers], busy()
if record.get("end") != "exit" or record.get("code") != 0:
    raise SystemExit("the program failed: %r %r" % (record, out))
n, tick = settings["tests"], 1e6 / os.sysconf("SC_CLK_TCK")
d = [y - x for x, y in zip(a, b)]
fd = [y - x for x, y in zip(fa[0], fb[0])] if forkers else [0, 0, 0, 0]
print(json.dumps({"keeper_faults": d[0] / n, "keeper_us": d[2] * tick / n, "forker_faults": fd[0] / n,
                  "forker_us": fd[2] * tick / n, "test_faults": (d[1] + fd[1]) / n,
                  "test_us": (d[3] + fd[3]) * tick / n, "machine_us": (m1 - m0) * tick / n}))
os.close(cmd_w)
os.waitpid(keeper, 0)
'''


def run(python: str, settings: dict[str, object]) -> dict[str, float]:
    keeper = with_prelude((HERE / "keeper.py").read_text(encoding="utf-8"), "keeper.py")
    command = [python, "-I", "-c", keeper + LOOP, json.dumps(settings)]
    unshare = shutil.which("unshare")
    if unshare is None:
        raise SystemExit("sample_keeper_loop: util-linux's unshare is needed (each test's namespaces need one)")
    done = subprocess.run([unshare, "--user", "--map-root-user", *command], capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"sample_keeper_loop: the loop failed: {done.stderr[-1500:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--program", help="a file with the sample's program (after the import header)")
    ap.add_argument("--input", default="1 2 3 4 5\n", help="each test's input")
    ap.add_argument("--cold-capset", action="store_true", help="also: capset looked up in each test's process")
    a = ap.parse_args()
    program = open(a.program, encoding="utf-8").read() if a.program else PROGRAM
    python = default_python(True)
    variants = ["forker", "no forker"] + (["cold capset"] if a.cold_capset else [])
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for r in range(a.repeats):
        for variant in (variants if r % 2 == 0 else variants[::-1]):
            settings = {"forker": variant != "no forker", "cold_capset": variant == "cold capset", "lean": True,
                        "header": LCB_IMPORTS, "preload": list(PRELOAD), "base": list(BASE_PRELOAD),
                        "program": program, "input": a.input, "tests": a.tests}
            row = run(python, settings)
            rows[variant].append(row)
            print(f"{variant:11}: per test: sample keeper {row['keeper_faults']:.0f} "
                  f"faults {row['keeper_us']:.0f} us; forker {row['forker_faults']:.0f} faults "
                  f"{row['forker_us']:.0f} us; the test's processes {row['test_faults']:.0f} faults "
                  f"{row['test_us']:.0f} us; the machine {row['machine_us']:.0f} us", flush=True)
    best = {k: min(r["machine_us"] for r in v) for k, v in rows.items()}
    print(f"machine busy per test, least of {a.repeats}: no forker {best['no forker']:.0f} us, forker "
          f"{best['forker']:.0f} us: no forker / forker = {best['no forker'] / best['forker']:.2f} ({a.tests} tests a "
          f"run, {python})")
    if a.cold_capset:
        test = {k: min(r["test_us"] for r in v) for k, v in rows.items()}
        print(f"the test's processes' CPU per test, least of {a.repeats}: capset looked up in each "
              f"{test['cold capset']:.0f} us, looked up once in the keeper {test['forker']:.0f} us: "
              f"{test['cold capset'] / test['forker']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
