"""HTTP plumbing shared by the providers: one ``httpx2`` client, a JSON POST, typed
errors, and a small, bounded retry on 429 and 5xx.

Retry rule (ours; the official SDKs retry similarly by default): a 429 or 5xx answer is
retried at most ``max_retries`` times (default 2). The wait is the server's
``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) when it sends one, else
``retry_base_delay * 2**attempt`` seconds. If the server asks for a longer wait than
``max_retry_delay`` the request is not retried and the status error is raised at once.
Nothing else is retried: no connection errors, no timeouts (a retried timeout could pay
for the same long completion twice), no 4xx other than 429.
"""

from __future__ import annotations

import copy
import email.utils
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ..tool_types import JSONObject, ToolSpec
from .provider import ModelTurn
from .provider_errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderResponseError,
    ProviderStatusError,
    ProviderTimeoutError,
)

if TYPE_CHECKING:
    import httpx2

__all__ = ["HTTPProvider", "int_or_zero", "parse_retry_after", "resolve_endpoint"]

logger = logging.getLogger("octos_tools.agent")

BODY_LIMIT = 4000
"""Characters of a response body kept in an exception."""


def _import_httpx2() -> Any:
    try:
        import httpx2
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise ImportError(
            "the model providers need httpx2, which the mcp SDK (a dependency of "
            "octos-tools) installs: reinstall with pip install 'octos-tools[all]'"
        ) from exc
    return httpx2


def int_or_zero(value: Any) -> int:
    """``value`` if it is an ``int`` (not a ``bool``), else 0 (token counts of a response)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def resolve_endpoint(
    base_url: str | None,
    api_key: str | None,
    *,
    default_url: str,
    url_env: str,
    key_env: str,
    missing_key: str,
) -> tuple[str, str | None]:
    """The API root and key of a provider, from the arguments or the environment.

    Args:
        base_url: the caller's API root, or ``None``/``""`` for ``$url_env``, else
            ``default_url``.
        api_key: the caller's key (``""`` counts as given), or ``None`` for ``$key_env``.
        default_url: the official API root.
        url_env: the environment variable naming another root (``OPENAI_BASE_URL``).
        key_env: the environment variable holding the key (``OPENAI_API_KEY``).
        missing_key: the ``ValueError`` message when the official root has no key.

    Returns:
        ``(url, key)``; ``key`` may be ``None`` or empty for a custom root (local servers
        often need none).

    Raises:
        ValueError: no key for the official root.
    """
    url = base_url or os.environ.get(url_env) or default_url
    key = api_key if api_key is not None else os.environ.get(key_env)
    if not key and url.rstrip("/") == default_url:
        raise ValueError(missing_key)
    return url, key


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asks for before a retry, in seconds, or ``None``.

    Args:
        headers: response headers (case-insensitive mapping, e.g. ``httpx2.Headers``).
        now: the current Unix time in seconds (for HTTP-date values; default: the clock).

    Returns:
        ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic) converted to
        seconds if present and valid, else ``Retry-After`` as delta-seconds or an HTTP date
        (RFC 9110 §10.2.3), clamped at 0. ``None`` when absent or unparseable.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            ms = float(raw_ms)
        except ValueError:
            ms = math.nan
        if math.isfinite(ms):
            return max(ms / 1000.0, 0.0)
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        current = time.time() if now is None else now
        return max(when.timestamp() - current, 0.0)
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _error_detail(text: str) -> str:
    """The server's own error message out of a JSON error body, else the text itself."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type") or error.get("code")
            return f"{error['message']} ({kind})" if isinstance(kind, str) else error["message"]
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return str(data["message"])
    return text.strip()[:500]


class HTTPProvider:
    """Base of the HTTP providers: client ownership, POST with retries, error mapping.

    Args:
        name: provider name for messages (``"openai"``).
        model: the model id sent with each request.
        base_url: the API root, without a trailing slash.
        headers: headers sent with every request (authentication, versions), after
            ``content-type: application/json``.
        extra_body: extra request fields merged into every body.
        reserved: body fields the provider sets itself, which ``extra_body`` must not set.
        timeout: seconds to wait for the answer (read/write/pool); non-streaming
            completions of long answers can take minutes.
        connect_timeout: seconds to establish the connection.
        max_retries: extra attempts after a 429 or 5xx answer (0 disables retries).
        retry_base_delay: seconds of the first back-off when the server sends no
            ``Retry-After``; doubled per attempt.
        max_retry_delay: the longest wait in seconds honoured before a retry.
        client: an ``httpx2.AsyncClient`` to use (not closed by :meth:`aclose`); by default
            the provider creates one on first use and closes it in :meth:`aclose`.

    Raises:
        ValueError: ``extra_body`` sets a ``reserved`` field; a negative retry count or
            delay, or a non-positive timeout.

    Subclasses set :attr:`completion_path` and implement :meth:`request_body` and
    :meth:`parse_response`; :meth:`complete` joins them.
    """

    completion_path: ClassVar[str] = ""
    """The path below ``base_url`` that one model request is POSTed to."""
    models_path: ClassVar[str] = ""
    """The path below ``base_url`` listing the models the endpoint serves (``GET``)."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        headers: Mapping[str, str],
        extra_body: Mapping[str, Any] | None,
        reserved: Set[str],
        timeout: float,
        connect_timeout: float,
        max_retries: int,
        retry_base_delay: float,
        max_retry_delay: float,
        client: httpx2.AsyncClient | None,
    ) -> None:
        clash = reserved & set(extra_body or {})
        if clash:
            raise ValueError(f"extra_body must not set {sorted(clash)}: the agent sets them")
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError(f"timeouts must be positive seconds, got {timeout}/{connect_timeout}")
        if max_retries < 0 or retry_base_delay < 0 or max_retry_delay < 0:
            raise ValueError("max_retries, retry_base_delay and max_retry_delay must be >= 0")
        self.name = name
        self.model = model
        self.extra_body = dict(extra_body or {})
        self.base_url = base_url.rstrip("/")
        self.headers = {"content-type": "application/json", **dict(headers)}
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.max_retry_delay = max_retry_delay
        self._client = client
        self._owns_client = client is None
        self._models: tuple[str, ...] | None = None

    def _get_client(self) -> httpx2.AsyncClient:
        if self._client is None:
            httpx2 = _import_httpx2()
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout)
            )
        return self._client

    def request_body(
        self, messages: Sequence[JSONObject], tools: Sequence[ToolSpec], system: str | None
    ) -> JSONObject:
        """The JSON body of one request (the subclass's wire format)."""
        raise NotImplementedError

    def parse_response(self, data: JSONObject) -> ModelTurn:
        """Parse a decoded answer (the subclass's wire format)."""
        raise NotImplementedError

    async def complete(
        self,
        messages: Sequence[JSONObject],
        tools: Sequence[ToolSpec],
        *,
        system: str | None = None,
    ) -> ModelTurn:
        """POST one request to :attr:`completion_path` and parse the answer.

        Raises:
            ProviderError: HTTP, timeout or shape failures (see :mod:`.errors`).
        """
        body = self.request_body(messages, tools, system)
        return self.parse_response(await self.post_json(self.completion_path, body))

    async def list_models(self) -> list[str]:
        """The model ids the endpoint serves: ``GET {base_url}{models_path}`` (OpenAI's
        ``/v1/models`` and Anthropic's ``/v1/models`` both answer ``{"data": [{"id"}]}``),
        asked once per provider object; :attr:`model` is always among them.

        Raises:
            ProviderError: the request failed (see :meth:`request_json`).
        """
        if self._models is None:
            data = await self.request_json("GET", self.models_path)
            entries = data.get("data")
            ids = [
                e["id"]
                for e in (entries if isinstance(entries, list) else [])
                if isinstance(e, dict) and isinstance(e.get("id"), str)
            ]
            self._models = tuple(dict.fromkeys([self.model, *ids]))
        return list(self._models)

    def with_model(self, model: str) -> HTTPProvider:
        """A provider like this one sending ``model`` instead (for a sub-agent that asked
        for another model): same endpoint, headers, limits and HTTP client; closing it does
        not close the shared client, and it needs no closing of its own.

        Raises:
            ValueError: an empty ``model``.
        """
        if not model:
            raise ValueError("with_model needs a model id")
        clone = copy.copy(self)
        clone.model = model
        clone._client = self._get_client()
        clone._owns_client = False
        return clone

    def user_message(self, text: str) -> JSONObject:
        """``{"role": "user", "content": text}`` (the same in both wire formats)."""
        return {"role": "user", "content": text}

    def malformed(self, message: str, data: JSONObject) -> ProviderResponseError:
        """A :class:`ProviderResponseError` for a decoded answer of the wrong shape."""
        return ProviderResponseError(self.name, message, body=json.dumps(data)[:BODY_LIMIT])

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it (idempotent)."""
        if self._client is not None and self._owns_client:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> HTTPProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return " Check the API key (the api_key argument or the provider's env variable)."
        if status == 404:
            return f" Check base_url ({self.base_url}) and the model name."
        return ""

    async def post_json(self, path: str, body: JSONObject) -> JSONObject:
        """POST ``body`` as JSON to ``base_url + path`` and return the decoded JSON object
        (:meth:`request_json`)."""
        return await self.request_json("POST", path, body)

    async def request_json(
        self, method: str, path: str, body: JSONObject | None = None
    ) -> JSONObject:
        """Send ``method`` (``"POST"`` with ``body`` as JSON, ``"GET"``) to
        ``base_url + path`` and return the decoded JSON object.

        Retries 429/5xx as the module docstring says.

        Raises:
            ProviderAuthError: 401 or 403.
            ProviderStatusError: any other non-2xx answer (after retries).
            ProviderTimeoutError: the connect or read timeout passed.
            ProviderConnectionError: no response (refused, reset, DNS, TLS).
            ProviderResponseError: a 2xx answer that is not a JSON object.
        """
        httpx2 = _import_httpx2()
        client = self._get_client()
        url = self.base_url + path
        attempt = 0
        while True:
            try:
                response = await client.request(method, url, json=body, headers=self.headers)
            except httpx2.TimeoutException as exc:
                raise ProviderTimeoutError(
                    self.name,
                    f"{method} {url} timed out ({type(exc).__name__}; timeout {self.timeout:g} s, "
                    f"connect {self.connect_timeout:g} s)",
                ) from exc
            except httpx2.HTTPError as exc:
                raise ProviderConnectionError(
                    self.name, f"{method} {url} failed: {type(exc).__name__}: {exc}"
                ) from exc
            status = response.status_code
            if 200 <= status < 300:
                return self._decode(f"{method} {url}", response)
            text = response.text
            retry_after = parse_retry_after(response.headers)
            retryable = status == 429 or status >= 500
            note = ""
            if retryable and attempt < self.max_retries:
                delay = (
                    retry_after if retry_after is not None else self.retry_base_delay * (2**attempt)
                )
                if delay <= self.max_retry_delay:
                    attempt += 1
                    logger.info(
                        "%s: HTTP %d from %s, retry %d/%d in %.2f s",
                        self.name,
                        status,
                        url,
                        attempt,
                        self.max_retries,
                        delay,
                    )
                    await anyio.sleep(delay)
                    continue
                note = (
                    f" The server asked to retry after {delay:g} s, more than max_retry_delay "
                    f"({self.max_retry_delay:g} s), so it was not retried."
                )
            elif retryable and attempt:
                note = f" Gave up after {attempt + 1} attempts."
            error_type = ProviderAuthError if status in (401, 403) else ProviderStatusError
            raise error_type(
                self.name,
                f"HTTP {status} from {method} {url}: {_error_detail(text)}."
                f"{self._hint(status)}{note}",
                status=status,
                body=text[:BODY_LIMIT],
                attempts=attempt + 1,
            )

    def _decode(self, where: str, response: httpx2.Response) -> JSONObject:
        text = response.text
        try:
            data = json.loads(text)
        except ValueError as exc:
            ctype = response.headers.get("content-type", "?")
            raise ProviderResponseError(
                self.name,
                f"the answer from {where} is not JSON (content-type {ctype}): {exc}. Does "
                "base_url point at the API root?",
                body=text[:BODY_LIMIT],
            ) from exc
        if not isinstance(data, dict):
            raise ProviderResponseError(
                self.name,
                f"the answer from {where} is JSON {type(data).__name__}, not an object",
                body=text[:BODY_LIMIT],
            )
        return data
