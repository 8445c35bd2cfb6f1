"""The sandbox's seccomp filter, assembled here as classic BPF (no library: Debian's python3-seccomp binds
only the system interpreter, and the program is a few dozen instructions).

Given to bubblewrap with `--seccomp FD` (bwrap installs it, with no_new_privs, just before it runs the
program). On x86-64 it denies, with EPERM: memfd_create (anonymous memory outside RLIMIT_AS and the
tmpfs caps), ptrace and process_vm_readv/writev (reading or steering the trusted test driver), the mount
family, unshare/setns/pivot_root/chroot, keyctl, bpf, perf_event_open, userfaultfd, io_uring, module and
kexec loading; unshare() of anything but PID, IPC and network namespaces (the trusted driver's own, for the
candidate's processes, and the contest keeper's for each test; without capabilities the kernel refuses those
too) and clone() with any namespace flag but PID and IPC ones (a nested user
namespace); socket() of any family but AF_INET/AF_INET6 (EAFNOSUPPORT: no unix, netlink, packet, vsock...
sockets); clone3 answers ENOSYS (its flags cannot be inspected; libc falls back to clone); the x32 ABI and any
other architecture are denied. rt_sigaction() that sets a disposition for SIGCHLD is denied (EPERM): ignoring
SIGCHLD (or SA_NOCLDWAIT) makes children reaped by the kernel, whose CPU time then counts for no process, and the
contest judge counts every process's CPU through the reaping (keeper.py); asking for the disposition is allowed.
Elsewhere than x86-64 there is no filter (docs/sandbox.md).
"""

from __future__ import annotations

import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
AF_INET, AF_INET6 = 2, 10

# x86-64 syscall numbers
DENIED = {
    "ptrace": 101, "chroot": 161, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "pivot_root": 155, "init_module": 175, "delete_module": 176, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "perf_event_open": 298, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313, "memfd_create": 319, "bpf": 321,
    "userfaultfd": 323, "kexec_file_load": 320, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "memfd_secret": 447,
}
SOCKET, CLONE, UNSHARE, CLONE3, RT_SIGACTION = 41, 56, 272, 435, 13
CLONE_NEWPID = 0x20000000
SIGCHLD = 17
# what unshare() may ask for: PID, IPC and network namespaces; clone(): PID and IPC ones (the contest keeper forks
# each test's program into them: keeper.py); without capabilities the kernel refuses each
UNSHARE_ALLOWED = CLONE_NEWPID | 0x08000000 | 0x40000000
CLONE_FOR_TESTS = CLONE_NEWPID | 0x08000000
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80

_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def supported() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


def filter_program() -> bytes:
    """The filter as `struct sock_filter[]` bytes (what bwrap --seccomp reads)."""
    # (code, jump-true label, jump-false label, k); labels resolved to relative offsets below
    prog: list[tuple[int, str | int, str | int, int]] = [
        (_LD_ABS, 0, 0, 4),  # arch
        (_JEQ, 0, "deny", AUDIT_ARCH_X86_64),
        (_LD_ABS, 0, 0, 0),  # syscall number
        (_JGE, "deny", 0, X32_SYSCALL_BIT),
        (_JEQ, "socket", 0, SOCKET),
        (_JEQ, "clone", 0, CLONE),
        (_JEQ, "unshare", 0, UNSHARE),
        (_JEQ, "enosys", 0, CLONE3),
        (_JEQ, "sigaction", 0, RT_SIGACTION),
    ]
    prog += [(_JEQ, "deny", 0, nr) for nr in sorted(DENIED.values())]
    prog.append((_RET, 0, 0, RET_ALLOW))
    labels = {"socket": len(prog)}
    prog += [(_LD_ABS, 0, 0, 16),  # args[0] (domain), low 32 bits
             (_JEQ, 1, 0, AF_INET), (_JEQ, 0, 1, AF_INET6), (_RET, 0, 0, RET_ALLOW),
             (_RET, 0, 0, RET_ERRNO | EAFNOSUPPORT)]
    labels["clone"] = len(prog)
    prog += [(_LD_ABS, 0, 0, 16),  # args[0] (flags), low 32 bits: PID and IPC namespaces only (the contest keeper's)
             (_JSET, "deny", 0, CLONE_NAMESPACES & ~CLONE_FOR_TESTS), (_RET, 0, 0, RET_ALLOW)]
    labels["unshare"] = len(prog)
    prog += [(_LD_ABS, 0, 0, 16), (_JSET, "deny", 0, 0xFFFFFFFF & ~UNSHARE_ALLOWED),
             (_LD_ABS, 0, 0, 20), (_JEQ, 0, "deny", 0), (_RET, 0, 0, RET_ALLOW)]  # the high 32 bits: 0
    labels["sigaction"] = len(prog)
    prog += [(_LD_ABS, 0, 0, 16), (_JEQ, 0, "allow", SIGCHLD),  # args[0]: the signal
             (_LD_ABS, 0, 0, 24), (_JEQ, 0, "deny", 0),  # args[1] (the new action), low 32 bits: NULL
             (_LD_ABS, 0, 0, 28), (_JEQ, 0, "deny", 0),  # and high 32 bits
             (_RET, 0, 0, RET_ALLOW)]
    labels["allow"] = len(prog)
    prog.append((_RET, 0, 0, RET_ALLOW))
    labels["enosys"] = len(prog)
    prog.append((_RET, 0, 0, RET_ERRNO | ENOSYS))
    labels["deny"] = len(prog)
    prog.append((_RET, 0, 0, RET_ERRNO | EPERM))
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        offs = [labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
        assert all(0 <= o < 256 for o in offs)
        out += struct.pack("<HBBI", code, offs[0], offs[1], k)
    return out


# Installs the filter from within the program's interpreter (the rlimits fallback, where no bwrap installs it):
# no_new_privs, then PR_SET_SECCOMP with the filter given as the first argument after `-c` (hex).
BOOT = """import ctypes as _c, sys as _s
def _reasoneval_seccomp(prog):
    class _F(_c.Structure):
        _fields_ = [("len", _c.c_ushort), ("filter", _c.c_void_p)]
    libc = _c.CDLL(None, use_errno=True)
    buf = _c.create_string_buffer(prog, len(prog))
    fprog = _F(len(prog) // 8, _c.cast(buf, _c.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, _c.byref(fprog), 0, 0) != 0:
        _s.stderr.write("sandbox: seccomp filter refused (errno %d)\\n" % _c.get_errno())
        _s.exit(125)
_reasoneval_seccomp(bytes.fromhex(_s.argv.pop(1)))
del _reasoneval_seccomp, _c, _s
"""
# A program read from stdin, run as `python -` would (in a fresh __main__ namespace)
STDIN_PROGRAM = """import sys as _s
_src = _s.stdin.buffer.read()
del _s
exec(compile(_src, "<stdin>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
"""
