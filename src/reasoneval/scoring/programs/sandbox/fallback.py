"""The rlimits fallback's own parts (run.py): the boot code its interpreter runs first, as root of the program's
new namespaces (mounts, the uid drop), and the host directories it covers (world-writable ones, third-party
packages)."""

from __future__ import annotations

import os
from pathlib import Path

SHM_BYTES = 1 << 20  # /dev/shm (POSIX semaphores need a little; memory is bounded elsewhere)
VAR_TMP_BYTES = 1 << 20  # a private /var/tmp, as small

# The rlimits fallback's boot, run by the sandbox's interpreter itself as (namespace) root in the program's new
# mount namespace (private propagation), before anything else: every mount point read-only (its own copies), a
# bounded /tmp, /dev/shm and /var/tmp of its own, an empty read-only tmpfs over every other world-writable
# directory and over the directories to hide, then (for the trusted driver) a PID namespace for the processes it
# forks (the candidate's: driver.py), then it drops to the slot's uid, with the parent-death signal set again (a
# change of uid clears it). A mount point it cannot make read-only is named on stderr ("sandbox: read-only
# remount of"). argv after -c: the size of /tmp in bytes, the directories to hide and the world-writable ones
# (":"-separated), 1 for the driver (0: a plain program, whose children stay in its namespace; 2: the contest
# driver, which makes namespaces for each test itself: as root it gets a user namespace of its own after the uid
# drop, whose capabilities allow that, and /proc is covered by an empty tmpfs), the uid to become (-1: stay).
_FALLBACK_BOOT = """import ctypes as _c, os as _o, sys as _s
def _reasoneval_boot(size, hide, empty, driver, uid):
    libc = _c.CDLL(None, use_errno=True)
    def mount(target, opts, flags=0):
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, opts.encode()) != 0:
            _s.stderr.write("sandbox: mount of %s failed (errno %d)\\n" % (target, _c.get_errno()))
            _s.exit(125)
    carried = {"nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    with open("/proc/self/mountinfo", "rb") as f:
        info = f.read().decode("utf-8", "surrogateescape").splitlines()
    for line in info:
        fields = line.split()
        point = fields[4]
        for code, char in (("\\\\040", " "), ("\\\\011", "\\t"), ("\\\\012", "\\n"), ("\\\\134", "\\\\")):
            point = point.replace(code, char)
        if driver == "2" and uid >= 0 and point == "/proc":
            continue  # its maps are written below; then an empty tmpfs covers it
        flags = 32 | 4096 | 1  # MS_REMOUNT | MS_BIND | MS_RDONLY, and the flags the mount already has
        for opt in fields[5].split(","):
            flags |= carried.get(opt, 0)
        if libc.mount(None, point.encode("utf-8", "surrogateescape"), None, flags, None) != 0:
            _s.stderr.write("sandbox: read-only remount of %s failed (errno %d)\\n" % (point, _c.get_errno()))
    mount("/dev/shm", "size=%d,mode=1777" % SHM_BYTES)
    mount("/tmp", "size=%s,mode=1777" % size)
    for d in filter(None, empty.split(":")):
        if d == "/var/tmp":
            mount(d, "size=%d,mode=1777" % VAR_TMP_BYTES)
        elif d not in ("/tmp", "/dev/shm"):
            mount(d, "size=4096,mode=755", 1)  # MS_RDONLY
    for d in filter(None, hide.split(":")):
        mount(d, "size=4096,mode=755", 1)
    _o.chdir("/tmp")
    _o.environ["HOME"] = _o.environ["TMPDIR"] = "/tmp"
    if driver == "1":
        libc.unshare(0x20000000)  # CLONE_NEWPID: the driver's children (the candidate's side) get their own
    if driver == "2" and uid < 0:
        mount("/proc", "size=4096,mode=555", 1)
    if uid >= 0:
        _o.setgroups([])
        _o.setgid(uid)
        _o.setuid(uid)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    if driver == "2" and uid >= 0:
        # CLONE_NEWUSER | CLONE_NEWNS: capabilities in a user namespace of the slot uid's (the host's uid stays);
        # dumpable for a moment (the uid change cleared it) so that its /proc/self maps are its own to write; the
        # driver makes itself non-dumpable again before it forks anything
        libc.prctl(4, 1, 0, 0, 0)
        if libc.unshare(0x10000000 | 0x20000) != 0:
            _s.stderr.write("sandbox: user namespace refused (errno %d)\\n" % _c.get_errno())
            _s.exit(125)
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                           ("gid_map", "%d %d 1" % (uid, uid))):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
        mount("/proc", "size=4096,mode=555", 1)
_reasoneval_boot(_s.argv.pop(1), _s.argv.pop(1), _s.argv.pop(1), _s.argv.pop(1), int(_s.argv.pop(1)))
del _reasoneval_boot, _c, _o, _s
""".replace("SHM_BYTES", str(SHM_BYTES)).replace("VAR_TMP_BYTES", str(VAR_TMP_BYTES))

def world_writable_dirs(root: str = "/", depth: int = 3) -> list[str]:
    """Directories any user may write to, down to `depth` levels under `root` (not under /proc or /sys, nor
    inside one already found): the fallback gives the program an empty one of its own in each place."""
    found: list[str] = []
    level = [root]
    for _ in range(depth):
        deeper: list[str] = []
        for d in level:
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.path in ("/proc", "/sys") or not e.is_dir(follow_symlinks=False):
                        continue
                    writable = e.stat(follow_symlinks=False).st_mode & 0o002
                except OSError:
                    continue
                (found if writable else deeper).append(e.path)
        level = deeper
    return sorted(found)


def _third_party_dirs(prefix: str) -> list[str]:
    """The site-packages / dist-packages directories under an installation prefix (hidden in the sandbox)."""
    out = []
    for lib in ("lib", "lib64", "local/lib"):
        base = Path(prefix) / lib
        try:
            entries = sorted(base.iterdir())
        except OSError:
            continue
        for d in entries:
            if d.name == "python3" or (d.name.startswith("python3.") and not d.is_symlink()):
                out += [str(d / s) for s in ("site-packages", "dist-packages") if (d / s).is_dir()]
    return out
