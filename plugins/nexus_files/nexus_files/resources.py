"""The file:// resource template and the prompts."""

from __future__ import annotations

import mimetypes

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from nexus_core import PluginContext, ToolError

from .config import FilesConfig
from .fs import SNIFF_BYTES, looks_binary, read_data
from .git import DIFF_OPTIONS, Git, check_revision


def register_resources(register, ctx: PluginContext) -> None:
    config: FilesConfig = ctx.config
    policy = ctx.paths

    def read_resource(path: str) -> str | bytes:
        """A file inside the roots; the path is relative to the first root (file:///src/app.py)."""
        try:
            with policy.open_read(path) as opened:
                data = read_data(opened, path, config.max_file_size)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ResourceNotFoundError(f"no file '{path}' inside the roots") from None
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return data if looks_binary(data[:SNIFF_BYTES]) else data.decode("utf-8", errors="replace")

    register(
        read_resource,
        "file:///{+path}",
        name="file",
        title="File inside the roots",
        description="Read a file inside the roots: file:///<path relative to the first root>.",
        category="read",
        requires="read_file",
    )
    _ = mimetypes  # text/binary is decided from the content, the client sees str or bytes


def register_prompts(register, ctx: PluginContext) -> None:
    config: FilesConfig = ctx.config
    git = Git(ctx)

    async def review_diff(repo: str = ".", staged: str = "false", base: str = "") -> str:
        """Review the current changes of a repository: bugs, risks, tests, style."""
        if repo.startswith("-"):
            raise ValueError("repo must not start with '-'")
        cached = staged.strip().lower() in ("1", "true", "yes")
        if base:
            check_revision("base", base)
        top, ov = await git.repo(repo)
        await git.require_commits(top, ov, base=base)
        args = ["diff", *DIFF_OPTIONS, "--ignore-submodules=dirty", *(["--cached"] if cached else [])]
        patch = await git.patch(top, ov, [*args, "--end-of-options", *([base] if base else []), "--"])
        diff = patch.text
        notice = f"\n\n({patch.notice()}; do not ask for them.)" if patch.withheld else ""
        data = diff.encode("utf-8")
        if len(data) > config.max_output_bytes:
            diff = (
                data[: config.max_output_bytes].decode("utf-8", errors="ignore") + "\n[diff cut; use git_diff per path]"
            )
        what = "staged changes" if cached else f"changes against {base}" if base else "unstaged changes"
        if not diff.strip():
            return f"There are no {what} in {ctx.paths.display(top) or '.'}. Say so, and suggest git_status.{notice}"
        return (
            f"Review these {what} as a careful senior engineer. Point out bugs, edge cases, security risks, "
            "missing tests and unclear code, citing file and line. Be specific and brief; skip praise.\n\n"
            f"```diff\n{diff}\n```{notice}"
        )

    def explain_file(path: str) -> str:
        """Explain what a file does, how it is organised, and what to watch out for."""
        policy = ctx.paths
        try:
            with policy.open_read(path) as opened:
                real = opened.path
                data = read_data(opened, path, config.max_file_size)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ValueError(f"'{path}' is not a file inside the roots") from None
        if looks_binary(data[:SNIFF_BYTES]):
            raise ValueError(f"'{path}' is a binary file")
        text = data[: config.max_output_bytes].decode("utf-8", errors="ignore")
        cut = ""
        if len(data) > config.max_output_bytes:
            whole = text.count("\n")  # lines shown whole: the read_file offset (0-indexed) of the rest
            cut = f"\n[file cut; read the rest with read_file offset={whole}]"
        return (
            f"Explain the file {policy.display(real)}: its purpose, main parts and how they fit together, "
            "its inputs and outputs, and anything surprising or risky. Refer to line numbers.\n\n"
            f"```\n{text}\n```{cut}"
        )

    register(review_diff, title="Review a diff", category="vcs", requires="git_diff")
    register(explain_file, title="Explain a file", category="read", requires="read_file")
