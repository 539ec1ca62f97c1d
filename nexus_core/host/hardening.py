"""Keep the server's memory and environment from the programs it starts (Linux).

The server's environment holds credentials (``NEXUS_TOKEN``, keys a bridged
server needs), and a command or script the server starts runs as the same user:
it could read ``/proc/<server pid>/environ`` (or ``mem``) and take them. After
``prctl(PR_SET_DUMPABLE, 0)`` the kernel owns those files and refuses
``ptrace`` to processes of the same user, so a child gets "permission denied".
A child that execs a program is dumpable again, so only the server is affected.

Side effects: the server writes no core dump, and a debugger running as the
same user cannot attach to it (``py-spy``, ``gdb -p``). A root child (a server
run as root) is not stopped by it: run Nexus as your own user.
"""

from __future__ import annotations

import ctypes
import functools
import sys

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4


@functools.cache
def make_undumpable() -> bool:
    """Make this process undumpable (once); True when it is, False where the system has no such switch."""
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        import logging  # here: the relay runs this at every launch, and it nearly never fails

        # the name it logged under before the layout moved it
        logging.getLogger("nexus_core.hardening").warning(
            "could not make the server undumpable: its children may read its environment"
        )
        return False
    return True
