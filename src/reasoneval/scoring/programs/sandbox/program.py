"""The program's own process in a contest test (forked by the sample's keeper into fresh namespaces, keeper.py): a
stdin program as a real script, a LeetCode-style program as a server of the sample's calls, with its limits. Part of
the stdio driver's text in the sandbox (sandbox/texts.py); standard library only."""
# atexit: imported here, in the keeper, once (a test's process that imported it at its end took ~40 more page
# copies, ~0.15 ms of its ~1.2)
import atexit
import os
import resource
import sys

# <prelude>: in the sandbox this import block is dropped (the driver's text holds prelude.py's text)
from reasoneval.scoring.programs.sandbox.prelude import _restore_signals

# </prelude>


def rlimits(cpu_s, memory_mb):
    """The test's rlimits, as (resource, (soft, hard)) pairs, worked out once per sample in its keeper: a test's
    process only sets them (every call it makes in a fresh fork copies pages)."""
    soft = int(cpu_s) + 1
    out = [(resource.RLIMIT_CPU, (soft, soft + 1))]
    if memory_mb:
        try:
            hard = resource.getrlimit(resource.RLIMIT_AS)[1]
            want = memory_mb << 20
            if hard == resource.RLIM_INFINITY or want < hard:
                out.append((resource.RLIMIT_AS, (want, want)))
        except (ValueError, OSError):
            pass
    return out


def set_rlimits(pairs):
    for which, pair in pairs:
        try:
            resource.setrlimit(which, pair)
        except (ValueError, OSError):
            pass


def _finish_script():
    """What the interpreter does at the end of a script: wait for its threads, run atexit, flush."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _print_traceback():
    """The traceback an uncaught exception prints, by the interpreter's own hook (no `traceback` import: a test's
    process of a lean keeper has not loaded it, and importing it costs ~8 ms of the program's CPU)."""
    try:
        sys.__excepthook__(*sys.exc_info())
    except BaseException:
        pass


def script_module(module=None):
    """The `__main__` module a sample's stdin program runs in (`module`: one its import header already ran in), set up
    once in the sample's keeper with `sys.argv`: each test's process, a fork, finds them as a script does."""
    if module is None:
        module = type(sys)("__main__")
        module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    sys.argv = ["solution.py"]
    return module


def run_script(compiled, module):
    """The test's program (stdin mode): a real script, in `module` (script_module's)."""
    code = 0
    try:
        exec(compiled, module.__dict__)
    except SystemExit as e:
        # lcb_runner's wrapper catches SystemExit: the output so far is judged (docs/contests.md)
        if e.code is not None and not isinstance(e.code, int):
            try:
                sys.stderr.write(str(e.code) + "\n")
            except BaseException:
                pass
    except BaseException:
        _print_traceback()
        code = 1
    _finish_script()
    os._exit(code)


_NOT_JSON = {"\u0000not-json": True}  # a marker that equals no value json.loads gives


def _plain(x, top):
    """The call's result as JSON-able data: a top-level tuple as a list (lcb_runner's rule), nested values as they
    are (a nested tuple or a set, which no JSON value equals, becomes the marker)."""
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if x == x and x not in (float("inf"), float("-inf")) else _NOT_JSON
    if t is list or (top and t is tuple):
        return [_plain(v, False) for v in x]
    if t is dict and all(type(k) is str for k in x):
        return {k: _plain(v, False) for k, v in x.items()}
    return _NOT_JSON


def _frame(fd, data):
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(fd, view):]


def _read_frame(fd):
    def exact(n):
        chunks = []
        while n > 0:
            b = os.read(fd, min(n, 1 << 20))
            if not b:
                raise EOFError
            chunks.append(b)
            n -= len(b)
        return b"".join(chunks)
    return exact(int.from_bytes(exact(4), "big"))


def serve_calls(compiled, func_name, saved, req_r, reply_w):
    """The sample's program (call mode): load the module once (named `__solution__`, so a `__main__` block does not
    run, as under lcb_runner), say `L`, then one call per request, `Solution().<func_name>(*args)` (or a top-level
    function), args being `json.loads` of each input line; each reply a frame. Its module's state stays from call
    to call (as under lcb_runner). What the program's children left is reaped after each call."""
    _restore_signals(saved)
    import json
    module = type(sys)("__solution__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__solution__"] = module
    try:
        exec(compiled, module.__dict__)
        holder = module.__dict__["Solution"]() if "Solution" in module.__dict__ else None
        method = getattr(holder, func_name) if holder is not None else module.__dict__[func_name]
    except BaseException as e:
        _print_traceback()
        _frame(reply_w, json.dumps({"error": type(e).__name__, "message": str(e)[:300]}).encode("ascii"))
        os._exit(1)
    _frame(reply_w, b"L")
    while True:
        try:
            data = _read_frame(req_r)
        except BaseException:
            os._exit(0)
        try:
            args = [json.loads(line) for line in data.decode("utf-8", "surrogatepass").split("\n")]
            reply = json.dumps({"value": _plain(method(*args), True)}, ensure_ascii=True)
        except BaseException as e:  # SystemExit inside a call too: one failed call
            _print_traceback()
            reply = json.dumps({"error": type(e).__name__, "message": str(e)[:300]}, ensure_ascii=True)
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        _frame(reply_w, reply.encode("ascii"))
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except OSError:
            pass
