"""Who may use what: the gate, sessions, grants, peer checks and the audit log."""
