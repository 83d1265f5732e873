"""``view_image``: show an image of the workspace to the model (octos ``view_image``).

octos answers with metadata only; here the image itself reaches the model as an
:class:`~octos_tools.tool_types.ImageContent` block on the result (MCP image content, OpenAI and
Anthropic image parts: see :mod:`octos_tools.formats`), with the metadata as text beside it.

* The path is resolved like every file tool's (:meth:`Workspace.open_read`: confined to the
  workspace, no symlink followed anywhere on the path).
* The format comes from the file's bytes, never its name (octos's sniffing: PNG signature,
  JPEG ``FF D8 FF``, ``GIF87a`` / ``GIF89a``, ``RIFF....WEBP``, ``BM``, ``<svg`` in the first
  256 bytes). Anything else is ``unsupported_media``. An SVG is returned as its text.
* A raster image larger than ``ImageConfig.max_side`` pixels on its longest side or
  ``ImageConfig.max_bytes`` bytes, or in a format the providers do not take (BMP), is
  re-encoded with Pillow (PNG when it has transparency or few colours, else JPEG) and
  downscaled until it fits; the output states the original size.

Pillow is imported only when an image is processed (extra ``image``).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import Field

from ...config import Config, ImageConfig
from ...errors import ErrorKind, ToolError
from ...tool_types import ConcurrencyClass, ImageContent, ToolResult
from ...typed import ToolArgs
from .._base import WorkspaceTool

if TYPE_CHECKING:
    from ...context import ToolContext
    from ...registry import ToolRegistry
    from ...workspace import Workspace

__all__ = ["FittedImage", "ViewImageTool", "fit_image", "register", "sniff_image_format"]

#: Formats the model providers accept as they are (OpenAI and Anthropic both take these).
_PROVIDER_FORMATS = frozenset({"png", "jpeg", "gif", "webp"})
_MIME = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "bmp": "image/bmp",
    "svg": "image/svg+xml",
}
#: Characters of SVG text shown at most.
MAX_SVG_CHARS = 100_000
#: Images with more pixels than this are refused before they are decoded (a 16 MB PNG can
#: hold a 20,000 x 20,000 picture that decodes to 1.6 GB).
MAX_PIXELS = 50_000_000


def sniff_image_format(head: bytes) -> str | None:
    """The image format of a file from its first bytes (``png``, ``jpeg``, ``gif``,
    ``webp``, ``bmp``, ``svg``), or ``None`` when the bytes are no image octos knows.

    Args:
        head: at least the first 256 bytes of the file (fewer for a shorter file).
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"BM") and len(head) >= 26:
        return "bmp"
    if b"<svg" in head[:256].lower():
        return "svg"
    return None


@dataclass(frozen=True, slots=True)
class FittedImage:
    """An image made ready for a model.

    Attributes:
        data: the encoded bytes to send.
        mime_type: their media type.
        width / height: the original size in pixels.
        shown_width / shown_height: the size sent, in pixels.
        reencoded: ``data`` is not the original file (downscaled or converted).
    """

    data: bytes
    mime_type: str
    width: int
    height: int
    shown_width: int
    shown_height: int
    reencoded: bool


def fit_image(data: bytes, fmt: str, *, max_side: int, max_bytes: int) -> FittedImage:
    """Fit an encoded raster image into ``max_side`` pixels and ``max_bytes`` bytes.

    An image already within both limits and in a provider format (an animated image is
    not: its first frame is sent) is returned unchanged; otherwise it is re-encoded (PNG
    if it has an alpha channel or a palette, else JPEG), lowering the quality and then the
    size until it fits. Blocking: run it in a thread.

    Args:
        data: the file's bytes.
        fmt: the sniffed format (:func:`sniff_image_format`).
        max_side: longest side allowed, in pixels.
        max_bytes: size budget, in bytes.

    Raises:
        ToolError: ``unsupported_media`` when Pillow cannot decode the bytes,
            ``file_too_large`` for a decompression bomb, ``unavailable`` without Pillow.
    """
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "images need Pillow: pip install 'octos-tools[image]'",
        ) from None
    try:
        with warnings.catch_warnings():  # our own pixel limit below decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img: Any = Image.open(io.BytesIO(data))
        width, height = img.size  # the original size (draft below may decode smaller)
        if width * height > MAX_PIXELS:
            raise ToolError(
                ErrorKind.FILE_TOO_LARGE,
                f"image is {width}x{height} pixels, over the limit of {MAX_PIXELS:,} pixels",
            )
        if fmt == "jpeg":
            img.draft("RGB", (max_side, max_side))  # decode at a reduced scale when possible
        img.load()
    except Image.DecompressionBombError as exc:
        raise ToolError(ErrorKind.FILE_TOO_LARGE, f"image has too many pixels: {exc}") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ToolError(
            ErrorKind.UNSUPPORTED_MEDIA, f"the {fmt.upper()} data cannot be decoded: {exc}"
        ) from None
    animated = bool(getattr(img, "is_animated", False))  # OpenAI takes no animated GIF
    if (
        fmt in _PROVIDER_FORMATS
        and not animated
        and max(width, height) <= max_side
        and len(data) <= max_bytes
    ):
        return FittedImage(data, _MIME[fmt], width, height, width, height, False)
    if animated:
        img.seek(0)  # the first frame
    keep_alpha = img.mode in ("RGBA", "LA", "P", "PA") or "transparency" in img.info
    frame = img.convert("RGBA" if keep_alpha else "RGB")
    scale = min(1.0, max_side / max(width, height))
    quality = 85
    while True:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        shown = frame if size == frame.size else frame.resize(size, Image.Resampling.LANCZOS)
        out = io.BytesIO()
        if keep_alpha:
            shown.save(out, format="PNG", optimize=True)
            mime = "image/png"
        else:
            shown.save(out, format="JPEG", quality=quality, optimize=True)
            mime = "image/jpeg"
        encoded = out.getvalue()
        if len(encoded) <= max_bytes or max(size) <= 16:
            return FittedImage(encoded, mime, width, height, size[0], size[1], True)
        if not keep_alpha and quality > 50:
            quality = 50
        else:
            scale *= 0.7


class ViewImageTool(WorkspaceTool):
    """``view_image {path}`` (octos ``view_image``; group fs, Safe): the image itself as
    :class:`~octos_tools.tool_types.ImageContent`, metadata as text (see the module docstring).

    Args:
        workspace: the workspace (``None``: the call's ``ctx.workspace``).
        config: the ``image`` section (max_side, max_bytes, max_file_bytes).
    """

    name = "view_image"
    title = "View an image"
    description = (
        "Look at an image file of the workspace (PNG, JPEG, GIF, WebP, BMP; SVG as text). "
        "Large images are downscaled."
    )
    tags = ("fs", "code")
    concurrency_class = ConcurrencyClass.SAFE

    class Args(ToolArgs):
        path: str = Field(description="Image path, relative to the workspace.")

    def __init__(self, workspace: Workspace | None = None, config: ImageConfig | None = None):
        super().__init__(workspace)
        self.config = config or ImageConfig.model_validate({})

    async def run(self, args: Args, ctx: ToolContext | None) -> ToolResult:
        path = args.path.strip()
        if not path:
            raise ToolError(ErrorKind.INVALID_ARGUMENTS, "view_image requires `path`")
        ws = self.workspace_for(ctx)
        data = await anyio.to_thread.run_sync(
            lambda: ws.read_bytes(path, max_bytes=self.config.max_file_bytes)
        )
        rel = ws.relpath(path)
        fmt = sniff_image_format(data[:512])
        if fmt is None:
            raise ToolError(
                ErrorKind.UNSUPPORTED_MEDIA,
                f"view_image: {rel} does not match a recognised image header "
                "(PNG / JPEG / GIF / WEBP / BMP / SVG)",
                path=rel,
                reason="unrecognised_image_format",
            )
        meta: dict[str, Any] = {
            "codex_tool": self.name,
            "path": rel,
            "format": fmt,
            "mime_type": _MIME[fmt],
            "byte_length": len(data),
        }
        if fmt == "svg":
            text = data.decode("utf-8", errors="replace")
            cut = len(text) > MAX_SVG_CHARS
            shown = text[:MAX_SVG_CHARS] + ("\n... (SVG truncated)" if cut else "")
            header = f"Image: {rel} (SVG, {len(data):,} bytes; shown as text)\n\n"
            return ToolResult.ok(header + shown, structured_metadata={**meta, "truncated": cut})
        fitted = await anyio.to_thread.run_sync(
            lambda: fit_image(
                data, fmt, max_side=self.config.max_side, max_bytes=self.config.max_bytes
            )
        )
        meta.update(
            width=fitted.width,
            height=fitted.height,
            shown_width=fitted.shown_width,
            shown_height=fitted.shown_height,
            shown_mime_type=fitted.mime_type,
            shown_bytes=len(fitted.data),
            reencoded=fitted.reencoded,
        )
        text = f"Image: {rel} ({fmt.upper()}, {fitted.width}x{fitted.height}, {len(data):,} bytes)"
        if fitted.reencoded:
            kind = fitted.mime_type.split("/", 1)[1].upper()
            text += (
                f"; shown as {kind} {fitted.shown_width}x{fitted.shown_height}, "
                f"{len(fitted.data):,} bytes"
            )
        return ToolResult.ok(
            text,
            structured_metadata=meta,
            content=[ImageContent(data=fitted.data, mime_type=fitted.mime_type)],
        )


def register(registry: ToolRegistry, workspace: Workspace, config: Config) -> None:
    """Register ``view_image`` bound to ``workspace``."""
    registry.register(ViewImageTool(workspace, config.image))
