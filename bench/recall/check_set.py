"""Check a labeled recall set against the rules in this folder's README (no model is run), or freeze one.

    python bench/recall/check_set.py bench/recall/recall_set_b.json
    python bench/recall/check_set.py --freeze bench/recall/recall_set_b.json part1.json part2.json ...

Prints one line per broken rule and exits 1 if there is any: the schema, every ``relevant`` key known, the
filters true of every relevant memory, a paraphrase sharing no content word (English) or no bigram holding a
kanji, hanzi or katakana (Japanese, Chinese) with its memory, a multilingual query in another language than its
memory, a cross-project query asked from another project than its memory's.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

KINDS = {"paraphrase", "symptom", "exact", "cross-project", "filtered", "multilingual"}
LANGS = {"en", "ja", "zh"}
TYPES = {"failure", "success", "decision", "insight", "note"}
_STOP_WORDS = """a an the of to in on at for from by with without into onto over under about after before
    and or but nor so if then than that this these those there here when where which who whom whose what why how
    is are was were be been being am do does did done doing have has had having can could should would will
    shall may might must not no yes it its it's we our us you your they their them he she his her i me my
    all any some each every other another more most less least very just only also too again still even
    get gets got getting make makes made one two out up down off once via per as such own same
    something anything nothing thing things way ways lot lots new old now"""
STOP = set(_STOP_WORDS.split())
CJK_CORE = re.compile(r"[\u4e00-\u9fff\u30a0-\u30ff]")


def stem(word: str) -> str:
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s", "ly", "er", "ers"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def english_words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9_]+", text.lower()) if w not in STOP and len(w) > 1}


def cjk_bigrams(text: str) -> set[str]:
    pairs = {text[i : i + 2] for i in range(len(text) - 1)}
    return {p for p in pairs if CJK_CORE.search(p) and not any(ch.isspace() for ch in p)}


def shared(query: str, content: str) -> set[str]:
    return (english_words(query) & english_words(content)) | (cjk_bigrams(query) & cjk_bigrams(content))


def problems(data: dict) -> list[str]:
    out: list[str] = []
    memories = {m["key"]: m for m in data["memories"]}
    if len(memories) != len(data["memories"]):
        out.append("duplicate memory keys")
    for m in data["memories"]:
        for field in ("key", "context_name", "memory_type", "tags", "lang", "created_at", "content"):
            if field not in m:
                out.append(f"{m.get('key')}: no {field}")
        if m.get("memory_type") not in TYPES or m.get("lang") not in LANGS:
            out.append(f"{m['key']}: memory_type or lang not allowed")
    for link in data.get("links", []):
        if link["source"] not in memories or link["target"] not in memories:
            out.append(f"link {link}: unknown key")
    ids = Counter(q["id"] for q in data["queries"])
    out += [f"{qid}: duplicate query id" for qid, n in ids.items() if n > 1]
    for q in data["queries"]:
        out += [f"{q['id']}: {p}" for p in query_problems(q, memories)]
    return out


def query_problems(q: dict, memories: dict[str, dict]) -> list[str]:
    if q.get("kind") not in KINDS or q.get("lang") not in LANGS:
        return ["kind or lang not allowed"]
    relevant = [memories.get(key) for key in q.get("relevant", [])]
    if not relevant or None in relevant:
        return [f"relevant {q.get('relevant')} unknown or empty"]
    out = []
    if q.get("memory_lang") != relevant[0]["lang"]:
        out.append(f"memory_lang {q.get('memory_lang')} but the memory is {relevant[0]['lang']}")
    filters = q.get("filters", {})
    for m in relevant:
        if filters.get("context_filter") not in (None, m["context_name"]):
            out.append(f"context_filter excludes {m['key']}")
        if filters.get("type_filter") not in (None, m["memory_type"]):
            out.append(f"type_filter excludes {m['key']}")
        if filters.get("tag_filter") and not set(filters["tag_filter"]) & set(m["tags"]):
            out.append(f"tag_filter excludes {m['key']}")
    if q["kind"] == "filtered" and not filters:
        out.append("filtered query without filters")
    if q["kind"] == "paraphrase":
        common = set().union(*(shared(q["query"], m["content"]) for m in relevant))
        if common:
            out.append(f"paraphrase shares {sorted(common)}")
    if q["kind"] == "multilingual" and q["lang"] == q["memory_lang"]:
        out.append("multilingual query in its memory's language")
    if q["kind"] == "cross-project":
        asked = q["query"].split(":", 1)[0].strip()
        if any(asked == m["context_name"] for m in relevant) or asked not in {
            m["context_name"] for m in memories.values()
        }:
            out.append(f"cross-project query asked from {asked!r}, not another known project")
    return out


def freeze(parts: list[Path]) -> dict:
    """The parts as one set, each query's ``split`` fixed as set A's was: within each kind, queries ordered by the
    SHA-1 of their id alternate dev, test, dev, ..."""
    loaded = [json.loads(p.read_text(encoding="utf-8")) for p in parts]
    data = {"version": 1, "as_of": "2026-11-01T00:00:00+00:00", "memories": [], "links": [], "queries": []}
    for part in loaded:
        for field in ("memories", "links", "queries"):
            data[field] += part.get(field, [])
    for kind in KINDS:
        queries = [q for q in data["queries"] if q["kind"] == kind]
        for i, q in enumerate(sorted(queries, key=lambda q: hashlib.sha1(q["id"].encode()).hexdigest())):
            q["split"] = "dev" if i % 2 == 0 else "test"
    return data


def main() -> int:
    if sys.argv[1] == "--freeze":
        data = freeze([Path(p) for p in sys.argv[3:]])
        Path(sys.argv[2]).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    else:
        data = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    found = problems(data)
    for line in found:
        print(line)
    kinds = Counter(q["kind"] for q in data["queries"])
    langs = Counter(m["lang"] for m in data["memories"])
    print(f"{len(data['memories'])} memories {dict(langs)}, {len(data['queries'])} queries {dict(kinds)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
