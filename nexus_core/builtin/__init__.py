"""The built-in plugin: tool files and the tool folder that serves them."""
