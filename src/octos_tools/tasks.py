"""Background tasks: :class:`TaskSupervisor`, task handles and per-task output logs.

Spawn-only tools (octos ``tools/spawn.rs``) and sub-agents (``spawn_agent``) run as supervised
background tasks. Each task has an id (its *task handle*), an owner session, a status, a
result, and an append-only UTF-8 output log on disk that ``read_task_output`` reads in
pieces, so a large output never floods the model's context.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from .tool_types import ToolResult

__all__ = ["SPAWN_ONLY_READ_MODES", "TaskRecord", "TaskStatus", "TaskSupervisor"]

SPAWN_ONLY_READ_MODES = ("head", "tail", "grep", "line_range", "file")
"""The ``read_task_output`` modes a spawn-only envelope advertises."""


class TaskStatus(StrEnum):
    """Life cycle of a background task."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


_TERMINAL = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})


@dataclass
class TaskRecord:
    """One supervised task.

    Attributes:
        id: the task handle (a UUID string).
        tool_name: the tool (or agent kind) that runs.
        tool_call_id: the model's call id that started it.
        session_key: the owning session; ``None`` = readable by any session.
        status: the :class:`TaskStatus`.
        created_at / finished_at: Unix times in seconds.
        args: the arguments it was started with.
        result: the final :class:`~octos_tools.tool_types.ToolResult`, when finished.
        error: a text for an exception that ended it, if any.
        output_path: the task's append-only output log (UTF-8).
        output_files: workspace-relative files the task declared as its outputs.
        metadata: free-form values of the starter (agent role, delegate state, …).
        inputs: inputs recorded by ``send_input`` while the task ran.
    """

    id: str
    tool_name: str
    tool_call_id: str
    session_key: str | None
    status: TaskStatus
    created_at: float
    output_path: Path
    finished_at: float | None = None
    args: dict[str, Any] = field(default_factory=dict)
    result: ToolResult | None = None
    error: str | None = None
    output_files: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    inputs: list[Any] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        """Whether the task has finished (completed, failed or cancelled)."""
        return self.status in _TERMINAL

    def append_output(self, text: str) -> None:
        """Append ``text`` to this task's output log (UTF-8; undecodable characters
        replaced)."""
        with self.output_path.open("a", encoding="utf-8", errors="replace") as fh:
            fh.write(text)

    def output_tail(self, max_chars: int = 2000) -> str:
        """The last ``max_chars`` characters of the output log (``""`` when it is empty or
        gone), cut after a line break when one is in reach, so a failure can show what the
        task did last. Reads at most ``4 * max_chars`` bytes from the end."""
        try:
            with self.output_path.open("rb") as fh:
                end = fh.seek(0, 2)
                fh.seek(max(0, end - 4 * max_chars))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        if len(text) <= max_chars:
            return text
        text = text[-max_chars:]
        cut = text.find("\n")
        return text[cut + 1 :] if 0 <= cut < max_chars // 2 else text

    def summary(self) -> dict[str, Any]:
        """A compact JSON view (id, tool, status, times, error)."""
        return {
            "task_handle": self.id,
            "tool": self.tool_name,
            "status": self.status.value,
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "error": self.error,
            "output_files": list(self.output_files),
        }


TaskRunner = Callable[[TaskRecord], Awaitable[ToolResult]]
"""``await run(record) -> ToolResult``: the body of a task."""


class TaskSupervisor:
    """Starts, tracks, waits for and cancels background tasks.

    Tasks run as :mod:`asyncio` tasks on the running event loop. Output logs live in
    ``output_dir`` (a private temporary folder by default, removed by :meth:`aclose`).

    Args:
        output_dir: folder for per-task output logs; ``None`` makes a temporary one.
    """

    def __init__(self, output_dir: Path | None = None) -> None:
        self._own_dir = output_dir is None
        self._output_dir = output_dir
        self._tasks: dict[str, TaskRecord] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._done_events: dict[str, asyncio.Event] = {}

    @property
    def output_dir(self) -> Path:
        """The folder holding the task logs (created on first use)."""
        if self._output_dir is None:
            self._output_dir = Path(tempfile.mkdtemp(prefix="octos-tasks-"))
        self._output_dir.mkdir(parents=True, exist_ok=True)
        return self._output_dir

    def spawn(
        self,
        run: TaskRunner,
        *,
        tool_name: str,
        tool_call_id: str = "",
        session_key: str | None = None,
        args: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> TaskRecord:
        """Start ``run(record)`` in the background and return its record at once.

        Must be called from a running event loop. The task's result (or the exception that
        ended it) is recorded; its output text is appended to ``record.output_path``.
        """
        task_id = str(uuid.uuid4())
        record = TaskRecord(
            id=task_id,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            session_key=session_key,
            status=TaskStatus.PENDING,
            created_at=time.time(),
            output_path=self.output_dir / f"{task_id}.log",
            args=dict(args or {}),
            metadata=dict(metadata or {}),
        )
        record.output_path.touch()
        self._tasks[task_id] = record
        self._done_events[task_id] = asyncio.Event()
        self._running[task_id] = asyncio.get_running_loop().create_task(
            self._run(record, run), name=f"octos-task-{tool_name}-{task_id[:8]}"
        )
        return record

    async def _run(self, record: TaskRecord, run: TaskRunner) -> None:
        record.status = TaskStatus.RUNNING
        try:
            result = await run(record)
        except asyncio.CancelledError:
            record.status = TaskStatus.CANCELLED
            record.error = "cancelled"
            raise
        except Exception as exc:  # noqa: BLE001 - a task never crashes the host
            record.status = TaskStatus.FAILED
            record.error = f"{type(exc).__name__}: {exc}"
            self.append_output(record.id, f"[error] {record.error}\n")
        else:
            record.result = result
            record.status = TaskStatus.COMPLETED if result.success else TaskStatus.FAILED
            if not result.success:
                err = result.error
                record.error = err["message"] if err else result.output[:500]
        finally:
            record.finished_at = time.time()
            self._running.pop(record.id, None)
            event = self._done_events.get(record.id)
            if event is not None:
                event.set()

    def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or ``None``."""
        return self._tasks.get(task_id)

    def list(self, session_key: str | None = None) -> list[TaskRecord]:
        """All records (of one session when ``session_key`` is given), oldest first."""
        records = list(self._tasks.values())
        if session_key is not None:
            records = [r for r in records if r.session_key == session_key]
        return records

    def append_output(self, task_id: str, text: str) -> None:
        """Append ``text`` to the task's output log.

        Raises:
            KeyError: for an unknown ``task_id``.
        """
        self._tasks[task_id].append_output(text)

    async def wait(
        self, ids: Sequence[str], timeout: float | None
    ) -> tuple[dict[str, TaskRecord], bool]:
        """Wait until every known task of ``ids`` is terminal, or ``timeout`` seconds pass.

        Unknown ids are left out of the returned mapping.

        Returns:
            ``(records by id, timed_out)``.
        """
        known = [i for i in ids if i in self._tasks]
        events = [self._done_events[i] for i in known if not self._tasks[i].terminal]
        timed_out = False
        if events:
            try:
                await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), timeout=timeout)
            except TimeoutError:
                timed_out = True
        return {i: self._tasks[i] for i in known}, timed_out

    def cancel(self, task_id: str) -> bool:
        """Cancel a running task; ``False`` when unknown or already finished."""
        task = self._running.get(task_id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def aclose(self) -> None:
        """Cancel every running task, wait for them, and remove a temporary log folder."""
        running = list(self._running.values())
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if self._own_dir and self._output_dir is not None:
            shutil.rmtree(self._output_dir, ignore_errors=True)
