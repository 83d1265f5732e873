"""Small test tools shared by the core tests."""

from __future__ import annotations

from typing import Any

import anyio

from octos_tools.errors import ErrorKind, ToolError
from octos_tools.tool_types import ConcurrencyClass, JSONObject, Tool, ToolResult


class EchoTool(Tool):
    """Echoes its ``text`` argument; records every call in ``log``."""

    def __init__(
        self,
        name: str = "echo",
        *,
        tags: tuple[str, ...] = (),
        exclusive: bool = False,
        delay: float = 0.0,
        fail: bool = False,
        log: list[str] | None = None,
        description: str | None = None,
    ) -> None:
        self.name = name
        self.description = description or f"Echo the given text ({name})."
        self.tags = tags
        self.concurrency_class = ConcurrencyClass.EXCLUSIVE if exclusive else ConcurrencyClass.SAFE
        self.input_schema = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "additionalProperties": False,
        }
        self.delay = delay
        self.fail = fail
        self.log = log if log is not None else []

    async def execute(self, args: JSONObject) -> ToolResult:
        self.log.append(f"start:{self.name}")
        if self.delay:
            await anyio.sleep(self.delay)
        self.log.append(f"end:{self.name}")
        if self.fail:
            raise ToolError(ErrorKind.NOT_FOUND, f"{self.name} failed on purpose")
        return ToolResult.ok(str(args.get("text", self.name)))


def tools(*names: str, **kwargs: Any) -> list[EchoTool]:
    return [EchoTool(n, **kwargs) for n in names]
