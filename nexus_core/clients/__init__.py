"""``nexus install``: Nexus's entry in each client's own MCP config file."""
