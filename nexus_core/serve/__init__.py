"""Serving: the relay clients launch, the shared server, stdio and HTTP, the run folder where they meet."""
