"""The store: Chroma's collections and what the plugin keeps beside them.

- ``records``: a memory (``Record``) and a link as stored, the embedded text's recipes, ``where`` clauses;
- ``chroma``: ``ChromaStore``, the memories' collection, all-or-nothing writes (``atomic``), and what it owns:
  ``links`` (``links.Links``), ``parts`` (the sentence vectors, ``parts.Parts``), the tag index (``tags``) and
  the in-process copy of an embedded collection (``mirror``);
- ``opening``: the folder's lock (``lock``), the client, the embedder a collection was made with, what an
  interrupted reindex left (``leftovers``);
- ``writer``: the background writer of sentence vectors.
"""

from nexus_memory.store.chroma import ChromaStore
from nexus_memory.store.opening import HNSW, LOCK_FILE, SYNC_THRESHOLD, collection_metadata
from nexus_memory.store.records import (
    LEGACY_RECIPE,
    MAX_PARTS,
    PENDING,
    RECIPES,
    SENTENCES_RECIPE,
    TAGS_RECIPE,
    LinkRecord,
    PartHits,
    Record,
    StoreError,
    one_line,
    recipe_for,
    sentences,
    where_clause,
    with_any_tag,
)

__all__ = [
    "HNSW",
    "LEGACY_RECIPE",
    "LOCK_FILE",
    "MAX_PARTS",
    "PENDING",
    "RECIPES",
    "SENTENCES_RECIPE",
    "SYNC_THRESHOLD",
    "TAGS_RECIPE",
    "ChromaStore",
    "LinkRecord",
    "PartHits",
    "Record",
    "StoreError",
    "collection_metadata",
    "one_line",
    "recipe_for",
    "sentences",
    "where_clause",
    "with_any_tag",
]
