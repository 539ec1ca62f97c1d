"""What the store holds, as the plugin sees it: memories (``Record``), links, and the text each embeds.

The recipe of the embedded text: tags first, then the content; the sentences recipe also embeds each sentence of a
memory of two or more (its *parts*), which recall reads for its candidates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# What is embedded for a memory. Tags first, so MiniLM's 256-token truncation cannot drop them (tags added 0.05
# recall@5 on the labeled set's dev half); the project's name in the text cost recall. Collections made before
# the recipe was recorded embedded the content alone. The sentences recipe also embeds each sentence (tags first)
# of a memory of two or more sentences as extra vectors: a question often matches one sentence of a longer memory
# (bench/recall_ideas.py; recall.scoring.PART_WEIGHT).
SENTENCES_RECIPE = "tags+content+sentences"

TAGS_RECIPE = "tags+content"

LEGACY_RECIPE = "content"

RECIPES = (SENTENCES_RECIPE, TAGS_RECIPE, LEGACY_RECIPE)

PENDING = "parts_pending"  # metadata flag: written with a memory whose sentence vectors are written later

# Vectors per memory besides the whole text's; the pieces after the 15th share the 16th. MiniLM reads only the first
# 256 tokens of the whole text, so a long memory is found by its later pieces: on memories of five labeled notes
# joined (bench/recall_long.py, dev queries) 8 gave recall@5 0.810, 16 and 32 0.833 (one vector: 0.762).
MAX_PARTS = 16

MIN_SENTENCE = 12  # characters: a shorter piece ("Fixed.", "v2.") joins no vector of its own

# A piece ends after . ! ? ; : (also inside os.replace: the pieces shorter than MIN_SENTENCE are dropped) or a CJK
# full stop, at a line break, at a spaced dash, and before a clause led by "because" or, after a comma, by "so",
# "but", "which", "when", ... Sentences alone: dev recall@5 0.920, MRR 0.807; these clauses: 0.930, 0.816, and on
# the independent set with distractors 0.889 -> 0.903 (bench/recall_ideas.py, "clause clauses"); ending only at
# ". " (white space after) lost a dev query.
_PIECE_END = re.compile(
    r"(?<=[.!?。！？；;:])\s*|\n+|,\s+(?=(?:because|so|but|and then|which|since|when|after|before|while)\b)"
    r"|\s+(?=because\b)|\s+—\s+|\s+-\s+"
)


def sentences(content: str) -> list[str]:
    """The content's sentences, a long one cut at its clauses, of ``MIN_SENTENCE`` characters or more (the shorter
    ones are dropped), at most ``MAX_PARTS`` (the rest joined into the last); none when there are fewer than two:
    the whole text is one."""
    found = [s.strip() for s in _PIECE_END.split(content) if s and len(s.strip()) >= MIN_SENTENCE]
    if len(found) > MAX_PARTS:
        found = [*found[: MAX_PARTS - 1], " ".join(found[MAX_PARTS - 1 :])]
    return found if len(found) >= 2 else []


PartHits = tuple[list[tuple[str, float]], float]  # (memory id, dot product) of the nearest sentences; a bound


class StoreError(Exception):
    """Chroma cannot be reached, opened or written; the message says why, in one line."""


def one_line(exc: BaseException) -> str:
    """An exception as ``Type: message`` on one line (Chroma's messages may span several)."""
    text = " ".join(str(exc).split()) or "no details"
    return f"{type(exc).__name__}: {text}"


@dataclass
class Record:
    """A memory as stored."""

    id: str
    content: str
    memory_type: str
    context: str
    tags: list[str]
    created_at: str
    updated_at: str
    archived: bool = False
    last_recalled_at: str = ""
    parts_pending: bool = False  # its sentence vectors are yet to be written (by the background writer)
    image: str = ""  # the mime type of its image ('' for none); the bytes are a file (images.files)

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "type": self.memory_type,
            "context": self.context,
            "tag_count": len(self.tags),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "archived": self.archived,
        }
        if self.tags:  # Chroma refuses empty lists
            meta["tags"] = list(self.tags)
        if self.last_recalled_at:
            meta["last_recalled_at"] = self.last_recalled_at
        if self.image:
            meta["image"] = self.image
        meta[PENDING] = self.parts_pending  # always: Chroma's upsert merges metadata, so False must be written
        return meta

    def text(self, recipe: str = SENTENCES_RECIPE) -> str:
        """What the embedder reads for this memory under ``recipe``."""
        if recipe in (SENTENCES_RECIPE, TAGS_RECIPE) and self.tags:
            return ", ".join(self.tags) + "\n" + self.content
        return self.content

    def parts(self, recipe: str = SENTENCES_RECIPE) -> list[str]:
        """The extra texts embedded for this memory under ``recipe``: each sentence, tags first (see ``text``)."""
        if recipe != SENTENCES_RECIPE:
            return []
        prefix = ", ".join(self.tags) + "\n" if self.tags else ""
        return [prefix + s for s in sentences(self.content)]

    @classmethod
    def from_chroma(cls, id: str, document: str | None, meta: dict[str, Any] | None) -> Record:
        meta = meta or {}
        return cls(
            id=id,
            content=document or "",
            memory_type=str(meta.get("type", "note")),
            context=str(meta.get("context", "")),
            tags=list(meta.get("tags") or []),
            created_at=str(meta.get("created_at", "")),
            updated_at=str(meta.get("updated_at", "")),
            archived=meta.get("archived") is True,
            last_recalled_at=str(meta.get("last_recalled_at") or ""),
            parts_pending=meta.get(PENDING) is True,
            image=str(meta.get("image") or ""),
        )


@dataclass
class LinkRecord:
    source_id: str
    target_id: str
    relation_type: str
    reason: str
    created_at: str

    @property
    def id(self) -> str:
        return link_id(self.source_id, self.relation_type, self.target_id)

    def metadata(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "target_id": self.target_id,
            "relation_type": self.relation_type,
            "reason": self.reason,
            "created_at": self.created_at,
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> LinkRecord:
        return cls(
            **{k: str(meta.get(k, "")) for k in ("source_id", "target_id", "relation_type", "reason")},
            created_at=str(meta.get("created_at", "")),
        )


def with_any_tag(where: dict[str, Any] | None, tags: list[str]) -> dict[str, Any]:
    """``where``, narrowed to the memories with any of ``tags``."""
    parts = [{"tags": {"$contains": t}} for t in tags]
    tagged = parts[0] if len(parts) == 1 else {"$or": parts}
    return tagged if where is None else {"$and": [where, tagged]}


def recipe_for(sentences: bool) -> str:
    """The recipe ``[plugins.memory] sentences`` asks for new collections (and reindex)."""
    return SENTENCES_RECIPE if sentences else TAGS_RECIPE


def part_ids(ids: Iterable[str]) -> list[str]:
    """Every id a sentence vector of these memories may have."""
    return [f"{i}#{n}" for i in ids for n in range(MAX_PARTS)]


def link_id(source: str, relation: str, target: str) -> str:
    return f"{source}|{relation}|{target}"


def where_clause(
    context: str | list[str] | None = None,
    memory_type: str | None = None,
    tags: Iterable[str] | None = None,
    include_archived: bool = True,
) -> dict[str, Any] | None:
    """A Chroma ``where`` for the filters given (a list of contexts or tags: any of them), or None."""
    parts: list[dict[str, Any]] = []
    if not include_archived:  # $ne also matches the records written before `archived` existed
        parts.append({"archived": {"$ne": True}})
    if isinstance(context, list) and len(context) > 1:
        parts.append({"context": {"$in": context}})
    elif context:
        parts.append({"context": context if isinstance(context, str) else context[0]})
    if memory_type:
        parts.append({"type": memory_type})
    tag_parts = [{"tags": {"$contains": t}} for t in (tags or [])]
    if len(tag_parts) == 1:
        parts.append(tag_parts[0])
    elif tag_parts:
        parts.append({"$or": tag_parts})
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}
