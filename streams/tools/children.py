"""Child processes that die with the process that started them.

A broker or a worker started by a test, a fixture, ``loopwarden dev`` or the demo runs
in a session of its own (so that a Ctrl-C aimed at the terminal reaches the parent
first, which then stops it in order). If the parent is killed outright (``SIGKILL``,
a CI timeout, the OOM killer), nothing stops the child: it lived on with parent 1,
burning a core, for every later run on the machine. On Linux each child therefore
asks the kernel for ``SIGTERM`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
so it stops the same way as when the parent stops it. Start children from the main
thread: the kernel counts the death of the *thread* that started the child.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the child receive
    ``SIGTERM`` when this process dies; None where the kernel has no such request."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl = libc.prctl  # looked up before the fork: the child only calls it
    parent = os.getpid()

    def request() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before the request was made
            os._exit(1)

    return request
