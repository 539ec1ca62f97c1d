"""The ``nexus`` command's entry: ``nexus serve`` on stdio goes straight to the relay, without the full CLI.

Desktop clients launch ``nexus serve`` and wait for it; the relay (standard
library only) answers in a few tens of milliseconds, while importing the CLI,
the SDK and pydantic would cost far more. Every other command is the full CLI.

``nexus-mcp-server`` (design 001's command, which its Claude Desktop example
launches) is ``nexus serve`` by that name: the same flags, the same relay.
"""

from __future__ import annotations

import sys


def relays(argv: list[str]) -> bool:
    """Whether ``argv`` (after ``nexus``) is a ``serve`` that the relay handles."""
    if argv[:1] != ["serve"]:
        return False
    rest = argv[1:]
    if any(a in ("--standalone", "--http", "-h", "--help") for a in rest):
        return False
    transport = next((rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--transport"), None)
    transport = transport or next((a.split("=", 1)[1] for a in rest if a.startswith("--transport=")), "stdio")
    return transport == "stdio"


def main() -> None:
    argv = sys.argv[1:]
    if relays(argv):
        from nexus_core.serve import relay

        sys.exit(relay.main(argv[1:]))
    from nexus_core.cli.main import main as cli_main

    cli_main()


def mcp_server() -> None:
    """``nexus-mcp-server ARGS`` is ``nexus serve ARGS`` (design 001's ``--enable``, ``--http``, ``--config``)."""
    argv = ["serve", *sys.argv[1:]]
    if relays(argv):
        from nexus_core.serve import relay

        sys.exit(relay.main(argv[1:]))
    from nexus_core.cli.serve import serve

    try:
        serve.main(argv[1:], prog_name="nexus-mcp-server")
    except KeyboardInterrupt:
        sys.exit(130)
