"""A clipboard per client session (the skills design's v2 session state): copy lines, paste them elsewhere.

It lives in the session (``ctx.session_state()``): another client never sees it, and it is gone when its
session ends. ``clipboard_copy`` reads under the ``read`` grant; ``clipboard_paste`` writes under ``write``,
through the same checks, lock and atomic replacement as ``write_file``. It holds at most
``max_output_bytes``, so ``clipboard_show`` can always show it whole.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from nexus_core import PluginContext, ToolError, ToolRegistrar, locked

from .config import FilesConfig
from .fs import read_text
from .results import ToolOutput, tool
from .write import PathArg, check_content, replace

KEY = "clipboard"


class Clipboard(ToolOutput):
    path: str | None  # None while the clipboard is empty
    start_line: int  # 1-based; 0 when empty
    end_line: int
    lines: int
    bytes: int

    def render(self) -> str:
        if self.path is None:
            return "the clipboard is empty"
        span = f"lines {self.start_line}-{self.end_line}"
        return f"clipboard: {self.path} {span} ({self.lines} lines, {self.bytes} bytes)"


class ClipboardText(Clipboard):
    text: str

    def render(self) -> str:
        return super().render() + (f"\n{self.text}" if self.text else "")


class Pasted(ToolOutput):
    path: str
    line: int  # where the first pasted line now is, 1-based
    lines: int
    size: int  # of the file afterwards, in bytes
    created: bool

    def render(self) -> str:
        return f"pasted {self.lines} lines into {self.path} at line {self.line} (now {self.size} bytes)"


def clipboard_copy(
    ctx: PluginContext,
    path: PathArg,
    start_line: Annotated[int, Field(ge=1, description="1-based.")] = 1,
    end_line: Annotated[int | None, Field(ge=1, description="Inclusive; default: the end.")] = None,
) -> Clipboard:
    """Copy lines of a text file to this session's clipboard."""
    config: FilesConfig = ctx.config
    state = ctx.session_state()  # first: a request with no session learns it before any read
    text, shown = read_text(ctx.paths, path, config.max_file_size)
    lines = text.splitlines(keepends=True)
    if start_line > len(lines):
        raise ToolError(f"'{shown}' has {len(lines)} lines; start_line {start_line} is past its end")
    end = len(lines) if end_line is None else min(end_line, len(lines))
    if end < start_line:
        raise ToolError(f"end_line {end_line} is before start_line {start_line}")
    copied = "".join(lines[start_line - 1 : end])
    size = len(copied.encode("utf-8"))
    if size > config.max_output_bytes:
        raise ToolError(
            f"lines {start_line}-{end} of '{shown}' are {size} bytes, above the clipboard's limit of "
            f"{config.max_output_bytes} bytes (max_output_bytes); copy fewer lines"
        )
    held = Clipboard(path=shown, start_line=start_line, end_line=end, lines=end - start_line + 1, bytes=size)
    state[KEY] = ClipboardText(**held.model_dump(), text=copied)
    return held


def clipboard_show(ctx: PluginContext) -> ClipboardText:
    """What this session's clipboard holds: its text and where it was copied from."""
    return ctx.session_state().get(KEY) or ClipboardText(path=None, start_line=0, end_line=0, lines=0, bytes=0, text="")


def clipboard_paste(
    ctx: PluginContext,
    path: PathArg,
    line: Annotated[
        int | None, Field(ge=1, description="Insert before this line (1-based); default: after the last line.")
    ] = None,
) -> Pasted:
    """Insert this session's clipboard into a text file (created when missing), atomically."""
    config: FilesConfig = ctx.config
    clip: ClipboardText | None = ctx.session_state().get(KEY)
    if clip is None:
        raise ToolError("the clipboard is empty; copy lines with clipboard_copy first")
    policy = ctx.paths
    real = policy.resolve(path, write=True)
    shown = policy.display(real)
    with locked(real):  # read, insert, write back: no other change may come in between
        try:
            text, _ = read_text(policy, str(real), config.max_file_size, shown=shown)
            created = False
        except ToolError:
            if real.exists() or real.is_symlink():
                raise
            text, created = "", True
        lines = text.splitlines(keepends=True)
        at = len(lines) + 1 if line is None else line
        if at > len(lines) + 1:
            raise ToolError(f"'{shown}' has {len(lines)} lines; line must be 1 to {len(lines) + 1}")
        before, after = "".join(lines[: at - 1]), "".join(lines[at - 1 :])
        pasted = clip.text
        if before and not before.endswith("\n"):
            before += "\n"  # pasting after a last line that has no newline: the pasted lines start on their own
        if after and not pasted.endswith("\n"):
            pasted += "\n"
        data = check_content(config, before + pasted + after)
        replace(policy, real, shown, data)
    return Pasted(path=shown, line=before.count("\n") + 1, lines=clip.lines, size=len(data), created=created)


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    copy, show, paste = tool(clipboard_copy, ctx), tool(clipboard_show, ctx), tool(clipboard_paste, ctx)
    grab = "copy and paste, cut, grab lines to move or reuse elsewhere"  # keywords: tool search's words for the job
    register(copy, category="read", title="Copy lines", destructive=False, idempotent=True, keywords=grab)
    register(
        show, category="read", title="Show the clipboard", read_only=True, idempotent=True, keywords="what was copied"
    )
    register(paste, category="write", title="Paste lines", destructive=False, keywords="paste, insert what was copied")
