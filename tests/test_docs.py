"""Every code block of README.md and docs/*.md works as written.

Rules, by the block's info string (the text after the opening fence):

* contains ``fragment``: skipped (a piece of a larger program or file, on purpose);
* ``python``: a page's python blocks run in order as one script in a subprocess, its
  working directory a fresh temporary workspace holding a copy of README.md; no network:
  the OpenAI / Anthropic providers reach a scripted model on loopback through
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``, the framework pages use their frameworks'
  scripted models (those pages are marked slow, as their own tests are);
* ``toml``: an octos-tools configuration, loaded with ``load_config``;
* ``json``: must parse; when its top-level keys are configuration keys, it is loaded with
  ``load_config`` too;
* ``sh run``: run with bash in a temporary workspace (a copy of README.md in it), with the
  project's ``.venv/bin`` first on ``PATH``; must exit 0;
* anything else (``sh``, ``text``, no language): shown, not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import typing
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel

from octos_tools.config import Config, load_config

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its info string and its text."""

    file: str
    line: int
    info: str
    text: str

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def words(self) -> list[str]:
        return self.info.split()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.lang or 'plain'}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Fenced blocks of one Markdown file (backtick fences, as CommonMark reads them)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m["fence"], m["info"].strip(), i + 1
        j = start
        while j < len(lines) and not re.match(rf"^ {{0,3}}{fence}`*\s*$", lines[j]):
            j += 1
        text = "\n".join(lines[start:j]) + "\n"
        found.append(Block(str(path.relative_to(ROOT)), start, info, text))
        i = j + 1
    return found


ALL_BLOCKS = [b for p in doc_files() for b in blocks_of(p)]
CHECKED = [b for b in ALL_BLOCKS if "fragment" not in b.words]


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    shutil.copy(ROOT / "README.md", ws / "README.md")
    return ws


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for key in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        env.pop(key, None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def test_blocks_found() -> None:
    """The extractor sees the blocks (a broken regex would make every test below vanish)."""
    readme = [b for b in ALL_BLOCKS if b.file == "README.md"]
    assert any(b.lang == "python" for b in readme)
    assert any(b.lang == "toml" for b in readme)
    assert all(b.text.strip() for b in ALL_BLOCKS), [str(b) for b in ALL_BLOCKS if not b.text]


def test_no_unknown_markers() -> None:
    """An info string says fragment, run, or nothing more: a typo must not hide a block."""
    for b in ALL_BLOCKS:
        extra = [w for w in b.words[1:] if w not in {"fragment", "run"}]
        assert not extra, f"{b}: unknown info words {extra}"


FRAMEWORK_PAGES = {"docs/pydantic-ai.md", "docs/openai-agents.md", "docs/langchain.md"}


def python_pages() -> list[object]:
    pages: dict[str, list[Block]] = {}
    for b in CHECKED:
        if b.lang == "python":
            pages.setdefault(b.file, []).append(b)
    return [
        pytest.param(f, blocks, id=f, marks=[pytest.mark.slow] if f in FRAMEWORK_PAGES else [])
        for f, blocks in pages.items()
    ]


class FakeModel(BaseHTTPRequestHandler):
    """A scripted OpenAI / Anthropic endpoint on loopback: first a ``read_file`` call of
    README.md, then, once a tool result is in the conversation, a text answer."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        seen = json.dumps(body["messages"])
        answered = '"tool"' in seen or "tool_result" in seen
        if self.path.endswith("/chat/completions"):
            msg: dict[str, object] = {"role": "assistant", "content": "README read."}
            if not answered:
                call = {"name": "read_file", "arguments": '{"path": "README.md"}'}
                msg = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": call}],
                }
            reply: dict[str, object] = {
                "id": "r",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": msg,
                        "finish_reason": "stop" if answered else "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        else:
            content: list[dict[str, object]] = [{"type": "text", "text": "README read."}]
            if not answered:
                content = [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "read_file",
                        "input": {"path": "README.md"},
                    }
                ]
            reply = {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "end_turn" if answered else "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def fake_model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("page", "blocks"), python_pages())
def test_python_blocks_run(page: str, blocks: list[Block], tmp_path: Path, fake_model: str) -> None:
    """A page's ``python`` blocks run in order as one script (later blocks may use names
    earlier ones defined); models are the scripted endpoint above, reached through the
    providers' documented ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` variables."""
    ws = workspace(tmp_path)
    script = tmp_path / "example.py"
    script.write_text("\n\n".join(b.text for b in blocks), encoding="utf-8")
    env = offline_env(tmp_path)
    env["OPENAI_BASE_URL"] = f"{fake_model}/v1"
    env["ANTHROPIC_BASE_URL"] = fake_model
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"{page} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"


@pytest.mark.parametrize("block", [b for b in CHECKED if b.lang == "toml"], ids=str)
def test_toml_block_is_a_config(block: Block, tmp_path: Path) -> None:
    cfg_file = tmp_path / "octos.toml"
    cfg_file.write_text(block.text, encoding="utf-8")
    assert isinstance(load_config(cfg_file), Config)


@pytest.mark.parametrize("block", [b for b in CHECKED if b.lang == "json"], ids=str)
def test_json_block_parses(block: Block, tmp_path: Path) -> None:
    data = json.loads(block.text)
    if isinstance(data, dict) and data and set(data) <= set(Config.model_fields):
        cfg_file = tmp_path / "octos.json"
        cfg_file.write_text(block.text, encoding="utf-8")
        assert isinstance(load_config(cfg_file), Config)


@pytest.mark.parametrize(
    "block", [b for b in CHECKED if b.lang in {"sh", "bash"} and "run" in b.words], ids=str
)
def test_shell_block_runs(block: Block, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / ".venv").symlink_to(ROOT / ".venv")  # the docs' `.venv/bin/octos-tools`
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=ws,
        env=offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"{block} failed:\n{proc.stdout}\n{proc.stderr}"


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key path of the configuration model, as docs/configuration.md spells it."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        ann = field.annotation
        args = typing.get_args(ann)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += config_keys(ann, f"{path}.")
        elif typing.get_origin(ann) is dict and issubclass(args[1], BaseModel):
            keys += config_keys(args[1], f"{path}.NAME.")
        elif typing.get_origin(ann) is list and args and issubclass(args[0], BaseModel):
            keys.append(path)
            keys += config_keys(args[0], f"{path}[].")
        else:
            keys.append(path)
    return keys


def test_configuration_reference_names_every_key() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    keys = config_keys(Config)
    assert len(keys) > 40
    missing = [k for k in keys if f"| `{k}` |" not in text]
    assert not missing, f"docs/configuration.md does not describe {missing}"


def served_tool_count(tmp_path: Path, *flags: str) -> int:
    """The tool count ``serve`` prints on its start-up line (stdin closed: it exits)."""
    proc = subprocess.run(
        [sys.executable, "-m", "octos_tools", "serve", "--workspace", str(tmp_path), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=offline_env(tmp_path),
    )
    found = re.search(r"over stdio \((\d+) tools\)", proc.stderr)
    assert found, proc.stderr
    return int(found[1])


def test_readme_tool_counts_match_the_server(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"over stdio \((\d+) tools\)", text)
    default = re.search(r"What `serve` lists by default \((\d+) tools", text)
    no_defer = re.search(r"(\d+) tools with all extras", text)
    assert listed and default and no_defer
    with ThreadPoolExecutor(2) as pool:  # the two servers start side by side
        served, served_no_defer = pool.map(
            lambda flags: served_tool_count(tmp_path, *flags), [(), ("--no-defer",)]
        )
    assert int(listed[1]) == int(default[1]) == served
    # the README's figure is without Chromium; browser is listed where one is installed
    from octos_tools.builtins.browser import BrowserTool

    chromium = BrowserTool().unavailable_reason() is None
    assert int(no_defer[1]) + int(chromium) == served_no_defer


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_point_to_files_that_ship(path: Path) -> None:
    """Relative links resolve inside the repository; no citation of unshipped documents."""
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = (path.parent / target.split("#")[0]).resolve()
        assert file.exists() and file.is_relative_to(ROOT), f"{path.name}: broken link {target}"
    for word in ("DESIGN.md", "DESIGN §", "seed §", "reference §"):
        assert word not in text, f"{path.name} cites {word!r}, which does not ship"


def test_readme_test_command_is_the_ci_one() -> None:
    """The README's quick-start test command and CI's first pytest line are the same."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    quick = [b for b in blocks_of(ROOT / "README.md") if b.lang == "sh"][1].text.strip()
    ci_lines = [ln.strip() for ln in ci.splitlines() if "pytest" in ln and not ln.startswith("#")]
    assert quick == ci_lines[0] == ".venv/bin/python -m pytest -q"
    for step in [*ci_lines, "ruff check src tests bench", "ruff format --check", "mypy src"]:
        assert step.replace(".venv/bin/", "") in readme.replace(".venv/bin/", ""), step
