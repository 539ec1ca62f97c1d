"""The docs are true: one section per hook in docs/plugin_hooks.md, every command and link shown works, and every
plugin's tool is in its README's tool table."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import click

from nexus_core.host.discovery import get_plugin_manager
from tests.conftest import nexus_command, server_env

DOCS = Path(__file__).parents[2] / "docs" / "plugin_hooks.md"


def test_every_hook_is_documented_with_its_signature() -> None:
    headings = set(re.findall(r"^## (nexus_\w+\(.*\))$", DOCS.read_text(), flags=re.MULTILINE))
    hooks = get_plugin_manager().hook
    expected = {
        f"{name}({', '.join(getattr(hooks, name).spec.argnames)})" for name in dir(hooks) if name.startswith("nexus_")
    }
    assert expected, "no hook specs found"
    assert expected - headings == set(), "hooks without a section in docs/plugin_hooks.md"
    assert headings - expected == set(), "sections for hooks that do not exist (or with stale signatures)"


def test_every_hook_spec_has_a_docstring_with_its_parameters() -> None:
    hooks = get_plugin_manager().hook
    for name in (n for n in dir(hooks) if n.startswith("nexus_")):
        spec = getattr(hooks, name).spec
        doc = spec.function.__doc__ or ""
        assert doc.strip(), f"{name} has no docstring"
        for arg in spec.argnames:
            assert f":param {arg}:" in doc, f"{name} does not document {arg}"


# -- every command the README and docs/ show --------------------------------------------------------------------

REPO = Path(__file__).parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PLACEHOLDERS = {"CLIENT": "cursor", "TOOL": "get_stats", "NAME": "work", "PATH": ".", "FILE": "x.json"}


def _commands(page: Path) -> list[tuple[str, bool]]:
    """Every ``nexus …`` (and ``nexus-mcp-server …``) command on the page, and whether it is whole: a shell block's
    line is; an inline code span may name a command in prose (`nexus install` adds…) without its arguments."""
    text = page.read_text()
    found = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, flags=re.DOTALL):
        found += [(line.split("  #")[0].strip(), True) for line in block.splitlines()]
    found += [(span, False) for span in re.findall(r"`((?:\.venv/bin/)?nexus(?:-mcp-server)? [^`]*)`", text)]
    return [(c, whole) for c, whole in found if re.match(r"^(\.venv/bin/)?nexus(-mcp-server)?( |$)", c)]


def _argv(command: str) -> list[str] | None:
    """The arguments after ``nexus``, placeholders filled in; None for a synopsis (``[--opt]``, ``a|b``, ``…``).
    ``nexus-mcp-server ARGS`` is ``nexus serve ARGS``."""
    if re.search(r"[\[\]|…{}<>$]", command) or "..." in command:
        return None
    first, *words = shlex.split(command)
    if first.endswith("nexus-mcp-server"):
        words = ["serve", *words]
    if words and words[0].isupper():  # `nexus NAME`: any plugin's command
        return None
    return [PLACEHOLDERS.get(w, w) for w in words]


def test_every_nexus_command_in_the_readme_and_docs_parses() -> None:
    """Each command is parsed by the real `nexus` CLI as a user would type it: its subcommands and options exist,
    its choices are valid. This reaches the commands named in prose too (`nexus trust PATH`); those of the shell
    blocks are also run, as written, by test_doc_commands.py."""
    from nexus_core.cli.main import cli

    checked, wrong = 0, []
    for page in PAGES:
        for command, whole in _commands(page):
            argv = _argv(command)
            if argv is None:
                continue
            checked += 1
            error = _parse(cli, argv, whole)
            if error:
                wrong.append(f"{page.name}: `{command}`: {error}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 20


def _parse(cli: click.Group, argv: list[str], whole: bool) -> str | None:
    command: click.Command = cli
    args = list(argv)
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        found = command.get_command(click.Context(command), args[0])
        if found is None:
            return f"no command {args[0]!r}"
        command, args = found, args[1:]
    if "--help" in args or "--version" in args:
        return None
    try:
        command.make_context(command.name or "nexus", args)
    except click.MissingParameter as exc:
        return exc.format_message() if whole else None
    except click.BadParameter as exc:
        if "does not exist" not in exc.format_message():  # a folder of the reader's own, e.g. ~/code/shop
            return exc.format_message()
    except click.UsageError as exc:
        return exc.format_message()
    except click.exceptions.Exit:
        pass
    return None


def test_the_readme_starts_with_the_two_commands_and_stays_short() -> None:
    text = (REPO / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    assert first is not None
    lines = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert lines == ["scripts/setup && .venv/bin/nexus serve", "scripts/test"]
    for script in ("scripts/setup", "scripts/test"):
        assert (REPO / script).is_file() and os.access(REPO / script, os.X_OK)
    assert len(text.split()) < 1500
    assert "source .venv/bin/activate" in text  # how the bare `nexus` of the later commands gets on the PATH


def test_every_relative_link_in_the_readme_and_docs_exists() -> None:
    missing = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                missing.append(f"{page.name}: {target}")
    assert not missing, missing


def test_every_tool_of_a_plugin_is_in_its_readmes_tool_table() -> None:
    """Each tool a first-party plugin serves (granted or not: `nexus tools` lists them all) is named, as `name`,
    in a cell of a table row of plugins/nexus_PLUGIN/README.md (not only in another tool's description)."""
    out = subprocess.run(nexus_command("tools"), capture_output=True, text=True, env=server_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    missing = []
    for line in out.stdout.splitlines()[1:]:
        tool, plugin = line.split()[:2]
        readme = REPO / "plugins" / f"nexus_{plugin}" / "README.md"
        # a code span that opens a cell, or follows ",", ", and" or "/" in one (a cell naming several tools)
        listed = rf"^\|(?:[^\n]*?(?:\||,|/))?\s*(?:and\s+)?`{tool}\b"
        if readme.is_file() and not re.search(listed, readme.read_text(), flags=re.MULTILINE):
            missing.append(f"{plugin}: {tool}")
    assert not missing, f"tools missing from their plugin README's tool table: {missing}"
