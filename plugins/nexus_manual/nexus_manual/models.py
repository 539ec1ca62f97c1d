"""The tools' input items and structured outputs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Relation(BaseModel):
    """One relation as stored in an entity's front matter."""

    type: str = Field(min_length=1, description="The kind of relation, e.g. 'works_with'.")
    to: str = Field(min_length=1, description="The entity it points to.")


class Edge(BaseModel):
    """A relation seen from outside: ``from`` -[type]-> ``to``."""

    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from", min_length=1, description="The entity holding the relation.")
    to: str = Field(min_length=1, description="The entity it points to.")
    type: str = Field(min_length=1, description="The kind of relation.")


class NewEntity(BaseModel):
    name: str = Field(min_length=1, description="The entity's name, which is also its file name without '.md'.")
    entity_type: str = Field(min_length=1, description="What it is, e.g. 'person', 'project', 'decision'.")
    aliases: list[str] = Field(default_factory=list, description="Other names it goes by.")
    relations: list[Relation] = Field(default_factory=list, description="Relations to existing entities.")
    content: str = Field(
        "",
        description="The Markdown body. Left empty, the entity starts with a skeleton: the sections other entities "
        "of its type use, most common first (a small default outline when there are none).",
    )


class EntityList(BaseModel):
    library: str
    entities: list[str] = Field(description="Entity names, sorted.")
    count: int


class EntityText(BaseModel):
    name: str
    content: str = Field(description="The whole file, front matter included.")


class EntitiesText(BaseModel):
    library: str
    entities: list[EntityText]


class TocItem(BaseModel):
    heading: str = Field(description="'frontmatter' for the front matter, else the heading's text.")
    level: int = Field(description="0 for the front matter, else 1-6 (the number of '#').")


class EntityToc(BaseModel):
    name: str
    toc: list[TocItem]


class EntitiesToc(BaseModel):
    library: str
    entities: list[EntityToc]


class SectionText(BaseModel):
    heading: str
    level: int
    content: str = Field(
        description="The section from its heading line to the next heading of the same or higher level."
    )


class EntitySections(BaseModel):
    name: str
    sections: list[SectionText]


class EntitiesSections(BaseModel):
    library: str
    entities: list[EntitySections]


class Changed(BaseModel):
    library: str
    changed: list[str] = Field(description="Entities written or deleted ('meta': the manual).")
    message: str


class RenameResult(BaseModel):
    library: str
    old_name: str
    new_name: str
    files_updated: list[str] = Field(description="Other files whose relations or wikilinks now point to the new name.")


class MergeResult(BaseModel):
    library: str
    target: str
    merged: list[str] = Field(description="The source entities merged into the target and deleted.")
    files_updated: list[str] = Field(description="Other files whose relations or wikilinks were redirected.")


class RelationsResult(BaseModel):
    library: str
    relations: list[Edge]
    count: int


class RelationsChanged(BaseModel):
    library: str
    changed: list[Edge] = Field(description="Relations created (or deleted).")
    unchanged: list[Edge] = Field(default_factory=list, description="Relations that already existed; nothing done.")


class GarbageResult(BaseModel):
    library: str
    dangling: list[Edge] = Field(description="Relations whose target entity does not exist.")
    removed: bool = Field(description="Whether they were removed (remove=true) or only listed.")


class ManualText(BaseModel):
    library: str
    exists: bool
    content: str
    toc: list[TocItem]
