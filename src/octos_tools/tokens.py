"""Token estimates for tool specs (what deferral and the LRU save).

No offline tokenizer with bundled data is available for the OpenAI/Anthropic vocabularies
(``tiktoken`` downloads its BPE files at run time), so octos-tools uses the estimate Codex
uses: one token per four UTF-8 bytes, rounded up. On JSON tool specs it lands within about
±15 % of cl100k/o200k counts; it is for comparing configurations, not for billing.
"""

from __future__ import annotations

__all__ = ["TOKENIZER_NAME", "count_tokens"]

TOKENIZER_NAME = "estimate: ceil(utf8_bytes / 4)"
"""What :func:`count_tokens` measures, printed next to every figure."""


def count_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text.encode("utf-8")) / 4)``."""
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4
