"""The contest keeper's cleanup of the private scratch directories after each test (keeper.py): without recursion,
whatever the modes, depth, names or number of entries a program left. Part of the stdio driver's text in the
sandbox (sandbox/texts.py); standard library only."""
import os
import stat

PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def empty_private_dirs(dirs):
    """Empty the sandbox's private scratch directories (the harness names each with the size of the tmpfs the
    sandbox mounts there; one of another size, never a host directory, is left alone), each entry with `_remove`
    (no recursion, no depth, mode or name can stop or crash it). Returns the number of entries removed, or -1
    where one is left (the sample is then a sandbox_error)."""
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
            names = os.listdir(fd)
            for name in names:
                _remove(os.path.join(top, name))
            removed += len(names)
            failed = failed or bool(os.listdir(fd))
        except BaseException:
            failed = True
        finally:
            os.close(fd)
    return -1 if failed else removed


def free_counts(dirs):
    """Each scratch directory's free inodes and blocks (statvfs): what `left_in` compares with."""
    out = []
    for top, _size in dirs:
        try:
            st = os.statvfs(top)
            out.append((st.f_ffree, st.f_bfree) if st.f_files else None)  # (a tmpfs without an inode limit: None)
        except OSError:
            out.append(None)
    return out


def left_in(dirs, empty):
    """Whether anything is left in the scratch directories: their free inodes and blocks against `empty`
    (free_counts of them empty; every entry a program leaves holds an inode), else one listing each (what a test
    that wrote nothing costs: one statvfs per directory); empty_private_dirs then looks at each as its docstring
    says."""
    for (top, _size), counts in zip(dirs, empty):
        try:
            if counts is not None:
                st = os.statvfs(top)
                if (st.f_ffree, st.f_bfree) != counts:
                    return True
            elif os.listdir(top):
                return True
        except OSError:
            return True
    return False


def _remove(path):
    """Remove `path` and, if it is a directory, everything under it, however deep and whatever the modes the
    program gave its directories: no recursion (a tree thousands deep), no path longer than a name (each level is
    opened relative to the one above it), a directory it cannot list made listable first (the keeper's uid owns
    every file the program made). What cannot be removed is left, never an exception."""
    try:
        os.unlink(path)
        return
    except OSError:
        pass
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return
        os.chmod(path, 0o700)
        fd = os.open(path, flags)
    except OSError:
        return
    names = []  # the directories opened below `path`, outermost first (only the innermost one's fd is held)
    skip: list = [set()]  # per level: directories that could not be entered or removed
    budget = 1 << 20  # directory visits: a bound, whatever the program left
    while budget > 0:
        budget -= 1
        entry = None
        try:
            with os.scandir(fd) as it:  # one pass: every file of the level unlinked, the first directory entered
                for e in it:
                    if e.name in skip[-1]:
                        continue
                    try:
                        os.unlink(e.name, dir_fd=fd)
                    except OSError:
                        if entry is None:
                            entry = e.name
        except OSError:
            pass
        if entry is not None:
            try:
                os.chmod(entry, 0o700, dir_fd=fd)
                child = os.open(entry, flags, dir_fd=fd)
            except OSError:
                skip[-1].add(entry)
                continue
            os.close(fd)
            fd = child
            names.append(entry)
            skip.append(set())
            continue
        if not names:
            break
        try:
            parent = os.open("..", flags, dir_fd=fd)
        except OSError:
            break
        os.close(fd)
        fd = parent
        skip.pop()
        name = names.pop()
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:
            skip[-1].add(name)
    os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass
