"""The trusted driver of contest programs (stdin/stdout scripts and LeetCode-style calls), run inside the sandbox
as `python -I -c <the boot, with this file's text> IN OUT` (texts.STDIO_DRIVER_BOOT); never imported by the
harness. Standard library only. Its text is keeper.py's with scratch.py's, watch.py's and program.py's (the
candidate's side: the keeper, each sample's keeper, the program's process and its watch), then prelude.py's, then
this file's (sandbox/texts.py).

Same isolation as driver.py (docs/sandbox.md). IN (a pipe from the harness: sandbox/session.py) holds batch after
batch, each two parts, a 12-digit ASCII length then that many bytes of JSON: the candidate's part ({"codes",
"mode": "stdin"|"call", "func_name", "preload", "header", "ahead", "scratch"}; the keeper's settings are the first
batch's) and the trusted part ({"tests": [{"input", "output"}], "programs", "compare", "cpu_s", "wall_s",
"memory_mb", "all_tests", "max_output", "pid_max"}). OUT is the verdict channel, one JSON line per batch.

1. The text's boot (texts.STDIO_DRIVER_BOOT) forks the **keeper** before this text is compiled and hands it the
   compiled code (`keeper_main`): no parse's leftovers in its memory. Each side ignores every signal it can and makes
   itself non-dumpable before it reads anything; the keeper's memory never holds a program, an input or an
   expected output. The keeper keeps
   CAP_SYS_ADMIN of the sandbox's user namespace (for the namespaces of each test); the driver drops every
   capability, then reads IN.
2. For each program (sample) the driver asks the keeper for a sample keeper and sends it, and no other process,
   the settings and this one program; then, per test, the test's *input* (never its output). The sample keeper
   runs the program in fresh PID and IPC namespaces for each test (stdin mode: a real script, `__main__`, the
   input on a real stdin pipe; call mode: the module as `__solution__` in one server per sample, one call
   `Solution().<func_name>(*args)` or a top-level function per test, the result as JSON), counts the CPU of every
   process of the test, ends them all, empties the scratch directories and reports (keeper.py). No process of a
   test outlives it, and no process of one sample ever holds another sample's program.
3. The driver (trusted) compares each output with the expected one, in its own interpreter, and stops at the
   first failing test unless `all_tests`. The verdict line: {"verdicts": [{"verdict", "passed", "ran", "total",
   "first", "cpu", "detail"}, ...]}; a failure of one program's judging is that program's "error" alone.
"""
import os
import sys

# <keeper>: in the sandbox this import block is keeper.py's text (without its own prelude import block)
from reasoneval.scoring.programs.sandbox.keeper import keeper_side

# </keeper>
# <prelude>: in the sandbox this import block is prelude.py's own text (a driver runs as the text of `python -I -c`,
# where no package can be imported: sandbox/texts.py); the harness and the tests import the names from there.
from reasoneval.scoring.programs.sandbox.prelude import (
    PR_SET_DUMPABLE,
    TooDeep,
    _drop_capabilities,
    _ignore_signals,
    _read_part,
    dumps,
    loads,
)

# </prelude>
# <watch>: in the sandbox this import block is dropped (keeper.py's text, above, took watch.py's in)
from reasoneval.scoring.programs.sandbox.watch import recv, send

# </watch>

# verdict classes, in the order a sample's failure is named
PASSED, WRONG, TIME, MEMORY, RUNTIME = "passed", "wrong_answer", "time_limit", "memory_limit", "runtime_error"

# a stdin sample of at least this many tests gets a forker (watch.Test.start_forker): making one costs ~1 ms, and
# it saves a test ~0.1 ms of CPU (bench/contest_speed.py, (a): no gain at ~15 tests a sample, ~10% less CPU at 60)
FORKER_TESTS = 24


# --- the trusted side: comparisons and the verdict ---

def _lines(text):
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line):
    import decimal
    try:
        return [decimal.Decimal(tok) for tok in line.split()]
    except (decimal.InvalidOperation, ValueError):
        return None


def compare_lcb(got, expected):
    """lcb_runner's stdio rule: strip, split lines, strip each; equal counts; each line equal, or all of its
    whitespace tokens equal as Decimal. None where that comparison raises (a signalling NaN: Decimal's
    InvalidOperation), which lcb_runner grades as a runtime error."""
    a, b = _lines(got), _lines(expected)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        dx = _decimals(x)
        if dx is None:
            return False
        dy = _decimals(y)
        if dy is None:
            return False
        try:
            if dx != dy:
                return False
        except ArithmeticError:  # decimal.InvalidOperation (and every other Decimal trap) derive from it
            return None
    return True


def _close(x, y):
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return False
    if fx != fx or fy != fy:
        return False
    return abs(fx - fy) <= 1e-8 + 1e-5 * abs(fy)  # numpy.allclose's default tolerances


def compare_tokens(got, expected):
    """APPS/TACO's outcome, order kept: the whitespace tokens in order, each equal or both numbers within numpy
    allclose's default tolerance (rtol 1e-5, atol 1e-8). Their checkers' last resorts (an unordered set of
    tokens, lines as sets) are not applied: they accept wrong answers (docs/contests.md)."""
    a, b = got.split(), expected.split()
    if len(a) != len(b):
        return False
    return all(x == y or _close(x, y) for x, y in zip(a, b))


def compare_call(value, expected_text, style):
    try:
        expected = loads(expected_text)
    except ValueError:
        return False
    if value == expected:  # plain JSON data on both sides (loads gives nothing deeper than the recursion limit)
        return True
    # APPS/TACO: an output given as a one-element list also matches that element
    return style == "tokens" and type(expected) is list and len(expected) == 1 and value == expected[0]


def _memory_error(head):
    err = head.get("err", "")
    return "MemoryError" in err or "Cannot allocate memory" in err


def classify(head, lim):
    """The keeper's record of one test -> None (it ran to the end) or a failure class and a short reason."""
    end = head.get("end")
    if end in ("cpu", "wall"):
        return TIME, "over the CPU time limit" if end == "cpu" else "over the wall-clock limit (waiting)"
    if end == "output":
        return WRONG, "output over the limit"
    if head.get("rss_kb", 0) > (lim.get("memory_mb") or 1 << 40) * 1024:
        return MEMORY, "over the memory limit"
    if _memory_error(head):
        return MEMORY, "MemoryError"
    if head.get("sig"):
        return RUNTIME, f"killed by signal {head['sig']}"
    if head.get("code"):
        err = head.get("err", "").strip().splitlines()
        return RUNTIME, err[-1][:200] if err else f"exit status {head['code']}"
    return None


def call_reply(out):
    """The call server's reply frame -> {"value": ...} or {"error": ..., "message": ...}; the program can write
    any bytes there (its process holds the pipe), so anything else is None, a value nested deeper than the judge
    reads is {"deep": True}."""
    try:
        reply = loads(out.decode("ascii"))
    except TooDeep:
        return {"deep": True}
    except ValueError:  # (UnicodeDecodeError is one)
        return None
    if type(reply) is not dict or not (set(reply) == {"value"} or (
            set(reply) == {"error", "message"} and type(reply["error"]) is str and type(reply["message"]) is str)):
        return None
    return reply


def failure_of(head, out, expected, mode, style, lim):
    """One test's failure class and reason from the keeper's record and the program's bytes, or None: passed."""
    if mode == "call" and head.get("end") == "reply":
        reply = call_reply(out)
        if reply is None:
            return RUNTIME, "malformed reply from the solution's process"
        if "deep" in reply:  # the expected value was read: nested this deep, the result cannot equal it
            return WRONG, "wrong answer (a result nested too deep)"
        if "error" in reply:
            name = reply["error"]
            return MEMORY if name == "MemoryError" else RUNTIME, f"{name}: {reply['message']}"
        return None if compare_call(reply["value"], expected, style) else (WRONG, "wrong answer")
    if mode == "call":
        failure = classify(head, lim) or (RUNTIME, "the solution's process ended")
        if head.get("end") == "gone" and not head.get("sig") and not _memory_error(head):
            failure = (RUNTIME, (head.get("err", "").strip().splitlines() or ["exited"])[-1])
        return failure
    failure = classify(head, lim)
    if failure is not None:
        return failure
    text = out.decode("utf-8", "replace")
    ok = compare_lcb(text, expected) if style == "lcb" else compare_tokens(text, expected)
    if ok is None:
        return RUNTIME, "the output's comparison raised (a signalling NaN), lcb_runner's runtime error"
    return None if ok else (WRONG, "wrong answer")


def _start_sample(code, lim, ctl_w, cmd_w):
    """Ask the keeper for the sample's keeper (a stdin sample's: the lean keeper's, keeper.py) and give it, and no
    other process, the settings and this one program."""
    send(ctl_w, b"l" if lim["mode"] == "stdin" else b"s")
    send(cmd_w, dumps(lim).encode("ascii"))
    send(cmd_w, code)


def _test(frame, cmd_w, res_r):
    """One test (`t`) or call (`c`): the sample keeper's record and the program's bytes (a test's stderr, the
    record's "err"); (None, the keeper's `clean` record) where the sample's keeper ended without answering."""
    send(cmd_w, frame)
    head = loads(recv(res_r).decode("ascii"))
    if type(head) is dict and "clean" in head and "end" not in head:
        return None, head
    out = recv(res_r)
    if frame[:1] == b"t":
        err = recv(res_r)
        if err:
            head["err"] = err[-800:].decode("utf-8", "replace")
    return head, out


def _until_clean(res_r):
    """The frames up to the keeper's `clean` record (what a sample's keeper that failed wrote before it), and that
    record."""
    while True:
        frame = recv(res_r)
        try:
            record = loads(frame.decode("ascii"))
        except ValueError:
            continue
        if type(record) is dict and "clean" in record and "end" not in record:
            return record


def judge_program(code, tests, part, lim, ctl_w, cmd_w, res_r):
    """Run one program's tests, each in fresh namespaces (stdin mode), or each as one call of the sample's server
    (call mode); its verdict record."""
    passed, ran, first, verdict, detail, cpu_max = 0, 0, -1, PASSED, "", 0.0
    style, mode, total, result, clean = part.get("compare", "lcb"), lim["mode"], len(tests), None, None
    _start_sample(code, dict(lim, cpu_times=total + 3) if mode == "call" else dict(lim, forker=total >= FORKER_TESTS),
                  ctl_w, cmd_w)
    kind = b"c" if mode == "call" else b"t"
    for i, test in enumerate(tests):
        head, out = _test(kind + test["input"].encode("utf-8", "surrogatepass"), cmd_w, res_r)
        if head is None:
            clean, head = out, {"end": "error", "err": "the sample's keeper ended without a record"}
        if head.get("end") == "compile":
            result = {"verdict": RUNTIME, "passed": 0, "ran": 0, "total": total, "first": 0, "cpu": 0.0,
                      "detail": _printable(str(head.get("err", "")))}
        elif head.get("end") == "error" or head.get("clean") == -1:
            why = head.get("err") if head.get("end") == "error" else "the scratch directories could not be emptied"
            result = {"verdict": "error", "passed": passed, "ran": ran, "total": total, "first": -1,
                      "cpu": round(cpu_max, 3), "detail": _printable(str(why))}
        if result is not None:
            break
        ran += 1
        cpu_max = max(cpu_max, float(head.get("cpu") or 0.0))
        try:
            failure = failure_of(head, out, test["output"], mode, style, lim)
        except Exception as e:  # (none is known) whatever the program's bytes do here is its own verdict only
            failure = (RUNTIME, f"judge: its output could not be compared ({type(e).__name__})")
        if failure is None:
            passed += 1
            continue
        if first < 0:
            first, verdict, detail = i, failure[0], failure[1]
        if not part.get("all_tests"):
            break
    if clean is None:
        send(cmd_w, b"e")
        clean = _until_clean(res_r)
    if result is None and clean.get("clean") == -1:
        verdict, first, detail = "error", -1, "the scratch directories could not be emptied"
    return result or {"verdict": verdict, "passed": passed, "ran": ran, "total": total, "first": first,
                      "cpu": round(cpu_max, 3), "detail": _printable(detail)}


DETAIL = 150  # characters of a failure's detail in the verdict line (the line stays under PIPE_BUF for 8 programs)


def _printable(text):
    return "".join(c if " " <= c <= "~" else "?" for c in text[:DETAIL])


def _error(detail):
    return {"verdict": "error", "passed": 0, "ran": 0, "total": 0, "first": -1, "cpu": 0.0,
            "detail": _printable(detail)}


def judge_batch(in_fd, ctl_w, cmd_w, res_r, started):
    """One batch (samples of one problem): its two parts from IN, each program judged in turn; the verdicts."""
    verdicts = []
    count = 0
    try:
        cand = _read_part(in_fd)
        codes = [str(c).encode("utf-8", "surrogatepass") for c in cand["codes"]]
        if not started:
            send(ctl_w, dumps({"preload": list(cand.get("preload", ())), "base": cand.get("base"),
                               "header": str(cand.get("header") or ""),
                               "ahead": list(cand.get("ahead", ())),
                               "scratch": list(cand.get("scratch", ()))}).encode("ascii"))
        part = _read_part(in_fd)
        tests = part["tests"]
        count = int(part["programs"])
        if len(codes) != count:
            raise ValueError("another number of programs than the candidate's part holds")
        lim = {"cpu_s": float(part["cpu_s"]), "wall_s": float(part["wall_s"]), "memory_mb": part.get("memory_mb"),
               "max_output": int(part.get("max_output", 1 << 26)), "mode": cand.get("mode", "stdin"),
               "func_name": cand.get("func_name") or "", "pid_max": int(part.get("pid_max") or 0)}
        for code in codes:
            verdicts.append(judge_program(code, tests, part, lim, ctl_w, cmd_w, res_r))
    except EOFError:
        if not verdicts and not count:
            raise  # IN closed between batches: the session is over
        verdicts += [_error("driver: EOFError: its input ended")] * max(0, count - len(verdicts))
    except BaseException as e:  # the driver's own failure: the programs not judged are errors
        verdicts += [_error(f"driver: {type(e).__name__}: {str(e)[:100]}")] * max(0, count - len(verdicts))
    return verdicts


def trusted_main(in_fd, verdict_fd, ctl_w, cmd_w, res_r):
    """Batch after batch from IN until it ends (a session: the harness keeps one sandbox per grading worker), every
    batch's verdicts as one JSON line on OUT: {"verdicts": [...]} (a program the driver could not judge: "error",
    that program alone where the failure was its own)."""
    started = False
    while True:
        try:
            verdicts = judge_batch(in_fd, ctl_w, cmd_w, res_r, started)
        except BaseException:
            break
        started = True
        os.write(verdict_fd, dumps({"verdicts": verdicts}).encode("ascii") + b"\n")
    os._exit(0)


def keeper_main(ctl_r, cmd_r, res_w):
    """The keeper's start: the boot's child (texts.py's STDIO_DRIVER_BOOT), a fork of an interpreter that had compiled
    nothing but the boot, running this text's code as the driver compiled it (marshalled): no parse's leftovers in
    its memory, which every test's process copies."""
    saved = _ignore_signals()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        # non-dumpable before anything else (the test's processes inherit it): without capabilities no process of
        # the sandbox can ptrace these, nor open their /proc/PID/mem, fd or environ
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError("could not make the keeper non-dumpable")
    except BaseException:
        os._exit(1)
    keeper_side(saved, libc, ctl_r, cmd_r, res_w)


def main():
    _ignore_signals()
    in_fd, verdict_fd = int(sys.argv[1]), int(sys.argv[2])
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError("could not make the driver non-dumpable")
        ctl_w, cmd_w, res_r = globals()["BOOT_KEEPER"]  # the keeper's ends of the boot's pipes
        _drop_capabilities(libc)
    except BaseException as e:
        os.write(verdict_fd, dumps({"verdicts": [], "error": f"driver: {type(e).__name__}: {str(e)[:200]}"}
                                   ).encode("ascii") + b"\n")
        os._exit(0)
    os.dup2(2, 1)
    trusted_main(in_fd, verdict_fd, ctl_w, cmd_w, res_r)


if __name__ == "__main__":
    main()
