"""The query's exact terms: error codes, identifiers, flags, things an embedding model blurs, which a memory must
contain literally to be lifted (``scoring.BOOST``)."""

from __future__ import annotations

import re

MAX_TERMS = 6
_TOKEN = re.compile(r"[^\s,;\"'`<>\[\]{}]+")

_EDGE = ".,:;!?()'\""


def exact_terms(query: str) -> list[str]:
    """The query's code-like terms, as they must appear literally in a memory.

    Code-like: has a digit next to letters (``E11000``, ``TS2345``), a long
    number (``5432``), an underscore (``ERR_SSL``), camelCase (``useEffect``),
    a dotted name (``os.replace``), a call (``fetch()``), ``::``, a flag
    (``--no-cache``) or is an all-caps word of 4+ letters (``ECONNREFUSED``).
    """
    terms: list[str] = []
    for raw in _TOKEN.findall(query):
        token = raw.strip(_EDGE) if not raw.startswith("--") else raw.rstrip(_EDGE)
        if token.endswith("()"):
            token = token[:-2]
        token = token.strip(_EDGE) if not token.startswith("--") else token
        if len(token) >= 3 and _code_like(token) and token not in terms:
            terms.append(token)
    return terms[:MAX_TERMS]


def _code_like(token: str) -> bool:
    return bool(
        (re.search(r"\d", token) and re.search(r"[A-Za-z]", token))
        or re.fullmatch(r"\d{3,}", token)
        or "_" in token.strip("_")
        or re.search(r"[a-z][A-Z]", token)
        or re.search(r"\w\.\w", token)
        or "::" in token
        or token.startswith("--")
        or re.fullmatch(r"[A-Z]{4,}", token)
    )


def matched(terms: list[str], content: str) -> list[str]:
    return [t for t in terms if t in content]
