"""Resources (a library's entities and its manual, as Markdown) and the prompts that guide an assistant.

Both read through the same ``Library`` as the tools, so the path policy applies
to every file they touch. Reading resources and the briefing belong to the
``read`` category; the decision prompt, which leads to writes, to ``write``.
Each also names the tool whose grant it needs (``requires``), so ``allow_tools``
and ``deny_tools`` govern it like that tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import Field

from nexus_core import PluginContext, PromptRegistrar, ResourceRegistrar, ToolError
from nexus_manual.library import Libraries
from nexus_manual.names import MANUAL_NAME

MARKDOWN = "text/markdown"
BRIEFING_MANUAL_CHARS = 20_000  # the manual embedded in the briefing; read_manual has the rest
BRIEFING_NAMES = 100  # entity names listed in the briefing


def _resource_errors(read: Callable[[], str]) -> str:
    """Tool errors as resource errors: not found when a name is unknown, else refused with the reason."""
    try:
        return read()
    except ToolError as exc:
        text = str(exc)
        if text.startswith(("no entity named", "unknown library")):
            raise ResourceNotFoundError(text) from None
        raise ResourceError(text) from None


def register_resources(register: ResourceRegistrar, ctx: PluginContext, libs: Libraries) -> None:
    def manual(library: str) -> str:
        """A library's manual (meta.md): how the library is kept."""

        def read() -> str:
            lib = libs.get(library)
            path = lib.manual_path()
            if not path.is_file():
                raise ResourceNotFoundError(
                    f"library '{library}' has no manual yet ({MANUAL_NAME}.md); add_manual_section creates it"
                )
            return lib.read_text(MANUAL_NAME, path)

        return _resource_errors(read)

    def entity(library: str, entity: str) -> str:
        """One entity of a library: its whole Markdown file, front matter included ('.md' may be left off)."""
        name = entity.removesuffix(".md")

        def read() -> str:
            lib = libs.get(library)
            return lib.read_text(name, lib.require([name])[0])

        return _resource_errors(read)

    # The manual first: the SDK tries templates in order, and {entity} would match 'meta.md' too.
    register(
        manual,
        "library://{library}/meta.md",
        name="library_manual",
        title="A library's manual",
        mime_type=MARKDOWN,
        category="read",
        requires="read_manual",
    )
    register(
        entity,
        "library://{library}/{entity}",
        name="library_entity",
        title="An entity of a library",
        mime_type=MARKDOWN,
        category="read",
        requires="read_entities",
    )


LibraryArg = Annotated[str, Field(description="The library (a configured name, e.g. 'work').")]


def register_prompts(register: PromptRegistrar, ctx: PluginContext, libs: Libraries) -> None:
    def library_briefing(library_name: LibraryArg) -> str:
        """Start a session with a library: its manual, what it holds, and how to read and keep it."""
        lib = libs.get(library_name)
        path = lib.manual_path()
        names = lib.names()
        listed = ", ".join(names[:BRIEFING_NAMES]) + (
            f", … ({len(names) - BRIEFING_NAMES} more: list_entities with a glob finds them)"
            if len(names) > BRIEFING_NAMES
            else ""
        )
        if path.is_file():
            text = lib.read_text(MANUAL_NAME, path)
            cut = len(text) > BRIEFING_MANUAL_CHARS
            manual = (
                "Its manual (meta.md) says how the library is kept; follow it:\n\n"
                f"<manual>\n{text[:BRIEFING_MANUAL_CHARS]}\n</manual>"
                + ("\n(The manual is cut here; read_manual returns all of it.)" if cut else "")
            )
        else:
            manual = (
                "It has no manual (meta.md) yet. If you may write to it, offer to start one with "
                "add_manual_section once its conventions become clear."
            )
        return (
            f"We are working with the knowledge library '{library_name}' this session.\n\n"
            f"{manual}\n\n"
            f"It holds {len(names)} entities" + (f": {listed}." if names else ".") + "\n\n"
            "How to use it:\n"
            "- Read in three depths: get_entities_toc for the outline, read_entities_sections for the sections "
            "you need, read_entities for whole files. find_relations shows how entities link.\n"
            "- Edits match exact text, never line numbers: copy the text from a read first.\n"
            "- New entities: add_entities with an entity_type; leave content empty to start from the sections "
            "entities of that type already use.\n"
            "- Keep the manual's conventions (names, sections, relation types) in everything you write.\n\n"
            "Start by telling me in a few lines what this library is for and how it is organised, going by "
            "the manual; then ask what we are doing today."
        )

    def record_decision(
        library_name: LibraryArg,
        decision: Annotated[str, Field(description="The decision, in a sentence or two.")],
        context: Annotated[str, Field(description="Why it came up, what else was considered.")] = "",
    ) -> str:
        """Record a decision in a library as an entity of type 'decision', following the library's manual."""
        libs.get(library_name)  # an unknown library is refused here, with the known names
        why = f"\nContext given: {context}\n" if context.strip() else ""
        return (
            f"Record this decision in the library '{library_name}':\n\n{decision}\n{why}\n"
            "Steps:\n"
            f"1. read_manual('{library_name}'): follow what it says about decisions (naming, sections, "
            "relations, a decision log).\n"
            "2. list_entities with a glob on the topic's key words: if a decision on this already exists, "
            "update it (add_entity_content, replace_entity_section) rather than adding a second one; say what "
            "it replaces.\n"
            "3. Otherwise add_entities with one entity: a short kebab-case name, entity_type 'decision', and "
            "no content, so it starts from the sections the library's decisions use (by default Context, "
            "Decision, Consequences). Then fill each section with add_entity_content(in_section=...): the "
            "context and the options weighed, the decision itself, and its consequences and follow-ups.\n"
            "4. create_relations from the decision to the entities it concerns (projects, people, "
            "components), with relation types the library already uses (find_relations lists them).\n"
            "5. If the manual keeps a list of decisions, add a line for this one with add_manual_section.\n"
            "Finally, show me the entity's name and a one-line summary of what was recorded."
        )

    register(library_briefing, title="Briefing from a library's manual", category="read", requires="read_manual")
    register(record_decision, title="Record a decision in a library", category="write", requires="add_entities")
