"""Tool files: a Python file of tools, read into the live tools the host serves (see ``docs/tool_files.md``).

A file is one tool, in the McpManager design's shape as module-level names
(``name``, ``description``, ``category``, ``parameters``, ``execute``), or
several: ``TOOLS``, a list of functions or dicts with the same keys. With
``parameters`` (a JSON schema) the arguments are checked against it and
``execute(args, context)`` gets them as one dict; without, ``execute``'s typed
parameters are the schema, as for any Nexus tool. A parameter named
``context`` gets the tool's ``ToolContext`` either way.

Files are compiled from their source on every load, never from a cached
``.pyc``: an edit in the same second as the previous one must not be missed.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio.to_thread
import jsonschema
import mcp_types as types
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from nexus_core.fs.modes import private_folder
from nexus_core.fs.paths import PathPolicy
from nexus_core.host.argument_errors import argument_error
from nexus_core.host.live_items import LiveTool

DEFAULT_CATEGORY = "custom"
CATEGORY_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
KEYS = (
    *("name", "description", "title", "category", "parameters", "execute"),
    *("read_only", "destructive", "idempotent", "open_world"),
)
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}
_TYPES |= {"array": "a list", "object": "an object", "null": "null"}


class ToolFileError(Exception):
    """A tool file that cannot be served; the message says where and why, in one line."""


@dataclass
class ToolContext:
    """What a tool file's function gets as ``context``.

    ``paths`` is the path policy of the ``tools`` plugin (the session's roots, deny
    patterns, Nexus's own files protected): resolve every path a tool touches with
    ``context.paths.resolve(path, write=...)``. ``data_dir`` is a folder of the
    file's own (created on first use), ``log`` writes to stderr.
    """

    tool: str
    file: Path
    paths: PathPolicy
    log: logging.Logger
    data_dir_path: Path = field(repr=False)

    @cached_property
    def data_dir(self) -> Path:
        return private_folder(self.data_dir_path)


def load_tool_file(
    file: Path, module_name: str, categories: Collection[str], context_for: Callable[[str], ToolContext]
) -> list[LiveTool]:
    """Run ``file`` as the module ``module_name`` and return its tools; ``ToolFileError`` when it cannot serve.

    The module replaces the one of that name in ``sys.modules`` (where dataclasses and pydantic look
    it up) only when every tool in it is valid.
    """
    previous = sys.modules.get(module_name)
    try:
        module = _run(file, module_name)
        tools = [_live_tool(spec, file, categories, context_for) for spec in _specs(module, file)]
        names = [tool.definition.name for tool in tools]
        if twice := next((n for n in names if names.count(n) > 1), None):
            raise ToolFileError(f"defines tool '{twice}' twice")
    except BaseException:
        if previous is None:
            sys.modules.pop(module_name, None)
        else:
            sys.modules[module_name] = previous
        raise
    return tools


def _run(file: Path, module_name: str) -> ModuleType:
    try:
        source = file.read_bytes()
        code = compile(source, str(file), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ToolFileError(f"SyntaxError at line {exc.lineno}: {exc.msg}") from None
    except OSError as exc:
        raise ToolFileError(f"cannot read it: {exc.strerror}") from None
    module = sys.modules[module_name] = ModuleType(module_name)  # while it runs, too
    module.__file__ = str(file)
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        raise ToolFileError(_crash(exc, file)) from exc
    return module


def _crash(exc: BaseException, file: Path) -> str:
    """``NameError at line 5: name 'x' is not defined``: the last line of the file the error passed through."""
    lines = [tb.tb_lineno for tb in _frames(exc.__traceback__) if tb.tb_frame.f_code.co_filename == str(file)]
    where = f" at line {lines[-1]}" if lines else ""
    return f"{type(exc).__name__}{where}: {exc}"


def _frames(tb: Any) -> list[Any]:
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames


def _specs(module: ModuleType, file: Path) -> list[dict[str, Any]]:
    """Each tool of the module as a dict of ``KEYS``."""
    listed = getattr(module, "TOOLS", None)
    if listed is None:
        if not callable(getattr(module, "execute", None)):
            raise ToolFileError("defines no tool: give it an execute function (one tool) or a TOOLS list")
        spec = {key: getattr(module, key) for key in KEYS if hasattr(module, key)}
        return [{"name": file.stem, "description": module.__doc__, **spec}]
    if not isinstance(listed, list | tuple):
        raise ToolFileError("TOOLS must be a list of functions or dicts")
    return [_spec(item, f"TOOLS[{i}]") for i, item in enumerate(listed)]


def _spec(item: Any, where: str) -> dict[str, Any]:
    if callable(item):
        return {"execute": item}
    if not isinstance(item, Mapping):
        raise ToolFileError(f"{where} is neither a function nor a dict")
    if unknown := next((key for key in item if key not in KEYS), None):
        raise ToolFileError(f"{where} has unknown key '{unknown}' (known: {', '.join(KEYS)})")
    if not callable(item.get("execute")):
        raise ToolFileError(f"{where} has no execute function")
    return dict(item)


def _live_tool(
    spec: dict[str, Any], file: Path, categories: Collection[str], context_for: Callable[[str], ToolContext]
) -> LiveTool:
    execute = spec["execute"]
    name = spec.get("name") or execute.__name__
    if not isinstance(name, str) or not NAME.match(name):
        raise ToolFileError(f"tool name {name!r} must start with a letter (letters, digits, _ . - after; at most 64)")
    category = spec.get("category") or DEFAULT_CATEGORY
    if not isinstance(category, str) or not CATEGORY_NAME.match(category):
        raise ToolFileError(f"tool '{name}': category {category!r} must be a name (letters, digits, _ and -)")
    # A category of the file's own (003's 'basic') is granted like any other: until it is, the tool is refused.
    refusal = None
    if category not in categories:
        refusal = (
            f"permission denied: tool '{name}' needs the '{category}' category of plugin 'tools', which is not "
            f'granted; add "{category}" to categories in [plugins.tools]'
        )
    description = inspect.cleandoc(spec.get("description") or "") or inspect.getdoc(execute) or ""
    hints = _annotations(spec)
    meta = {"nexus/file": str(file)}
    context = context_for(name)
    if "parameters" in spec:
        schema = _checked_schema(name, spec["parameters"])
        definition = types.Tool(
            name=name, title=spec.get("title"), description=description, input_schema=schema, annotations=hints
        )
        call = functools.partial(_call_with_schema, name, jsonschema.validators.validator_for(schema)(schema), execute)
    else:
        wants_context = "context" in _parameters(execute)
        try:
            sdk = Tool.from_function(execute, name=name, description=description, context_kwarg=_if(wants_context))
        except Exception as exc:  # e.g. a parameter type pydantic cannot describe
            raise ToolFileError(f"tool '{name}': {exc}") from None
        definition = types.Tool(
            name=name,
            title=spec.get("title"),
            description=description,
            input_schema=sdk.parameters,
            output_schema=sdk.output_schema,
            annotations=hints,
        )
        call = functools.partial(_call_typed, sdk)
    definition = definition.model_copy(update={"meta": meta})
    return LiveTool(definition, functools.partial(call, context=context), category, refusal)


def _if(wanted: bool) -> str | None:
    return "context" if wanted else None


def _parameters(fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def _annotations(spec: Mapping[str, Any]) -> types.ToolAnnotations:
    """The MCP hints, with the same defaults as ``register(...)`` for a plugin's tools."""
    read_only = bool(spec.get("read_only", False))
    hints: dict[str, Any] = {
        "readOnlyHint": read_only,
        "idempotentHint": bool(spec.get("idempotent", False)),
        "openWorldHint": bool(spec.get("open_world", False)),
    }
    if not read_only:
        hints["destructiveHint"] = bool(spec.get("destructive", True))
    return types.ToolAnnotations(title=spec.get("title"), **hints)


def _checked_schema(name: str, schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise ToolFileError(f'tool \'{name}\': parameters must be a JSON schema with "type": "object"')
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(map(str, exc.path))
        raise ToolFileError(f"tool '{name}': parameters is not a valid JSON schema: {where}: {exc.message}") from None
    return dict(schema)


# -- calls ------------------------------------------------------------------------------


async def _call_typed(sdk: Tool, arguments: dict[str, Any], *, context: ToolContext) -> types.CallToolResult:
    """Validated by the signature and converted like a plugin's registered tool."""
    try:
        return await sdk.run(arguments, context=context, convert_result=True)  # type: ignore[arg-type]
    except ToolError as exc:
        if isinstance(exc.__cause__, ValidationError):  # one line, as for every Nexus tool
            raise ToolError(argument_error(sdk.name, exc.__cause__, arguments, sdk.parameters)) from None
        raise


async def _call_with_schema(
    name: str, validator: Any, execute: Callable[..., Any], arguments: dict[str, Any], *, context: ToolContext
) -> types.CallToolResult:
    """``execute(args, context)`` with the arguments checked against the schema and its defaults filled in."""
    properties = validator.schema.get("properties") or {}
    args = {key: prop["default"] for key, prop in properties.items() if isinstance(prop, dict) and "default" in prop}
    args |= arguments
    errors = sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise ToolError(f"invalid arguments for {name}: " + "; ".join(map(_describe, errors)))
    given = (args, context) if _takes_context(execute) else (args,)
    try:
        if inspect.iscoroutinefunction(execute):
            result = await execute(*given)
        else:
            result = await anyio.to_thread.run_sync(execute, *given)
            if inspect.isawaitable(result):
                result = await result
    except (ToolError, MCPError) as exc:
        if isinstance(exc, ToolError):
            raise ToolError(f"Error executing tool {name}: {exc}") from exc
        raise
    except Exception as exc:  # a crash: logged with its traceback; the model sees only that it failed
        raise UnexpectedToolError(f"Error executing tool {name}") from exc
    return _result(result)


def _takes_context(fn: Callable[..., Any]) -> bool:
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = _parameters(fn).values()
    return any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params) or (
        sum(p.kind in positional for p in params) >= 2
    )


def _result(value: Any) -> types.CallToolResult:
    if isinstance(value, types.CallToolResult):
        return value
    if value is None:
        return types.CallToolResult(content=[])
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    text = json.dumps(value, ensure_ascii=False, default=str)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


def _describe(error: jsonschema.ValidationError) -> str:
    """One schema violation the way Nexus words a bad argument: ``limit must be an integer, got 'x'``."""
    where = _where(error.absolute_path)
    if error.validator == "required":
        missing = re.match(r"^'(.+)' is a required property$", error.message)
        return f"{_where([*error.absolute_path, missing[1]]) if missing else where} is required"
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"{where} must be {' or '.join(_TYPES.get(t, t) for t in wanted)}, got {error.instance!r}"
    if error.validator == "enum":
        return f"{where} must be one of {error.validator_value}, got {error.instance!r}"
    return f"{where}: {error.message}"


def _where(path: Any) -> str:
    parts = list(path)
    if not parts:
        return "arguments"
    return str(parts[0]) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[1:])
