"""The contest keeper's cleanup of the private scratch directories after each test (keeper.py): without recursion,
whatever the modes, depth, names or number of entries a program left. Part of the stdio driver's text in the
sandbox (sandbox/texts.py); standard library only."""
import os

PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def empty_private_dirs(dirs):
    """Empty the sandbox's private scratch directories (the harness names each with the size of the tmpfs the
    sandbox mounts there; one of another size, never a host directory, is left alone). No recursion: each
    directory is made 0700, its entries moved up to the top, then it is removed, so no depth, mode, name or
    number of entries can stop or crash this; every pass removes or moves something, or it stops (the work is
    bounded by what the test's CPU could make). Returns the number of entries removed, or -1 where one could not
    be (the sample is then a sandbox_error)."""
    removed, failed = 0, False
    for top, size in dirs:
        if top not in PRIVATE_DIRS:
            continue
        try:
            st = os.statvfs(top)
            if st.f_blocks * st.f_frsize != size:
                continue
            fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            failed = True
            continue
        try:
            n, ok = _empty(fd)
            removed += n
            failed = failed or not ok
        except BaseException:
            failed = True
        finally:
            os.close(fd)
    return -1 if failed else removed


def _empty(top):
    serial = 0
    removed = 0
    while True:
        try:
            names = os.listdir(top)
        except OSError:
            return removed, False
        if not names:
            return removed, True
        progress = False
        for name in names:
            try:
                st = os.stat(name, dir_fd=top, follow_symlinks=False)
            except OSError:
                continue
            if (st.st_mode & 0o170000) != 0o040000:
                try:
                    os.unlink(name, dir_fd=top)
                    removed += 1
                    progress = True
                except OSError:
                    pass
                continue
            try:  # (a directory, not a link, as lstat said: nothing of the test runs any more to swap it)
                os.chmod(name, 0o700, dir_fd=top)
            except OSError:
                pass
            try:
                os.rmdir(name, dir_fd=top)
                removed += 1
                progress = True
                continue
            except OSError:
                pass
            # not empty: move each entry up to the top (a fresh name), so the next pass finds it there
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
            except OSError:
                continue
            try:
                for inner in os.listdir(sub):
                    serial += 1
                    try:
                        os.rename(inner, f".reasoneval-clean-{serial}", src_dir_fd=sub, dst_dir_fd=top)
                        progress = True
                    except OSError:
                        pass
            except OSError:
                pass
            finally:
                os.close(sub)
        if not progress:
            return removed, False
