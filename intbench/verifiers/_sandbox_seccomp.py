"""Seccomp filter that keeps sandboxed code out of the kernel's escape hatches.

Standard library only: this file is put in front of ``_sandbox_runner.py``
and run with ``python -I -S -c``, so it holds only private, prefixed names
and runs nothing at import.  The runner calls :func:`install_seccomp_filter`
right after dropping its privileges; the filter is inherited by every process
the program starts.

The filter (classic BPF) answers ``EPERM`` for namespace, mount, tracing,
keyring, BPF, module and kexec system calls, for ``io_uring`` (its requests
bypass seccomp), for SysV IPC and POSIX message queues (state that would
outlive a test: the tests of one run share its IPC namespace) and for
``clone`` with any ``CLONE_NEW*`` flag.  ``clone3``
gets ``ENOSYS``: its flags sit in memory the filter cannot read, and glibc
then falls back to ``clone``.  A call made under another architecture (e.g.
the 32-bit or x32 ABIs on x86_64) kills the process.
"""

# System calls answered EPERM: name -> number per architecture, in the columns of
# _SECCOMP_ARCHES (None where an architecture has no such call).
_SECCOMP_DENIED = {
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "pidfd_getfd": (438, 438),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280),
    "perf_event_open": (298, 241), "userfaultfd": (323, 282), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "init_module": (175, 105),
    "finit_module": (313, 273), "delete_module": (176, 106), "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "acct": (163, 89), "quotactl": (179, 60), "syslog": (103, 116),
    "iopl": (172, None), "ioperm": (173, None),
    # SysV IPC and POSIX message queues: objects that outlive the test that made them
    # (every test shares the run's IPC namespace, and unshare is refused above).
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
}  # fmt: skip
# Per architecture, in the column order of _SECCOMP_DENIED: audit arch, clone, clone3 and
# the lowest number of a foreign ABI sharing the audit arch (x32), or None.
_SECCOMP_ARCHES = {
    "x86_64": (0xC000003E, 56, 435, 0x40000000),
    "aarch64": (0xC00000B7, 220, 435, None),
}
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET.  (CLONE_NEWTIME
# shares its bit with clone()'s exit signal and is refused through clone3.)
_SECCOMP_CLONE_NEW_FLAGS = 0x7E020000


def _seccomp_program(machine):
    """The BPF program for ``machine`` as bytes of ``struct sock_filter``."""
    import struct

    if machine not in _SECCOMP_ARCHES:
        raise OSError(f"no seccomp filter for architecture {machine!r}")
    arch, clone, clone3, foreign_abi = _SECCOMP_ARCHES[machine]
    column = list(_SECCOMP_ARCHES).index(machine)
    in_column = (numbers[column] for numbers in _SECCOMP_DENIED.values())
    denied = {number for number in in_column if number is not None}
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF opcodes
    allow, kill = 0x7FFF0000, 0x80000000  # SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38  # SECCOMP_RET_ERRNO | errno
    # seccomp_data: nr at 0, arch at 4, args[0] (low half on little endian) at 16.
    code = [(load, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (load, 0, 0, 0)]
    if foreign_abi is not None:
        code += [(jge, 0, 1, foreign_abi), (ret, 0, 0, kill)]
    for number in sorted(denied):
        code += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    code += [(jeq, 0, 1, clone3), (ret, 0, 0, enosys)]
    code += [(jeq, 0, 3, clone), (load, 0, 0, 16), (jset, 0, 1, _SECCOMP_CLONE_NEW_FLAGS)]
    code += [(ret, 0, 0, eperm), (ret, 0, 0, allow)]
    return b"".join(struct.pack("=HBBI", *insn) for insn in code), len(code)


def install_seccomp_filter():
    """Set no-new-privileges and install the filter on this process; OSError if impossible."""
    import ctypes
    import os

    program, length = _seccomp_program(os.uname().machine)

    class _SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program)
    fprog = _SockFprog(length, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(38, 1, None, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        errno = ctypes.get_errno()
        raise OSError(errno, f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(errno)}")
    if prctl(22, 2, ctypes.addressof(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        errno = ctypes.get_errno()
        raise OSError(errno, f"installing the seccomp filter failed: {os.strerror(errno)}")
