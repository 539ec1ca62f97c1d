"""The errors Nexus raises; each message is meant to be read by a person or a model.

Standard library only, so a command that does not serve can report one without importing the SDK. The
refusal a tool lets escape is an SDK ``ToolError`` too: ``access.denied.PermissionDenied``.
"""

from __future__ import annotations


class NexusError(Exception):
    """Base class for every Nexus error."""


class ConfigError(NexusError):
    """The configuration is invalid: names the file, the key and the reason."""

    def __init__(self, source: str, key: str, reason: str, more: list[tuple[str, str]] | None = None) -> None:
        self.source, self.key, self.reason = source, key, reason
        self.problems = [(key, reason), *(more or [])]  # every error found, each (key, reason)
        where = f"{source}: {key}" if key else source
        rest = "".join(f"; {k}: {r}" for k, r in more or [])
        super().__init__(f"{where}: {reason}{rest}")

    def lines(self) -> list[str]:
        """One line per error: ``key: reason``, under the file's name."""
        return [self.source or "config", *(f"  {k or '(file)'}: {r}" for k, r in self.problems)]


class PluginError(NexusError):
    """A plugin could not be loaded, configured or registered."""

    def __init__(self, plugin: str, reason: str) -> None:
        self.plugin, self.reason = plugin, reason
        super().__init__(f"plugin '{plugin}': {reason}")


class ChangedMeanwhile(NexusError):
    """A file changed between being read and being replaced (``atomic_write``'s ``expect``): nothing was written,
    so another program's change is not lost; read the file again and redo the edit."""
