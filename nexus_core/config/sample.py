"""The commented example written by ``nexus config init``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nexus_core.host.build import Host

HEADER = """\
# Nexus configuration. Every key is optional; the values shown are the defaults.
# Check it with:  nexus config check

[server]
name = "nexus"
# data_dir = "{data_dir}"        # audit log and plugin data
# roots = ["~/code"]             # folders plugins may touch (default: where the server starts)
# deny_paths = ["**/.env", "**/*.pem", "**/id_*"]   # gitignore-style, hidden from every plugin
# plugin_dirs = ["~/.config/nexus/plugins"]         # every *.py file there is a plugin
# tool_dirs = ["~/.config/nexus/tools"]             # tool files, watched while serving (docs/tool_files.md)
# log_level = "INFO"
# tool_search = false            # list only find_tools and call_tool; the model finds the rest (docs/tool_search.md)

[server.http]
host = "127.0.0.1"
port = 8766
# token = {{ env = "NEXUS_TOKEN" }}   # require "Authorization: Bearer <token>"
# allowed_origins = []              # browser origins allowed besides loopback

[server.audit]
enabled = true                    # one JSON line per tool call in <data_dir>/audit.jsonl
include_arguments = false
"""

PLUGIN = """
[plugins.{name}]
enabled = true
# categories = [{defaults}]   # granted; available: {available}
{described}
# allow_tools = []            # when not empty, only these tools
# deny_tools = []
# prefix = "{name}"           # tool names become {name}_<tool>
# roots = []                  # default: [server] roots
# deny_paths = []
"""


def sample_config(host: Host) -> str:
    """The example, with one table for each installed plugin and its categories."""
    data_dir = host.config.resolve_path(host.config.server.data_dir)
    parts = [HEADER.format(data_dir=data_dir)]
    for state in sorted(host.plugins.values(), key=lambda s: s.name):
        categories = state.categories.values()
        parts.append(
            PLUGIN.format(
                name=state.name,
                defaults=", ".join(f'"{c.name}"' for c in categories if c.default),
                available=", ".join(c.name for c in categories) or "?",
                described="\n".join(
                    f"#   {c.name}: {c.description}{'' if c.default else ' (off by default)'}" for c in categories
                ),
            )
        )
        parts.append(_own_sample(state.ctx.config if state.ctx else None))
    return "".join(parts)


def _own_sample(config: object) -> str:
    """The plugin's own keys, commented: its config model's ``SAMPLE`` text, when it has one."""
    sample = getattr(type(config), "SAMPLE", "")
    return "".join(f"# {line}\n" if line else "#\n" for line in sample.strip().splitlines())
