"""The host: finding plugins, their registrars, building the MCP server, live items, the SDK adapter."""
