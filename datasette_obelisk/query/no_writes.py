"""Forbid the current process to create, change or delete any file (Linux Landlock).

A query script runs in its own child process, whose connection is read-only
three ways (``readonly.py``). Python cannot hide that connection from code
running in the same process, though: a script can reach it through the
helpers' internals and undo those locks. So before the script starts, the
child asks the kernel to refuse it every file write from then on. Files it
already holds open stay usable (the database it reads, the pipe to the parent).

Landlock is in Linux since 5.13; where it is missing (another system, an old
kernel, a sandbox that filters the call) ``forbid_file_writes`` returns
False and the read-only connection is the only guard.
"""

from __future__ import annotations

import ctypes
import sys

# The same numbers on every Linux architecture (added after the tables were unified).
SYS_CREATE_RULESET, SYS_RESTRICT_SELF = 444, 446
CREATE_RULESET_VERSION = 1
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (``LANDLOCK_ACCESS_FS_*``) that change something, by the ABI
# version that introduced them; the ones left out (execute, read file, read dir)
# stay allowed.
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_ANY = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14
RIGHTS_BY_ABI = ((1, WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_ANY), (2, REFER), (3, TRUNCATE))


def write_rights(abi: int) -> int:
    """Every right that changes the filesystem which this ABI version knows."""
    return sum(rights for version, rights in RIGHTS_BY_ABI if abi >= version)


def forbid_file_writes() -> bool:
    """Irreversibly refuse this process (and its children) every file write.

    True when the kernel now enforces it, False when Landlock is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
        if abi < 1:
            return False
        # struct landlock_ruleset_attr starts with handled_access_fs; the
        # kernel accepts a shorter struct than its own.
        attr = ctypes.c_uint64(write_rights(abi))
        ruleset = libc.syscall(
            SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
        )
        if ruleset < 0:
            return False
        try:
            # No rule grants any right back: the handled rights are refused everywhere.
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                return False
            return libc.syscall(SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) == 0
        finally:
            libc.close(ruleset)
    except (OSError, AttributeError):
        return False
