"""The client side of a mounted stdio MCP server: the SDK's ``stdio_client`` with a read
path that is linear in the reply and capped.

The SDK's reader splits ``buffer + chunk`` on every chunk, so a reply of *n* bytes costs
O(n²) time and copies (a 50 MB line: 18 s and 391 MB here). This one keeps the current line
as a list of chunks, looks for the newline only in each new chunk, and joins once per line.
A line longer than ``max_reply_bytes`` is never held: the reader records the overflow in
:attr:`ReplyCap.overflowed` and closes the read side, which ends every pending request with
``CONNECTION_CLOSED``; :class:`~octos_tools.mcp.connection.McpConnection` turns that into a
``reply_too_large`` error and restarts the server on the next call.

Spawning, the environment, stdin and the shutdown sequence (close stdin, wait, terminate the
process tree) are the SDK's own functions, unchanged; only the stdout reader differs.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.lowlevel

if TYPE_CHECKING:
    from mcp import StdioServerParameters

__all__ = ["ReplyCap", "capped_stdio_client"]


@dataclass
class ReplyCap:
    """The reply cap of one connection, and whether it was hit.

    Attributes:
        limit: bytes per message.
        overflowed: the size seen when a message went over ``limit`` (``0``: never).
    """

    limit: int
    overflowed: int = 0


class CappedStdioTransport:
    """An SDK ``Client`` target: ``async with`` yields the ``(read, write)`` streams of
    :func:`capped_stdio_client`."""

    def __init__(self, server: StdioServerParameters, cap: ReplyCap) -> None:
        self.server = server
        self.cap = cap
        self._cm: Any = None

    async def __aenter__(self) -> Any:
        self._cm = capped_stdio_client(self.server, self.cap)
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._cm.__aexit__(*exc_info)
        return result


@asynccontextmanager
async def capped_stdio_client(
    server: StdioServerParameters, cap: ReplyCap, errlog: TextIO = sys.stderr
) -> AsyncGenerator[Any, None]:
    """Start ``server`` and yield its ``(read_stream, write_stream)`` (see the module
    docstring).

    Raises:
        OSError: the server cannot be spawned.
    """
    import mcp_types as types
    from mcp.client import stdio as sdk
    from mcp.shared.message import SessionMessage

    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    encoding = server.encoding

    def parse(raw: bytes) -> SessionMessage | Exception:
        try:
            text = raw.decode(encoding, errors=server.encoding_error_handler)
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except ValueError as exc:
            return exc

    async def read_lines() -> None:
        assert process.stdout is not None
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await process.stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                piece = chunk[start:end]
                if size + len(piece) > cap.limit:
                    cap.overflowed = size + len(piece)
                    return
                parts.append(piece)
                line = b"".join(parts)
                parts, size, start = [], 0, end + 1
                if line.strip():
                    await read_writer.send(parse(line))
            rest = chunk[start:]
            size += len(rest)
            if size > cap.limit:
                cap.overflowed = size
                return
            if rest:
                parts.append(rest)

    async def stdout_reader() -> None:
        try:
            try:
                await read_lines()
            finally:
                # closing the read side first ends the pending requests (CONNECTION_CLOSED)
                # even while the server is still writing an oversized line
                await read_writer.aclose()
                await sdk._drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode(encoding))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
