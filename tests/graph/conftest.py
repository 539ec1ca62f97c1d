"""Fixtures for nexus-graph: a host with the plugin (writes granted), its graph folder, and a client helper."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nexus_graph
from nexus_core.host.build import Host

GRANTED = {"categories": ["read", "write"]}


@pytest.fixture
def graph_dir(tmp_path: Path) -> Path:
    return tmp_path / "graph"


@pytest.fixture
def graph_host(make_host: Callable[..., Host], graph_dir: Path, tmp_path: Path) -> Callable[..., Host]:
    """``graph_host(**plugin_keys)``: a host whose graph lives in ``graph_dir`` and whose root is ``tmp_path``."""

    def make(**keys: Any) -> Host:
        table = {**GRANTED, "graph_dir": str(graph_dir), "roots": [str(tmp_path)], **keys}
        return make_host({"graph": nexus_graph}, {"plugins": {"graph": table}})

    return make
