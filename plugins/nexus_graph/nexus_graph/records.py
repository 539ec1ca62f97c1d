"""Entities and relations: validation of what a caller gives, and the JSON line each becomes on disk."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

ID_RE = re.compile(r"^[a-z0-9-]+\Z")
PREDICATE_RE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*\Z")
CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]*\Z")
MAX_ID = 100
MAX_PREDICATE = 40
MAX_NAME = 200
MAX_DESC = 4000
MAX_TAGS = 30
MAX_TAG = 50
MAX_CONTEXT = 1000


class GraphError(ToolError):
    """A refusal the caller can act on; the host turns it into an ``isError`` tool result."""


def check_id(value: str, what: str = "id") -> str:
    """An entity id: lowercase letters, digits and hyphens. Also what keeps ids from naming paths."""
    if not value:
        raise GraphError(f"{what} is empty: use lowercase letters, digits and hyphens, e.g. 'python-asyncio'")
    if len(value) > MAX_ID:
        raise GraphError(f"{what} is {len(value)} characters long; the limit is {MAX_ID}")
    if not ID_RE.match(value):
        hint = slugify(value)
        suggestion = f"; did you mean '{hint}'?" if hint else ""
        raise GraphError(
            f"{what} {value!r} is invalid: only lowercase letters, digits and hyphens (^[a-z0-9-]+$){suggestion}"
        )
    return value


def check_predicate(value: str) -> str:
    if not value or len(value) > MAX_PREDICATE or not PREDICATE_RE.match(value):
        raise GraphError(
            f"relation {value!r} is invalid: use a short snake_case predicate of at most {MAX_PREDICATE} "
            "characters, e.g. 'uses', 'depends_on', 'written_in'"
        )
    return value


def slugify(text: str) -> str:
    """The id a free-form name maps to: ``"John Smith"`` -> ``"john-smith"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:MAX_ID].strip("-")


def to_predicate(text: str) -> str:
    """A relation type from another tool (``"works at"``, ``"worksAt"``) as snake_case."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text.strip())
    return re.sub(r"[^a-z0-9]+", "_", text.casefold()).strip("_")


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> float:
    """Seconds since the epoch for an ISO 8601 timestamp (naive ones are UTC)."""
    if not isinstance(value, str) or not value:
        raise ValueError("'created' must be an ISO 8601 timestamp, e.g. 2026-11-03T12:00:00Z")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"'created' is not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def clean_tags(tags: list[str]) -> list[str]:
    """Tags trimmed, lowercased and de-duplicated in order; empty or overlong ones are refused."""
    if len(tags) > MAX_TAGS:
        raise GraphError(f"{len(tags)} tags given; the limit is {MAX_TAGS}")
    out: list[str] = []
    for tag in tags:
        tag = tag.strip().casefold()
        if not tag or len(tag) > MAX_TAG:
            raise GraphError(f"tag {tag!r} is invalid: tags are 1 to {MAX_TAG} characters")
        if tag not in out:
            out.append(tag)
    return out


@dataclass(slots=True)
class Entity:
    id: str
    category: str
    type: str
    name: str
    desc: str = ""
    tags: list[str] = field(default_factory=list)
    created: str = ""
    observations: list[str] = field(default_factory=list)
    created_ts: float = 0.0
    source: str = ""  # "file:line", for reports

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "desc": self.desc,
            "tags": self.tags,
            "created": self.created,
        }
        if self.observations:
            record["observations"] = self.observations
        return record

    @classmethod
    def from_record(cls, data: Any, category: str, source: str) -> Entity:
        """An entity from one parsed line; ``ValueError`` says what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        ident = data.get("id")
        if not isinstance(ident, str) or not ID_RE.match(ident) or len(ident) > MAX_ID:
            raise ValueError(f"invalid or missing 'id': {ident!r}")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError("missing 'name'")
        tags = data.get("tags") or []
        observations = data.get("observations") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("'tags' must be a list of strings")
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise ValueError("'observations' must be a list of strings")
        created = data.get("created", "")
        return cls(
            id=ident,
            category=category,
            type=str(data.get("type") or "entity"),
            name=name,
            desc=str(data.get("desc") or ""),
            tags=tags,
            created=created,
            observations=observations,
            created_ts=parse_time(created),
            source=source,
        )


@dataclass(slots=True)
class Relation:
    src: str
    rel: str
    dst: str
    context: str = ""
    created: str = ""
    created_ts: float = 0.0
    source: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.rel, self.dst)

    def to_record(self) -> dict[str, Any]:
        return {"src": self.src, "rel": self.rel, "dst": self.dst, "context": self.context, "created": self.created}

    @classmethod
    def from_record(cls, data: Any, source: str) -> Relation:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        values = [data.get(k) for k in ("src", "rel", "dst")]
        if not all(isinstance(v, str) and v for v in values):
            raise ValueError("'src', 'rel' and 'dst' must be non-empty strings")
        created = data.get("created", "")
        return cls(
            src=values[0],
            rel=values[1],
            dst=values[2],
            context=str(data.get("context") or ""),
            created=created,
            created_ts=parse_time(created),
            source=source,
        )
