"""A plugin loaded by dotted module path: [plugins.modplug] module = "tests.core.module_plugin"."""

from nexus_core import hookimpl


@hookimpl
def nexus_register_tools(register) -> None:
    def reverse(text: str) -> str:
        """Reverse a string."""
        return text[::-1]

    register(reverse, category="default", read_only=True, idempotent=True)
