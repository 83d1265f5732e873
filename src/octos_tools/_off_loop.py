"""Plugin tool calls run off the main event loop (issue 25, item 5).

A plugin is third-party code in this process. An ``async def`` tool that blocks (a
``time.sleep``, a synchronous HTTP client, a busy loop) would freeze the event loop that
serves every client, and its timeout could not fire: the timer runs on the loop it blocks.
So every call of a plugin tool runs on an event loop of its own, in a worker thread
(``anyio.to_thread.run_sync`` with ``abandon_on_cancel``), and the main loop only awaits it:

* a call that blocks its loop stalls nothing but itself: the main loop keeps serving;
* the call's timeout (and a client's cancellation) fires on the main loop: the call is
  answered at once with the typed ``timeout``, the plugin's task is cancelled on its own
  loop, and the worker thread is abandoned. Python cannot stop a thread: code blocked in a
  synchronous call runs until that call returns, then meets the cancellation at its next
  ``await``; its result is discarded;
* what a tool reaches through its :class:`~octos_tools.context.ToolContext` that lives on the
  main loop (``progress``, ``approval``, ``user_input``) is called back on the main loop.

A synchronous plugin tool (``@tool`` on a plain ``def``) takes the same path, so its timeout
holds too (a plain ``anyio.to_thread.run_sync`` shields the wait until the function returns).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import threading
import types
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from .context import ToolContext, use_context

__all__ = ["is_off_loop", "run_off_loop", "wrap_off_loop"]

_local = threading.local()
_WRAPPED = "_octos_off_loop"


def _on_plugin_loop() -> bool:
    return getattr(_local, "plugin_loop", False)


def _hop_back(fn: Callable[..., Awaitable[Any]] | None, token: Any) -> Any:
    """``fn`` (a coroutine function of the main loop) callable from the plugin loop: each
    call runs on the main loop; the plugin's own loop waits for it (it runs nothing else)."""
    if fn is None:
        return None

    async def on_main(*args: Any) -> Any:
        return await fn(*args)

    async def call(*args: Any) -> Any:
        return anyio.from_thread.run(on_main, *args, token=token)

    return call


def _plugin_context(ctx: ToolContext, token: Any) -> ToolContext:
    return dataclasses.replace(
        ctx,
        progress=_hop_back(ctx.progress, token),
        approval=_hop_back(ctx.approval, token),
        user_input=_hop_back(ctx.user_input, token),
    )


async def run_off_loop(call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Await ``call()`` run on a fresh event loop in a worker thread.

    Args:
        call: makes the coroutine to run (called in the worker thread).

    Returns:
        The coroutine's value; its exception is raised here.

    Raises:
        Cancellation of the awaiting task (a timeout, a client that left) is immediate: the
        coroutine's task is cancelled on its own loop and the thread is abandoned.
    """
    handle: dict[str, Any] = {}
    ready = threading.Event()

    def in_thread() -> Any:
        _local.plugin_loop = True
        try:
            with asyncio.Runner() as runner:

                async def main() -> Any:
                    handle["loop"] = asyncio.get_running_loop()
                    handle["task"] = asyncio.current_task()
                    ready.set()
                    return await call()

                return runner.run(main())
        finally:
            _local.plugin_loop = False
            ready.set()

    try:
        return await anyio.to_thread.run_sync(in_thread, abandon_on_cancel=True)
    except BaseException:
        if ready.is_set() and "task" in handle:
            try:
                handle["loop"].call_soon_threadsafe(handle["task"].cancel)
            except RuntimeError:  # the loop has closed: the call had finished
                pass
        raise


def _wrap(method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def off_loop(*args: Any) -> Any:
        if _on_plugin_loop():  # one plugin method calling another: already off the loop
            return await method(*args)
        token = anyio.lowlevel.current_token()
        mapped = tuple(_plugin_context(a, token) if isinstance(a, ToolContext) else a for a in args)
        ctx = next((a for a in mapped if isinstance(a, ToolContext)), None)

        async def call() -> Any:
            if ctx is None:
                return await method(*mapped)
            with use_context(ctx):
                return await method(*mapped)

        return await run_off_loop(call)

    setattr(off_loop, _WRAPPED, True)
    return off_loop


def is_off_loop(tool: object) -> bool:
    """Whether :func:`wrap_off_loop` wrapped ``tool`` (its calls run in worker threads)."""
    return bool(getattr(getattr(tool, "execute_with_context", None), _WRAPPED, False))


def wrap_off_loop(tool: object) -> None:
    """Make every call of ``tool`` (its ``execute_with_context`` and, for a typed tool,
    ``run``: what the call pipeline awaits) run off the main loop (module docstring).

    The tool object is kept (identity, type and attributes unchanged): the two methods are
    replaced on the instance. Wrapping twice is a no-op. A copy of a wrapped tool
    (``copy.copy`` in :meth:`~octos_tools.tool_types.Tool.with_workspace`, for
    :meth:`~octos_tools.registry.ToolRegistry.rebind_cwd`) carries the original's wrappers,
    which call the original's methods: wrapping the copy binds them to the copy.
    """
    for name in ("execute_with_context", "run"):
        method = getattr(tool, name, None)
        if method is None:
            continue
        if getattr(method, _WRAPPED, False):
            inner = getattr(method, "__wrapped__", None)
            owner = getattr(inner, "__self__", tool)
            if owner is tool or inner is None:
                continue  # wrapped already, for this object
            method = types.MethodType(inner.__func__, tool)  # a copy's stale wrapper
        try:
            setattr(tool, name, _wrap(method))
        except (AttributeError, TypeError):  # __slots__ or a read-only attribute
            continue
