"""What both trusted drivers (driver.py: HumanEval/MBPP; stdio_driver.py: contest programs) do alike, before and
around the candidate: signals, framed pipes, strict JSON, and the driver's own hardening. Standard library only.

A driver runs inside the sandbox as the text of `python -I -c`, where no package can be imported: `driver_source`
(sandbox/texts.py) puts this file's text in place of the driver's `# <prelude>` ... `# </prelude>` import block.
In the harness (and the tests) the drivers import these names from here.
"""
import _json
import _signal  # type: ignore[import-not-found]
import os

PR_SET_DUMPABLE = 4
CLONE_NEWPID = 0x20000000
CAPABILITY_VERSION_3 = 0x20080522
# signals left as they are: uncatchable, faults (a fault is fatal whatever the handler), and SIGCHLD (waitpid)
_KEEP_SIGNALS = (9, 19, 4, 5, 7, 8, 11, 31, 17)  # KILL STOP ILL TRAP BUS FPE SEGV SYS CHLD


def _ignore_signals():
    """Ignore every signal that can be ignored; returns the handlers Python started with (the candidate's)."""
    saved = {}
    for sig in range(1, _signal.NSIG):
        if sig in _KEEP_SIGNALS:
            continue
        try:
            saved[sig] = _signal.signal(sig, _signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    return saved


def _restore_signals(saved):
    for sig, handler in saved.items():
        try:
            _signal.signal(sig, _signal.SIG_DFL if handler is None else handler)
        except (OSError, ValueError, RuntimeError, TypeError):
            pass


def _read_exact(fd, n):
    chunks = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError("closed")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        raise ValueError("JSON constant " + name)


_scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]


class TooDeep(ValueError):
    """JSON nested deeper than the interpreter's recursion limit."""


def loads(text):
    """One JSON value, the whole text (the C scanner of the json package, without the package, which imports
    `re`: milliseconds at every program's start). Any malformed text, whatever its bytes or depth, is a ValueError:
    the only exception a caller has to handle (docs/contests.md: the trusted side is total)."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise TooDeep("JSON nested too deep") from None
    if end != len(text):
        raise ValueError("text after the JSON value")
    return value


def dumps(x):
    """JSON text of None, bool, int, float (finite), str, list, and dict with str keys: what encode() gives, and
    every record the drivers write; anything else is a ValueError."""
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    t = type(x)
    if t is int:
        return int.__repr__(x)
    if t is float:
        if x != x or x in (_INF, -_INF):
            raise ValueError("non-finite float")
        return float.__repr__(x)
    if t is str:
        return _json.encode_basestring_ascii(x)
    if t is list:
        return "[" + ",".join([dumps(v) for v in x]) + "]"
    if t is dict:
        return "{" + ",".join([_json.encode_basestring_ascii(k) + ":" + dumps(v) for k, v in x.items()]) + "}"
    raise ValueError("cannot write a " + t.__name__)


_INF = float("inf")


def _read_part(in_fd):
    """The candidate's part of the input: a 12-digit ASCII length, then that many bytes of JSON (the trusted part
    after it is read only once the candidate's process is forked)."""
    head = _read_exact(in_fd, 12)
    if not head.isdigit():
        raise ValueError("driver: malformed input")
    return loads(_read_exact(in_fd, int(head)).decode("ascii"))


def _own_pid_namespace_for_children(libc):
    """Give the processes forked from now on a PID namespace of their own (unless the fallback's boot code did);
    True when they will have one."""
    def link(name):
        try:
            return os.readlink("/proc/self/ns/" + name)
        except FileNotFoundError:
            return None  # pid_for_children of a namespace that has no process yet
        except OSError:
            return "?"

    if link("pid_for_children") == link("pid"):
        libc.unshare(CLONE_NEWPID)  # needs CAP_SYS_ADMIN in this user namespace: refused elsewhere, then False
    children = link("pid_for_children")
    return children is None or (children != "?" and children != link("pid"))


def _no_capabilities():
    """capset(2)'s arguments for no capability in any set (made ahead: a test's process then only calls it)."""
    import ctypes  # (imported already by _harden)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    return ctypes.byref(Header(CAPABILITY_VERSION_3, 0)), (ctypes.c_uint32 * 6)()


def _drop_capabilities(libc, nothing=None):
    """No capability left in any set (bwrap gives the driver CAP_SYS_ADMIN in the sandbox's user namespace for
    the unshare above; nothing the candidate runs may have it). `nothing`: _no_capabilities() made ahead."""
    header, data = nothing or _no_capabilities()
    if libc.capset(header, data) != 0:
        import ctypes
        raise OSError(ctypes.get_errno(), "capset failed")


def _harden():
    """Non-dumpable, a PID namespace for the processes forked from now on, no capability: before the first fork."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    # Non-dumpable before the fork (the children inherit it, and nothing of the candidate's has run yet): without
    # capabilities, no process of the sandbox can ptrace this one, nor open its /proc/PID/mem, fd or environ.
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError("could not make the driver non-dumpable")
    _own_pid_namespace_for_children(libc)
    _drop_capabilities(libc)
