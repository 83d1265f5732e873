"""Change listeners: the small callback list the registry and each session keep."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Listeners"]

T = TypeVar("T")


class Listeners(Generic[T]):
    """Callbacks called with one subject after each change; a failing callback is logged
    and the others still run.

    Args:
        logger: where a failing callback is logged.
        what: how the log names the listener (e.g. ``"registry listener"``).
    """

    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._callbacks: list[Callable[[T], None]] = []
        self._logger = logger
        self._what = what

    def add(self, callback: Callable[[T], None]) -> None:
        """Call ``callback(subject)`` on every :meth:`fire`."""
        self._callbacks.append(callback)

    def remove(self, callback: Callable[[T], None]) -> None:
        """Undo :meth:`add` (no error if absent)."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def clear(self) -> None:
        """Forget every callback."""
        self._callbacks.clear()

    def fire(self, subject: T) -> None:
        """Call every callback with ``subject``, in the order they were added."""
        for callback in list(self._callbacks):
            try:
                callback(subject)
            except Exception:
                self._logger.exception("%s failed", self._what)
