"""The current date and time in a time zone."""

# One tool per file, in the McpManager design's shape: name, description (this
# docstring), category, parameters as a JSON schema, and execute(args, context).

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nexus_core import ToolError

name = "get_time"
category = "read"
read_only = True
parameters = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string", "description": "An IANA time zone, e.g. Asia/Shanghai", "default": "UTC"},
    },
    "required": [],
}


def execute(args, context):
    try:
        zone = ZoneInfo(args["timezone"])
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown time zone '{args['timezone']}'") from None
    return datetime.now(zone).strftime("%Y-%m-%d %H:%M:%S %Z")
