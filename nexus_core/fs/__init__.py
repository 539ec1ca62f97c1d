"""Files, safely: the path policy, race-free opening, secrets, hard links, atomic writes, locks, non-blocking IO."""
