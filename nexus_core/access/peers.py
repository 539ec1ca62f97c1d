"""Which user is at the other end of a socket: both ends of the shared server's socket, and the console's
loopback HTTP, serve only the user the server runs as.

Standard library only: the relay imports this at every launch.
"""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (None where the system does not say)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def tcp_peer_uid(client_port: int, server_port: int) -> int | None:
    """The user id owning the loopback TCP connection from ``client_port`` to ``server_port`` (Linux's
    ``/proc/net/tcp``), -1 when no such connection is listed, None where the system does not say.
    Loopback is every local user's, not only this one's."""
    wanted = f":{client_port:04X}", f":{server_port:04X}"
    found = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        found = -1
        for line in lines:
            fields = line.split()  # sl local_address rem_address st queues timer retransmits uid timeout inode
            if len(fields) < 10 or fields[9] == "0":  # no inode: a closed connection's TIME_WAIT, owned by no one
                continue
            if fields[1].endswith(wanted[0]) and fields[2].endswith(wanted[1]):
                return int(fields[7])
    return found


def other_user(sock: socket.socket) -> int | None:
    """The user id at the other end of ``sock`` if it is not this user (None: this user, or the system cannot say)."""
    uid = peer_uid(sock)
    return None if uid in (None, os.getuid()) else uid
