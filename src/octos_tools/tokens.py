"""Token counts of tool declarations, counted on exactly what a host forwards to the model.

A host declares each tool to the model as ``{"name", "description", "parameters"}`` (the
OpenAI function shape; Anthropic's ``input_schema`` holds the same schema and MCP's
``inputSchema`` too), serialised as compact JSON. :func:`spec_json` builds that text for one
:class:`~octos_tools.tool_types.ToolSpec` and :func:`request_json` for a whole ``tools`` list.

Counts are exact when the ``tokens`` extra is installed (``pip install
'octos-tools[tokens]'``): `bpe-openai <https://pypi.org/project/bpe-openai/>`_ ships the
OpenAI vocabularies (``o200k_base`` by default, ``cl100k_base`` on request) and needs no
download at run time. Without it, :class:`TokenCounter` falls back to the estimate Codex
uses, one token per four UTF-8 bytes rounded up, and says so in its :attr:`TokenCounter.label`
(on tool specs the estimate runs about 20 % high). ``bpe_openai`` is imported only when a
count is asked for: it takes about half a second to import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tool_types import ToolSpec

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "ESTIMATE_NAME",
    "TOKENIZER_NAME",
    "TokenCounter",
    "TokenReport",
    "count_tokens",
    "measure_specs",
    "request_json",
    "spec_json",
    "spec_payload",
    "token_counter",
]

DEFAULT_ENCODING = "o200k_base"
"""The vocabulary of current OpenAI models (GPT-4o and later)."""
ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
"""Vocabularies :func:`token_counter` can count exactly."""
ESTIMATE_NAME = "estimate: ceil(utf8_bytes / 4)"
"""What :func:`count_tokens` (and a counter without ``bpe-openai``) measures."""
TOKENIZER_NAME = ESTIMATE_NAME
"""Kept for callers of :func:`count_tokens`: the name of the estimate."""


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text.encode("utf-8")) / 4)`` (no tokenizer)."""
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """Counts tokens with one vocabulary, or estimates them.

    Attributes:
        encoding: the vocabulary name (``"o200k_base"``, ``"cl100k_base"``) or
            :data:`ESTIMATE_NAME` when the count is an estimate.
        exact: whether counts come from the real tokenizer.
    """

    encoding: str
    exact: bool
    _encode: Callable[[str], Sequence[int]] | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """How to name the counts next to a figure, e.g. ``"o200k_base (exact)"``."""
        if self.exact:
            return f"{self.encoding} (exact)"
        return f"{ESTIMATE_NAME} (install octos-tools[tokens] for exact counts)"

    def count(self, text: str) -> int:
        """Tokens of ``text`` (exact, or :func:`count_tokens`' estimate)."""
        if self._encode is None:
            return count_tokens(text)
        return len(self._encode(text))


def token_counter(encoding: str = DEFAULT_ENCODING, *, exact: bool | None = None) -> TokenCounter:
    """A :class:`TokenCounter` for ``encoding``.

    Args:
        encoding: ``"o200k_base"`` (default) or ``"cl100k_base"``.
        exact: ``None`` (default): exact when ``bpe-openai`` is installed, else the estimate;
            ``True``: exact or an error; ``False``: always the estimate.

    Raises:
        ValueError: for an encoding not in :data:`ENCODINGS`.
        ImportError: with ``exact=True`` when ``bpe-openai`` is not installed.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; use one of {', '.join(ENCODINGS)}")
    if exact is False:
        return TokenCounter(ESTIMATE_NAME, False)
    try:
        import bpe_openai  # type: ignore[import-untyped]
    except ImportError:
        if exact:
            raise ImportError(
                "exact token counts need bpe-openai: pip install 'octos-tools[tokens]'"
            ) from None
        return TokenCounter(ESTIMATE_NAME, False)
    enc = bpe_openai.get_encoding(encoding)
    return TokenCounter(encoding, True, enc.encode)


def spec_payload(spec: ToolSpec) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` of ``spec``: what a host forwards."""
    return {"name": spec.name, "description": spec.description, "parameters": spec.input_schema}


def _dumps(value: Any) -> str:
    # compact, and non-ASCII as is (what JSON.stringify and most hosts send)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def spec_json(spec: ToolSpec) -> str:
    """The compact JSON text of :func:`spec_payload`."""
    return _dumps(spec_payload(spec))


def request_json(specs: Sequence[ToolSpec]) -> str:
    """The compact JSON text of the ``tools`` list of one request: ``[payload, ...]``."""
    return _dumps([spec_payload(s) for s in specs])


@dataclass(frozen=True, slots=True)
class TokenReport:
    """Token counts of one request's tool list.

    Attributes:
        encoding: the vocabulary, or :data:`ESTIMATE_NAME`.
        exact: whether the counts are exact.
        label: :attr:`TokenCounter.label`.
        per_tool: ``name -> tokens`` of each spec's :func:`spec_json`, in list order.
        total: tokens of the whole list's :func:`request_json` (brackets and commas
            included, so it can differ from the sum of ``per_tool`` by a few tokens).
    """

    encoding: str
    exact: bool
    label: str
    per_tool: dict[str, int]
    total: int


def measure_specs(
    specs: Sequence[ToolSpec],
    encoding: str = DEFAULT_ENCODING,
    *,
    exact: bool | None = None,
    counter: TokenCounter | None = None,
) -> TokenReport:
    """Count the tokens of ``specs`` as one request declares them.

    Args:
        specs: the specs in request order (e.g. ``session.specs()``).
        encoding: see :func:`token_counter`.
        exact: see :func:`token_counter`.
        counter: a counter to reuse (``encoding`` and ``exact`` are then ignored).

    Raises:
        ValueError, ImportError: as :func:`token_counter`.
    """
    counter = counter or token_counter(encoding, exact=exact)
    per_tool = {s.name: counter.count(spec_json(s)) for s in specs}
    return TokenReport(
        counter.encoding, counter.exact, counter.label, per_tool, counter.count(request_json(specs))
    )
