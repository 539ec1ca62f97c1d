"""The shared server's process, ``python -m nexus_core.serve.shared_main --key KEY [...]``: what a relay starts.

It takes the server's lifetime lock, reads the config and starts the plugins' early loading (``host.preload``)
before it imports the SDK and builds the host (``shared``): on a cold start the first call waits for both, and
the early loading mostly runs outside the GIL, on the core the imports leave idle. The cyclic garbage collector
stays off meanwhile (``host.gc_hold``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from nexus_core.errors import NexusError
from nexus_core.host import heap
from nexus_core.host.gc_hold import hold_gc
from nexus_core.serve import rendezvous
from nexus_core.serve.options import SHARED_SERVER_FLAGS, VERBOSE, ServeOptions, parser


def main(argv: Sequence[str] | None = None) -> int:
    """``--key KEY`` and the shared server's flags (``nexus server run``'s), then ``run``."""
    p = parser((*SHARED_SERVER_FLAGS, VERBOSE), prog="nexus server run")
    p.add_argument("--key", required=True)
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    return run(args.key, ServeOptions.of(vars(args)))


def run(key: str, options: ServeOptions) -> int:
    """Serve as the shared server of ``key`` in the foreground until it is stopped or idle; the exit status."""
    if rendezvous.hold_lifetime_lock(key) is None:
        print(f"nexus: the shared server {key} is already running", file=sys.stderr)
        return 0
    heap.limit_arenas()  # before any thread starts: a long-lived server of many threads
    release = hold_gc()  # until the host is built (the plugins' start-up work holds it longer)
    overrides = options.overrides + ((f"server.name={json.dumps(options.name)}",) if options.name else ())
    # Here, the collector held off: the config's models are the first of what starting builds.
    from nexus_core.config.effective import load, with_libraries
    from nexus_core.host import preload

    try:
        config = with_libraries(load(options.config, overrides, options.verbose), options.libraries)
        preload.start(config)
        from nexus_core.serve import shared  # here: the SDK loads beside the plugins' early loading

        host = shared.build(config)
    except NexusError as exc:
        print(f"nexus: {exc}", file=sys.stderr)
        return 2
    finally:
        release()
    return shared.serve(key, host)


if __name__ == "__main__":
    sys.exit(main())
