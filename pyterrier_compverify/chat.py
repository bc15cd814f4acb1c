"""A client for OpenAI-compatible ``/chat/completions`` endpoints (stdlib only), shared by the LLM-backed
generators (near-miss edits, training queries)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable

DEFAULT_BASE_URL = "https://api.openai.com/v1"

Transport = Callable[[str, dict, dict], dict]


def urllib_transport(url: str, payload: dict, headers: dict, timeout: float = 120.0) -> dict:
    """POST ``payload`` as JSON and return the decoded JSON reply; an HTTP error keeps the start of the endpoint's
    own message ("model not found"), a reply that is not JSON (a proxy's HTML page) is a ValueError naming ``url``."""
    data = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers={**headers, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", errors="replace")[:200].strip()
        raise urllib.error.HTTPError(url, error.code, f"{error.reason}: {detail}", error.headers, None) from None
    try:
        return json.loads(body)
    except ValueError:
        raise ValueError(f"the LLM endpoint at {url} did not reply with JSON: {body[:200]!r}") from None


class ChatClient:
    """``complete(messages)`` returns the first choice's text. ``base_url`` and ``api_key`` default to
    ``$OPENAI_BASE_URL`` and ``$OPENAI_API_KEY``; ``transport(url, payload, headers) -> reply`` replaces the HTTP
    call (for tests or custom clients)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        transport: Transport | None = None,
    ):
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.transport = transport or urllib_transport

    def __repr__(self) -> str:
        return f"ChatClient({self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: list[dict], **params) -> str:
        payload = {"model": self.model, "messages": messages, **params}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = self.transport(f"{self.base_url}/chat/completions", payload, headers)
        except OSError as e:
            raise ConnectionError(f"could not get a completion from the LLM endpoint at {self.base_url}: {e}") from e
        try:
            content = response["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as e:
            raise ValueError(f"unexpected reply from the LLM endpoint at {self.base_url}: {str(response)[:200]}") from e
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
            content = "".join(part.get("text") or "" for part in content if isinstance(part, dict))
        return content
