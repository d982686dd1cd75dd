"""Child processes that end with their parent, however the parent ends (SIGKILL included).

A child started by neardup (the prepare process, a test's broker) must not outlive the
process that started it: reparented to init it would hold its memory, and the parent's
standard input, for ever. On Linux the child asks the kernel for SIGKILL when its parent
dies (``PR_SET_PDEATHSIG``); where that is missing, a thread of the child watches its
parent's process id. No library offers this for ``multiprocessing`` children or for
programs started with ``subprocess``, hence this module.

The kernel sends the signal when the *thread* that started the child ends: start children
from a thread that lives as long as they should (the main thread, or an event loop's).

``tied_command`` builds the command line that runs a program tied to this process: a small
Python program asks for the signal and then becomes the program (the request survives
``exec``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent", "prepare_child", "tied_command"]

_PR_SET_PDEATHSIG = 1
#: how often the fallback thread looks at the parent's process id
_WATCH_SECONDS = 0.5


def _ask_kernel(signum: int) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_WATCH_SECONDS)
    os._exit(1)


def die_with_parent(parent: int, watch: bool = True) -> None:
    """End this process when process ``parent`` ends. ``watch``: also poll the parent's id
    from a thread, where the kernel cannot be asked (and, after an ``exec``, no thread
    survives anyway)."""
    asked = _ask_kernel(signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)
    if watch and not asked:
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="neardup-parent").start()


def prepare_child(parent: int) -> None:
    """The initializer of a prepare process: tied to ``parent``; standard input released
    (the parent may be reading a pipe, whose writer must see it close when the parent
    ends); Ctrl-C left to the parent, which stops the child itself."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


#: the launcher of ``tied_command``: asks for SIGKILL at its parent's death, checks the
#: parent is still the one that started it, then becomes the program (no import of neardup)
_LAUNCHER = """
import ctypes, os, signal, sys
parent, program = int(sys.argv[1]), sys.argv[2:]
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
if os.getppid() != parent:
    os._exit(1)
os.execvp(program[0], program)
"""


def tied_command(argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` tied to this process (on Linux; elsewhere the
    program runs untied)."""
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *argv]
