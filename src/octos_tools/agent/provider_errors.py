"""Exceptions raised by model providers.

A provider failure is the *host's* problem, not the model's: it is raised out of
:meth:`~octos_tools.agent.Agent.run`, never turned into a tool result.

Exception tree::

    OctosToolsError                     base of everything raised by octos-tools
    └── ProviderError                   a model request failed (has .provider)
        ├── ProviderConnectionError     no HTTP response: connection refused, reset, DNS, TLS
        │   └── ProviderTimeoutError    the request exceeded its connect/read timeout
        ├── ProviderStatusError         the server answered with a non-2xx status (has .status)
        │   └── ProviderAuthError       401 or 403: missing, wrong or unauthorised API key
        └── ProviderResponseError       a 2xx answer that is not JSON or not the expected shape
"""

from __future__ import annotations

from ..errors import OctosToolsError

__all__ = [
    "ProviderAuthError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderStatusError",
    "ProviderTimeoutError",
]


class ProviderError(OctosToolsError):
    """A model request failed.

    Args:
        provider: the provider's name (``"openai"``, ``"anthropic"``).
        message: what went wrong and, when known, what to check.

    Attributes:
        provider: as given.
        message: as given.
    """

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.message = message


class ProviderConnectionError(ProviderError):
    """No HTTP response arrived (connection refused or reset, DNS, TLS). Not retried."""


class ProviderTimeoutError(ProviderConnectionError):
    """The request took longer than the provider's connect or read timeout. Not retried."""


class ProviderStatusError(ProviderError):
    """The server answered with a non-2xx status (after any retries on 429/5xx).

    Attributes:
        status: the HTTP status code.
        body: the response body as text (at most 4,000 characters).
        attempts: how many requests were made in total (1 when not retried).
    """

    def __init__(
        self, provider: str, message: str, *, status: int, body: str = "", attempts: int = 1
    ) -> None:
        super().__init__(provider, message)
        self.status = status
        self.body = body
        self.attempts = attempts


class ProviderAuthError(ProviderStatusError):
    """401 or 403: the API key is missing, wrong or not allowed to use the model."""


class ProviderResponseError(ProviderError):
    """A 2xx answer that is not JSON, or JSON without the fields the wire format promises.

    Attributes:
        body: the response body as text (at most 4,000 characters).
    """

    def __init__(self, provider: str, message: str, *, body: str = "") -> None:
        super().__init__(provider, message)
        self.body = body
