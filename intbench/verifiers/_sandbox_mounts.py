"""Build the sandbox's root filesystem in a fresh mount namespace (``unshare`` level).

Standard library only: put in front of the runner's source and called, still
as root (or as the namespace's owner), before the runner drops privileges.
It mounts a tmpfs on a host directory the parent created, binds into it
read-only what the sandbox may see (the same list bubblewrap gets), adds
``/proc``, a minimal ``/dev`` and a size-limited work directory, then
switches to it with ``pivot_root``, detaching the old root: the host filesystem is
gone from the namespace, not merely hidden.  Paths keep their host names, so
the interpreter's own ``sys.path`` stays valid after the switch.
"""

_MOUNTS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # no glibc wrapper
_MOUNTS_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def _mounts_libc_call(name, *args):
    """Call libc ``name`` with C-typed ``args``; OSError with its errno on failure."""
    import ctypes
    import os

    function = getattr(ctypes.CDLL(None, use_errno=True), name)
    if function(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}{args!r}: {os.strerror(errno)}")


def _mounts_mount(source, target, fstype, flags, data=None):
    import ctypes

    def c_string(text):
        return None if text is None else ctypes.c_char_p(text.encode())

    args = (c_string(source), c_string(target), c_string(fstype), ctypes.c_ulong(flags))
    _mounts_libc_call("mount", *args, c_string(data))


def _mounts_bind_read_only(source, target):
    """Bind ``source`` on ``target`` read-only, keeping the flags the kernel locked."""
    import os

    ms_rdonly, ms_nosuid, ms_nodev, ms_remount, ms_bind = 1, 2, 4, 32, 4096
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    _mounts_mount(source, target, None, ms_bind)
    # A bind's remount must repeat flags inherited from a less privileged
    # namespace; statvfs reports them with the same values as MS_* (but relatime).
    inherited = os.statvfs(target).f_flag & (8 | 1024 | 2048)  # noexec, noatime, nodiratime
    relatime = (1 << 21) if os.statvfs(target).f_flag & 4096 else 0
    flags = ms_remount | ms_bind | ms_rdonly | ms_nosuid | ms_nodev | inherited | relatime
    _mounts_mount(None, target, None, flags)


def _mounts_make_dev(root, shm_bytes):
    """A read-only tmpfs /dev holding only harmless device nodes and a private /dev/shm."""
    import os

    ms_rdonly, ms_nosuid, ms_remount, ms_bind = 1, 2, 32, 4096
    dev = root + "/dev"
    os.makedirs(dev, 0o755, exist_ok=True)
    _mounts_mount("tmpfs", dev, "tmpfs", ms_nosuid, "mode=0755,size=64k")
    for name in _MOUNTS_DEVICES:
        if os.path.exists("/dev/" + name):
            os.close(os.open(f"{dev}/{name}", os.O_WRONLY | os.O_CREAT, 0o644))
            _mounts_mount("/dev/" + name, f"{dev}/{name}", None, ms_bind)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(dev + "/shm")
    # Device nodes stay writable on a read-only mount; new files cannot appear.
    _mounts_mount(None, dev, None, ms_remount | ms_rdonly | ms_nosuid)
    # multiprocessing's semaphores need a writable /dev/shm.
    _mounts_mount("tmpfs", dev + "/shm", "tmpfs", ms_nosuid | 4, f"mode=01777,size={shm_bytes}")


def _mounts_enter_root(spec):
    """Build the root described by ``spec`` (JSON text) and pivot into it."""
    import ctypes
    import json
    import os

    spec = json.loads(spec)
    ms_rdonly, ms_nosuid, ms_nodev, ms_noexec, ms_remount, ms_rec, ms_private = (
        1, 2, 4, 8, 32, 16384, 1 << 18,
    )  # fmt: skip
    root = spec["root"]
    _mounts_mount(None, "/", None, ms_rec | ms_private)  # nothing leaks back to the host
    _mounts_mount("tmpfs", root, "tmpfs", ms_nosuid | ms_nodev, "mode=0755,size=1m")
    for op, dest, source in spec["mounts"]:
        target = root + dest
        if op == "dir":
            os.makedirs(target, 0o755, exist_ok=True)
        elif op == "symlink":
            os.symlink(source, target)
        elif op == "ro-bind":
            _mounts_bind_read_only(source, target)
        elif op == "tmpfs":  # hides what lies below (e.g. site-packages)
            os.makedirs(target, 0o755, exist_ok=True)
            _mounts_mount("tmpfs", target, "tmpfs", ms_rdonly | ms_nosuid | ms_nodev, "size=4k")
        else:
            raise OSError(f"unknown mount operation {op!r}")
    os.makedirs(root + "/proc", 0o755)
    _mounts_mount("proc", root + "/proc", "proc", ms_nosuid | ms_nodev | ms_noexec)
    _mounts_make_dev(root, spec["shm_bytes"])
    workdir = root + spec["workdir"]
    os.makedirs(workdir, 0o755, exist_ok=True)
    _mounts_mount("tmpfs", workdir, "tmpfs", ms_nosuid | ms_nodev,
                  f"mode=01777,size={spec['workdir_bytes']}")  # fmt: skip
    _mounts_mount(None, root, None, ms_remount | ms_rdonly | ms_nosuid | ms_nodev)
    machine = os.uname().machine
    if machine not in _MOUNTS_PIVOT_ROOT:
        raise OSError(f"no pivot_root number for architecture {machine!r}")
    os.chdir(root)
    _mounts_libc_call("syscall", ctypes.c_long(_MOUNTS_PIVOT_ROOT[machine]), b".", b".")
    _mounts_libc_call(
        "umount2", b".", ctypes.c_int(2)
    )  # MNT_DETACH: drop the old root stacked on "."
    os.chdir(spec["workdir"])
