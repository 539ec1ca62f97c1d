"""Ranking tools for a request: BM25 over their words, and their meaning when an embedder is installed.

BM25 is a dozen lines here rather than a dependency: the documents are a few hundred
short tool definitions, and the scoring must see exactly the text we choose (name split
into words, title, description, parameter names and descriptions, and the keywords a
plugin gave the tool). The embedder is the memory plugin's MiniLM, reached through one
optional import (``embedder``); without it, ranking is lexical only.

Keywords (``register(..., keywords=...)``) are the everyday words for a tool's job that its
description leaves out ("duplicate" for a copy, "who wrote" for a blame): a description a
model reads on every turn stays short, and the search still finds the tool. The embedder
compares a request with a tool's text, its keywords and each keyword phrase, and takes the closest.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

log = logging.getLogger("nexus")

Embed = Callable[[Sequence[str]], list[list[float]]]

WORD = re.compile(r"[a-z0-9]+")
VOWEL = re.compile(r"[aeiouy]")
# Words that carry no meaning for choosing a tool; they would only add noise to the lexical scores.
_STOP_TEXT = """a an the of to in on for and or is are be by with from at as it its this that these those do does
i me my we our you your can could would should please want need some any all what which how when where who"""
STOP = frozenset(_STOP_TEXT.split())
# Everyday verbs and nouns a request uses for what tool descriptions say otherwise (general, not per tool).
_SYNONYMS = [
    "delete remove erase drop forget",
    "folder directory dir",
    "find search look lookup query",
    "create add make new",
    "change edit modify update replace rewrite",
    "run execute launch",
    "show read open view get display print",
    "file document",
    "link relation connect connection edge",
    "node entity",
    "page entity",
    "note memory",
    "sum add plus total",
]
SEMANTIC_WEIGHT = 0.6  # the meaning score's share in the blend (tune half, with keywords: 0.5 to 0.8)
# A file name in a request ("package.json", "src/app.py"): only "a file" in it tells which tool serves the request;
# its words ("package", "json") would match tools that have nothing to do with it.
FILE_NAME = re.compile(r"(?<![\w/.~-])(?:~/|\.{1,2}/|/)?(?:[\w.-]+/)*[\w-]*\w\.[A-Za-z][A-Za-z0-9]{0,9}(?![\w/.-])")


def words(text: str) -> list[str]:
    """Lower-case words, ``snake_case`` and ``camelCase`` split, stop words dropped, endings stripped (``_stem``)."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower().replace("_", " ")
    return [_stem(w) for w in WORD.findall(text) if w not in STOP]


@functools.lru_cache(maxsize=8192)  # the same few thousand words, for every tool, on every search
def _stem(word: str) -> str:
    """A light suffix stripper, so "relate", "related" and "relation", or "tag" and "tagged", are one word.

    Plural ``s``, ``ies``/``ied``, then ``ing``, ``ed`` or ``ion``, then a final ``e``; a stem keeps three letters
    and a vowel ("string" and "need" stay whole), a doubled last consonant is undone ("tagged" -> "tag")."""
    if len(word) > 4 and word.endswith(("ies", "ied")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed", "ion"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and VOWEL.search(stem):
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeioulsz":
                return stem[:-1]
            short = len(stem) == 3 and suffix != "ion" and stem[-1] != stem[-2]  # "saved" -> "save", "added" -> "add"
            return stem + "e" if short else _final_e(stem)
    return _final_e(word)


def _final_e(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


SYNONYMS = {_stem(w): {_stem(o) for o in line.split()} - {_stem(w)} for line in _SYNONYMS for w in line.split()}


def without_file_names(query: str) -> str:
    """The request as the rankers read it: each file name becomes the word "file"."""
    return FILE_NAME.sub(lambda m: m[0] if m[0].lower() in ("e.g", "i.e") else "file", query)


def meaning_text(tool: dict[str, Any], keywords: str = "") -> str:
    """A tool as the embedder reads it: name in words, the description's first paragraph, parameter names,
    keywords.

    One short sentence-like text: the embedder weighs all of it, and a long description's later
    paragraphs (limits, errors) or parameter descriptions pull it away from what the tool is for.
    """
    name = re.sub(r"[_-]+", " ", tool["name"])
    summary = (tool.get("description") or "").strip().split("\n\n")[0]
    params = ", ".join(re.sub(r"[_-]+", " ", p) for p in (tool.get("inputSchema") or {}).get("properties") or {})
    return f"{name}: {summary} ({params}) {keywords}".rstrip()


def tool_text(tool: dict[str, Any], keywords: str = "") -> str:
    """The words a tool is found by: name (twice: it is the densest clue), title, description, parameters,
    the values a parameter takes (``enum``), and its keywords."""
    parts = [tool["name"], tool["name"], tool.get("title") or "", tool.get("description") or "", keywords]
    for name, schema in ((tool.get("inputSchema") or {}).get("properties") or {}).items():
        schema = schema if isinstance(schema, dict) else {}
        parts += [name, str(schema.get("description", "")), " ".join(map(str, schema.get("enum") or ()))]
    return "\n".join(parts)


class BM25:
    """Okapi BM25 over a fixed list of documents."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(words(d)) for d in documents]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = (sum(self.lengths) / len(self.docs)) if self.docs else 1.0
        frequency = Counter(w for d in self.docs for w in d)
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str, expand: bool = True) -> list[float]:
        """Each document's score; ``expand`` adds the query words' synonyms, each weighing half."""
        weights: dict[str, float] = {}
        for word in words(query):
            weights[word] = 1.0
            for other in SYNONYMS.get(word, ()) if expand else ():
                weights.setdefault(other, 0.5)
        terms = [w for w in weights if w in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1.0))
            out.append(
                sum(weights[t] * self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc)
            )
        return out


def embedder() -> Embed | None:
    """The memory plugin's embedder when it is installed and its model loads; None otherwise.

    The one place tool search touches ``nexus_memory``: any failure (not installed, renamed,
    no model) means lexical ranking only, never an error.
    """
    try:
        model = _memory_minilm()
        model.embed(["warm up"])
        return model.embed  # type: ignore[no-any-return]
    except Exception as exc:
        log.info("tool search ranks by words only (no embedder: %s: %s)", type(exc).__name__, exc)
        return None


def _memory_minilm() -> Any:
    """MiniLM by name through the memory plugin's embedder registry, when that plugin is installed.

    An optional integration, found at run time (the host does not require the plugin): its absence, or any
    change of its registry, falls back to ranking by words."""
    return importlib.import_module("nexus_memory.embed").create("minilm")


class Ranker:
    """Ranks tool definitions for a request; keeps the vectors of texts it has seen."""

    def __init__(self, embed: Embed | None) -> None:
        self.embed = embed
        self._vectors: dict[str, list[float]] = {}
        self._index: tuple[list[str], BM25] | None = None  # the last tool texts and their index: mostly the same

    def rank(
        self, query: str, tools: Sequence[dict[str, Any]], keywords: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """``tools``, best match first; ``keywords``: a tool's keywords by its name."""
        if not tools:
            return []
        query = without_file_names(query)
        kw = [(keywords or {}).get(t["name"], "") for t in tools]
        blended = _normalised(self._bm25([tool_text(t, k) for t, k in zip(tools, kw, strict=True)]).scores(query))
        if self.embed is not None:
            meaning = _normalised(self._meaning(query, tools, kw))
            blended = [SEMANTIC_WEIGHT * m + (1 - SEMANTIC_WEIGHT) * w for m, w in zip(meaning, blended, strict=True)]
        return [tools[i] for i in _best_first(blended, tools)]

    def _bm25(self, texts: list[str]) -> BM25:
        """The index of ``texts``, kept for the next search (one read of ``_index``: searches run in threads)."""
        index = self._index
        if index is None or index[0] != texts:
            index = self._index = (texts, BM25(texts))
        return index[1]

    def _meaning(self, query: str, tools: Sequence[dict[str, Any]], keywords: list[str]) -> list[float]:
        """Each tool's cosine with the request: with its text, its keywords, or one of its keyword phrases,
        whichever is closest (a short request is nearer to a few words than to a whole description, and a
        request in a tool's own everyday words nearest to the one phrase that says them)."""
        assert self.embed is not None
        texts = [[meaning_text(t, k), *_phrases(k)] for t, k in zip(tools, keywords, strict=True)]
        missing = [t for t in dict.fromkeys(x for tool in texts for x in tool) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.embed(missing), strict=True))
        (q,) = self.embed([query])
        cosine = {t: sum(map(operator.mul, q, self._vectors[t])) for t in dict.fromkeys(x for y in texts for x in y)}
        return [max(cosine[text] for text in tool) for tool in texts]


def _phrases(keywords: str) -> list[str]:
    """A tool's keywords as one text and, when there are several, each comma-separated phrase alone."""
    phrases = [p.strip() for p in keywords.split(",") if p.strip()]
    return [keywords, *phrases] if len(phrases) > 1 else phrases


def _best_first(scores: list[float], tools: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of ``tools`` by score, best first; ties by name, so a ranking never depends on the listing order."""
    return sorted(range(len(tools)), key=lambda i: (-scores[i], tools[i]["name"]))


def _normalised(scores: list[float]) -> list[float]:
    """Scores scaled to 0..1 over this candidate list, so the two rankers blend on one scale."""
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    return [(s - low) / (high - low) if high > low else 0.0 for s in scores]
