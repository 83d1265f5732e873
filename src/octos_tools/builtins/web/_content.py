"""Response bodies to text: charset detection and HTML to Markdown or plain text.

HTML becomes Markdown with *markdownify* over *BeautifulSoup* (``html.parser``), or plain
text. Why markdownify: it converts the whole document deterministically (headings, links,
lists, tables, code) with no heuristics that drop content, is pure Python over bs4 and needs
no lxml; readability-lxml and trafilatura extract a "main article" with heuristics and pull in
lxml, which suits reading news, not fetching API docs or listings. Both are imported when a
page is converted, never at import time.

XHTML served as ``application/xhtml+xml`` is parsed the same way; its XML declaration,
doctype, comments and other markup declarations are dropped, never shown as text.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

__all__ = ["decode_body", "html_to_markdown", "html_to_text", "is_html", "is_text"]

_CHARSET_RE = re.compile(rb"""charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.IGNORECASE)
_META_RE = re.compile(rb"<meta\b[^>]*>", re.IGNORECASE)
_XML_DECL_RE = re.compile(rb"""^<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.\-]+)["']""")
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _codec(name: str | bytes | None) -> str | None:
    if not name:
        return None
    label = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    try:
        return codecs.lookup(label.strip()).name
    except LookupError:
        return None


def decode_body(body: bytes, content_type: str, *, cut: bool = False) -> tuple[str, str]:
    """Decode a response body to text.

    Order: a byte-order mark; the ``charset`` of ``content_type``; for HTML/XML the
    document's ``<meta charset>`` / ``<meta http-equiv content="…charset=">`` / XML
    declaration in the first 4 KiB; then UTF-8; then windows-1252 (the web's default).
    Undecodable bytes become U+FFFD. A label naming an unknown codec is ignored.

    Args:
        body: the raw (content-decoded) bytes.
        content_type: the ``Content-Type`` header value (``""`` if absent).
        cut: the body was cut at the size cap, so a truncated UTF-8 sequence at the very end
            does not disqualify UTF-8.

    Returns:
        ``(text, codec name used)``.
    """
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body.decode(name, errors="replace"), name
    charset = None
    m = _CHARSET_RE.search(content_type.encode("latin-1", "replace"))
    if m:
        charset = _codec(m.group(1))
    if charset is None:
        head = body[:4096]
        x = _XML_DECL_RE.match(head)
        if x:
            charset = _codec(x.group(1))
        for meta in _META_RE.findall(head):
            if charset is not None:
                break
            mm = _CHARSET_RE.search(meta)
            if mm:
                charset = _codec(mm.group(1))
        if charset is not None and charset.startswith("utf-16"):
            charset = "utf-8"  # a byte-level meta cannot really say UTF-16 (HTML spec)
    if charset is not None:
        return body.decode(charset, errors="replace"), charset
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(body) - 3:
            return body.decode("utf-8", errors="replace"), "utf-8"
    return body.decode("cp1252", errors="replace"), "cp1252"


_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "object")


def _soup(html: str) -> tuple[Any, str | None]:
    from bs4 import BeautifulSoup
    from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup.find_all([*_DROP_TAGS, "head"]):
        tag.decompose()
    # an XHTML page's <?xml ...?> (and doctype / comments / <!...> declarations) is markup,
    # not text: html.parser keeps it as a node whose string markdownify would print
    markup = (ProcessingInstruction, Declaration, Doctype, Comment)
    for node in soup.find_all(string=lambda s: isinstance(s, markup)):
        node.extract()
    return soup, title or None


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    out = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", out).strip()


def html_to_markdown(html: str) -> tuple[str, str | None]:
    """HTML to Markdown with markdownify (ATX headings, ``-`` bullets); scripts, styles and
    the ``<head>`` dropped. Returns ``(markdown, title or None)``."""
    from markdownify import MarkdownConverter

    soup, title = _soup(html)
    md = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    return _tidy(str(md)), title


def html_to_text(html: str) -> tuple[str, str | None]:
    """HTML to plain text (one block per line, blank runs collapsed). Returns
    ``(text, title or None)``."""
    soup, title = _soup(html)
    text = soup.get_text("\n")
    lines = [" ".join(line.split()) for line in str(text).splitlines()]
    return _tidy("\n".join(lines)), title


def is_html(content_type: str, body: bytes) -> bool:
    """Whether a body is HTML or XHTML: by ``Content-Type``, or by its first bytes when the
    header is absent."""
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct in ("text/html", "application/xhtml+xml"):
        return True
    if ct:
        return False
    head = body[:512].lstrip().lower()
    if head.startswith(b"<?xml"):
        head = head[head.find(b"?>") + 2 :].lstrip() if b"?>" in head else b""
    return head.startswith((b"<!doctype html", b"<html"))


def is_text(content_type: str, body: bytes) -> bool:
    """Whether a body is text to show (``text/*``, JSON, XML, scripts, YAML, CSV, TOML, or
    an untyped body without NUL bytes)."""
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct.startswith("text/"):
        return True
    if any(k in ct for k in ("json", "xml", "javascript", "ecmascript", "yaml", "csv", "toml")):
        return True
    if not ct or ct == "application/octet-stream":
        return b"\x00" not in body[:8192]
    return False
