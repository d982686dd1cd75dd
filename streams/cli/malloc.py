"""Fewer malloc arenas in neardup's processes, where the C library is glibc.

glibc gives each thread that allocates its own arena (up to eight per core), and memory freed
in one is kept for that arena's thread: RocksDB's flush and compaction threads, the prepare
thread and the interpreter each hold freed memory the others cannot reuse. Two arenas is the
usual advice for RocksDB under glibc (MALLOC_ARENA_MAX=2); set in the process, before its
threads start, because a run cannot count on its environment. A value given in the
environment is left as it is.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["limit_malloc_arenas"]

_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Ask glibc for at most ``arenas`` malloc arenas; False where that cannot be asked (another
    C library) or the environment sets it already."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)  # the C library this process runs on
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):
        return False  # not glibc: its mallopt would not know the setting
    return bool(libc.mallopt(ctypes.c_int(_M_ARENA_MAX), ctypes.c_int(arenas)))
