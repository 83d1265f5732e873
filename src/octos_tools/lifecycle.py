"""LRU bookkeeping for active tools (octos ``tools/registry.rs`` ``ToolLifecycle``).

Pure bookkeeping: it decides *which* names to evict; the registry moves them to its deferred
set. Three design choices of octos's ``ToolLifecycle`` are kept exactly:

1. ``base_tools`` are never candidates, even when they alone fill every slot;
2. only tools idle for at least ``idle_threshold`` iterations are candidates (no thrashing);
3. only ``len(active) - max_active`` tools are evicted, the stalest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ToolLifecycle"]


class ToolLifecycle:
    """Per-session LRU state.

    Args:
        max_active: the most tools kept active (default 15).
        idle_threshold: iterations a tool must have been idle to be evicted (default 5).
        base_tools: names never evicted.

    Raises:
        ValueError: if ``max_active`` or ``idle_threshold`` is below 1.
    """

    def __init__(
        self, max_active: int = 15, idle_threshold: int = 5, base_tools: Iterable[str] = ()
    ) -> None:
        if max_active < 1:
            raise ValueError(f"max_active must be at least 1, got {max_active}")
        if idle_threshold < 1:
            raise ValueError(f"idle_threshold must be at least 1, got {idle_threshold}")
        self.max_active = max_active
        self.idle_threshold = idle_threshold
        self.base_tools: set[str] = set(base_tools)
        self.iteration = 0
        self.last_used: dict[str, int] = {}

    def tick(self) -> int:
        """Advance the iteration counter (call once before every model request)."""
        self.iteration += 1
        return self.iteration

    def record_use(self, name: str) -> None:
        """Mark ``name`` as used in the current iteration."""
        self.last_used[name] = self.iteration

    def idle_for(self, name: str) -> int:
        """Iterations since ``name`` was last used (never used counts from iteration 0)."""
        return self.iteration - self.last_used.get(name, 0)

    def find_evictable(self, active_names: Sequence[str]) -> list[str]:
        """Names to evict so that at most ``max_active`` stay active.

        Args:
            active_names: the currently active tool names (registered, not deferred, not
                spawn-only).

        Returns:
            At most ``len(active_names) - max_active`` names, stalest first; fewer when not
            enough tools are idle long enough; ``[]`` when within the limit.
        """
        if len(active_names) <= self.max_active:
            return []
        candidates = [
            (self.last_used.get(name, 0), index, name)
            for index, name in enumerate(active_names)
            if name not in self.base_tools and self.idle_for(name) >= self.idle_threshold
        ]
        candidates.sort()  # stalest first; registration order breaks ties (stable, testable)
        excess = len(active_names) - self.max_active
        return [name for _, _, name in candidates[:excess]]

    def copy_settings(self) -> ToolLifecycle:
        """A fresh lifecycle with the same settings and base tools (counters reset)."""
        return ToolLifecycle(self.max_active, self.idle_threshold, self.base_tools)
