"""The config: where nexus.toml is, what it says, how an untrusted one narrows it, the user folders."""
