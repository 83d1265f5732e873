"""view_image on real image files: sniffing by bytes, downscaling, confinement, and the
image reaching the model in both wire formats and through the agent loop."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from octos_tools.builtins.image import ViewImageTool, sniff_image_format
from octos_tools.config import Config, ImageConfig
from octos_tools.context import ToolContext
from octos_tools.errors import ToolError
from octos_tools.execution import ToolCall
from octos_tools.formats import anthropic, openai
from octos_tools.profile import build_registry
from octos_tools.tool_types import ImageContent, ToolResult
from octos_tools.workspace import Workspace

pytestmark = pytest.mark.anyio


def _png(width: int, height: int, *, mode: str = "RGB", noise: bool = False) -> bytes:
    img = Image.new(mode, (width, height), (200, 30, 30) if mode == "RGB" else (1, 2, 3, 128))
    if noise:
        img = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def _encoded(fmt: str, size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 120, 240)).save(out, format=fmt)
    return out.getvalue()


async def _view(root: Path, path: str, config: ImageConfig | None = None) -> ToolResult:
    ws = Workspace(root)
    tool = ViewImageTool(ws, config)
    try:
        return await tool.execute_with_context(ToolContext(workspace=ws), {"path": path})
    except ToolError as exc:  # the registry turns a raised ToolError into this result
        return ToolResult.from_error(exc)


def _decode(image: ImageContent) -> Any:
    return Image.open(io.BytesIO(image.data))


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
async def test_small_images_reach_the_model_unchanged(tmp_path: Path, fmt: str, mime: str) -> None:
    data = _encoded(fmt)
    (tmp_path / "pic.bin").write_bytes(data)  # the name says nothing: the bytes decide
    result = await _view(tmp_path, "pic.bin")
    assert result.success, result.output
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert image.mime_type == mime and image.data == data
    assert "40x30" in result.output
    meta = result.structured_metadata or {}
    assert meta["format"] == fmt.lower() and meta["byte_length"] == len(data)
    assert meta["reencoded"] is False


async def test_bmp_is_converted_to_a_format_providers_take(tmp_path: Path) -> None:
    (tmp_path / "old.bmp").write_bytes(_encoded("BMP"))
    result = await _view(tmp_path, "old.bmp")
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert image.mime_type in ("image/png", "image/jpeg")
    assert _decode(image).size == (40, 30)
    assert (result.structured_metadata or {})["format"] == "bmp"


async def test_large_image_is_downscaled_and_original_size_stated(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(_png(3000, 1200))
    result = await _view(tmp_path, "big.png", ImageConfig(max_side=500))
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert _decode(image).size == (500, 200)
    assert "3000x1200" in result.output and "500x200" in result.output
    meta = result.structured_metadata or {}
    assert (meta["width"], meta["height"], meta["shown_width"]) == (3000, 1200, 500)


async def test_byte_budget_is_kept(tmp_path: Path) -> None:
    data = _png(600, 600, noise=True)  # noise does not compress: ~1 MB
    (tmp_path / "noise.png").write_bytes(data)
    result = await _view(tmp_path, "noise.png", ImageConfig(max_side=2000, max_bytes=60_000))
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert len(image.data) <= 60_000 < len(data)
    assert _decode(image).format in ("JPEG", "PNG")


async def test_transparent_image_keeps_alpha_when_downscaled(tmp_path: Path) -> None:
    (tmp_path / "alpha.png").write_bytes(_png(800, 400, mode="RGBA"))
    result = await _view(tmp_path, "alpha.png", ImageConfig(max_side=200))
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png"
    assert _decode(image).mode == "RGBA"


async def test_svg_is_returned_as_text(tmp_path: Path) -> None:
    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>\n'
    (tmp_path / "logo.svg").write_text(svg)
    result = await _view(tmp_path, "logo.svg")
    assert result.success and result.content == []
    assert "<rect/>" in result.output
    assert (result.structured_metadata or {})["mime_type"] == "image/svg+xml"


async def test_text_named_png_is_unsupported_media(tmp_path: Path) -> None:
    (tmp_path / "fake.png").write_text("just some text, not an image\n")
    result = await _view(tmp_path, "fake.png")
    assert not result.success
    assert result.error_kind is not None and result.error_kind.value == "unsupported_media"
    assert "recognised image header" in result.output


async def test_truncated_png_is_unsupported_media(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(_png(50, 50)[:60])
    result = await _view(tmp_path, "broken.png")
    assert not result.success
    assert result.error_kind is not None and result.error_kind.value == "unsupported_media"


async def test_symlink_and_outside_paths_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "secret.png"
    outside.write_bytes(_encoded("PNG"))
    (root / "link.png").symlink_to(outside)
    (root / "dir").symlink_to(tmp_path)
    linked = await _view(root, "link.png")
    assert linked.error_kind is not None and linked.error_kind.value == "symlink_refused"
    via_dir = await _view(root, "dir/secret.png")
    assert via_dir.error_kind is not None and via_dir.error_kind.value == "symlink_refused"
    escaped = await _view(root, "../secret.png")
    assert escaped.error_kind is not None and escaped.error_kind.value == "path_outside_workspace"
    missing = await _view(root, "nope.png")
    assert missing.error_kind is not None and missing.error_kind.value == "not_found"


async def test_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(_png(300, 300, noise=True))
    result = await _view(tmp_path, "big.png", ImageConfig(max_file_bytes=2048))
    assert result.error_kind is not None and result.error_kind.value == "file_too_large"


def test_sniffing_uses_bytes() -> None:
    assert sniff_image_format(b"\x89PNG\r\n\x1a\n....") == "png"
    assert sniff_image_format(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "webp"
    assert sniff_image_format(b"<!-- c -->\n<svg width='1'>") == "svg"
    assert sniff_image_format(b"BMx") is None  # too short to be a BMP header
    assert sniff_image_format(b"hello") is None


# ------------------------------------------------------------- the image reaches the model


async def test_registry_call_keeps_the_image_and_both_formats_carry_it(tmp_path: Path) -> None:
    data = _encoded("PNG")
    (tmp_path / "shot.png").write_bytes(data)
    registry = build_registry(workspace=tmp_path, config=Config())
    result = await registry.execute("view_image", {"path": "shot.png"})
    assert result.success and [type(b) for b in result.content] == [ImageContent]
    calls = [ToolCall(id="c1", name="view_image", arguments={"path": "shot.png"})]

    messages = openai.tool_messages(calls, [result])
    assert [m["role"] for m in messages] == ["tool", "user"]
    assert messages[0]["content"].startswith("Image: shot.png")
    text_part, image_part = messages[1]["content"]
    assert "c1" in text_part["text"]
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == data

    item = openai.function_call_output("c1", result)
    assert item["output"][0]["type"] == "input_text"
    assert item["output"][1] == {"type": "input_image", "image_url": url}

    block = anthropic.tool_result_block("c1", result)
    text_block, image_block = block["content"]
    assert text_block["type"] == "text" and text_block["text"].startswith("Image: shot.png")
    assert image_block["source"]["media_type"] == "image/png"
    assert base64.b64decode(image_block["source"]["data"]) == data

    plain = ToolResult.ok("no image")
    assert openai.tool_messages(calls, [plain]) == [
        {"role": "tool", "tool_call_id": "c1", "content": "no image"}
    ]
    assert anthropic.tool_result_block("c1", plain)["content"] == "no image"


@pytest.mark.parametrize("dialect_name", ["openai", "anthropic"])
async def test_agent_loop_sends_the_image_to_the_model(tmp_path: Path, dialect_name: str) -> None:
    from octos_tools.agent import Agent

    from ..agent.fake_model import DIALECTS, fake_model_server

    dialect = next(d for d in DIALECTS if d.name == dialect_name)
    data = _encoded("PNG")
    (tmp_path / "shot.png").write_bytes(data)
    registry = build_registry(workspace=tmp_path)
    with fake_model_server() as server:
        server.script(
            dialect.calls_reply([("call_1", "view_image", {"path": "shot.png"})]),
            dialect.text_reply("A blue rectangle."),
        )
        async with dialect.provider(server.url) as provider:
            result = await Agent(registry, provider).run("What is in shot.png?")
        body = server.bodies[1]
    assert result.text == "A blue rectangle."
    last = body["messages"][-1]
    assert last["role"] == "user"
    encoded = base64.b64encode(data).decode("ascii")
    if dialect_name == "openai":
        assert body["messages"][-2]["role"] == "tool"
        assert last["content"][1]["image_url"]["url"] == "data:image/png;base64," + encoded
    else:
        [block] = last["content"]
        assert block["type"] == "tool_result" and block["content"][1]["source"]["data"] == encoded


async def test_animated_gif_sends_its_first_frame(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (30, 20), color) for color in ((255, 0, 0), (0, 0, 255))]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    (tmp_path / "anim.gif").write_bytes(out.getvalue())
    result = await _view(tmp_path, "anim.gif")
    [image] = result.content
    assert isinstance(image, ImageContent) and image.mime_type != "image/gif"
    first = _decode(image).convert("RGB").getpixel((5, 5))
    assert first[0] > 200 and first[2] < 50  # red: the first frame


async def test_large_jpeg_states_its_original_size(tmp_path: Path) -> None:
    (tmp_path / "photo.jpg").write_bytes(_encoded("JPEG", (4000, 2000)))
    result = await _view(tmp_path, "photo.jpg", ImageConfig(max_side=400))
    [image] = result.content
    assert isinstance(image, ImageContent) and _decode(image).size == (400, 200)
    assert "4000x2000" in result.output


async def test_too_many_pixels_refused_before_decoding(tmp_path: Path) -> None:
    # a tiny file that claims 10,000 x 10,000 pixels (a header over a 1x1 body)
    header = _png(1, 1)
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 10_000, 10_000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    patched = header[:8] + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    (tmp_path / "bomb.png").write_bytes(patched + header[33:])
    result = await _view(tmp_path, "bomb.png")
    assert result.error_kind is not None and result.error_kind.value == "file_too_large"
    assert "10000x10000" in result.output


async def test_view_image_over_mcp_is_image_content(tmp_path: Path) -> None:
    import mcp_types as types

    from mcp import Client
    from octos_tools.mcp.server import OctosMcpServer

    data = _encoded("PNG")
    (tmp_path / "shot.png").write_bytes(data)
    registry = build_registry(workspace=tmp_path, config=Config())
    server = OctosMcpServer(registry)
    async with Client(server.server, mode="legacy") as client:
        served = await client.call_tool("view_image", {"path": "shot.png"})
    assert not served.is_error
    text, image = served.content
    assert isinstance(text, types.TextContent) and text.text.startswith("Image: shot.png")
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == data
    await registry.aclose()
