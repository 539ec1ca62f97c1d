"""The errors Nexus raises; each message is meant to be read by a person or a model.

Standard library only, so a command that does not serve can report one without importing the SDK. The
refusal a tool lets escape is an SDK ``ToolError`` too: ``access.denied.PermissionDenied``.
"""

from __future__ import annotations


class NexusError(Exception):
    """Base class for every Nexus error."""


class ConfigError(NexusError):
    """The configuration is invalid: names the file, the key and the reason."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source, self.key, self.reason = source, key, reason
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {reason}")


class PluginError(NexusError):
    """A plugin could not be loaded, configured or registered."""

    def __init__(self, plugin: str, reason: str) -> None:
        self.plugin, self.reason = plugin, reason
        super().__init__(f"plugin '{plugin}': {reason}")
