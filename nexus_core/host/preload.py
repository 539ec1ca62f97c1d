"""Plugins' early loading: what a plugin's first call needs, begun as the shared server's process starts.

A cold start spends a second and more importing the SDK and building every plugin's tools, nearly all of it holding
the GIL, while the second core idles. A plugin whose first call waits for work that mostly releases the GIL
(onnxruntime building a model's session, hashing model files) names a function in the entry point group
``nexus.preload``, under its plugin's name: the shared server calls it with the plugin's ``[plugins.NAME]`` table as
written, once its config is read and before it imports the SDK; the function starts its own thread and returns. It
must import nothing heavy (not the SDK, not the plugin's tools), load only what is process-wide (the plugin's
``nexus_prepare`` finds it loaded), and keep quiet about errors: the plugin reports them when it is built.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import importlib_metadata

if TYPE_CHECKING:
    from nexus_core.config.model import NexusConfig

log = logging.getLogger("nexus")

GROUP = "nexus.preload"


def start(config: NexusConfig) -> list[str]:
    """Call each enabled plugin's preload; the names of those started."""
    started = []
    for ep in importlib_metadata.entry_points(group=GROUP):
        table = config.table(ep.name)
        if not table.enabled:
            continue
        try:
            ep.load()(dict(table.plugin_keys))
        except Exception as exc:  # the plugin loads as usual when it is built, and says what fails then
            log.debug("preload of plugin %s failed: %s", ep.name, exc, exc_info=True)
            continue
        started.append(ep.name)
    return started
