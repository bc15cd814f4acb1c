"""Near-miss edits written by an LLM behind an OpenAI-compatible ``/chat/completions`` endpoint (stdlib only)."""

from __future__ import annotations

import json
import re

from ..chat import ChatClient, Transport
from .generator import CATEGORIES, _Generator, _tqdm
from .registry import REGISTRY

_SYSTEM = (
    "You write minimal edits of English sentences for a test set. Change at most {n} words and copy every other "
    'word exactly. Answer with JSON only: {{"sentence2": "<the edited sentence>"}}, or {{"sentence2": null}} '
    "when the sentence allows no such edit."
)


def _parse_reply(content: str) -> str | None:
    """The ``sentence2`` of a JSON reply (possibly in a code fence); other text is returned as is, for the filters."""
    match = re.search(r"\{.*\}", content, flags=re.DOTALL)
    if match:
        try:
            value = json.loads(match.group(0)).get("sentence2")
        except (json.JSONDecodeError, AttributeError):
            value = content
        else:
            return value.strip() if isinstance(value, str) else None
    else:
        value = content
    return value.strip() or None


class LLMGenerator(_Generator):
    """Ask an LLM for one minimal edit per sentence and category; the edits pass the same filters as the rules'.

    ``transport(url, payload, headers) -> response`` replaces the HTTP call (for tests or custom clients)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        categories=CATEGORIES,
        transport: Transport | None = None,
        max_changed_tokens: int = 4,
        max_tokens: int = 60,
    ):
        super().__init__(categories, max_tokens=max_tokens, max_changed_tokens=max_changed_tokens)
        self.client = ChatClient(model, base_url=base_url, api_key=api_key, transport=transport)
        self.model, self.base_url = model, self.client.base_url

    def __repr__(self) -> str:
        return f"LLMGenerator({self.model!r}, base_url={self.base_url!r})"

    def _ask(self, sentence: str, category: str, seed: int) -> str | None:
        messages = [
            {"role": "system", "content": _SYSTEM.format(n=self.max_changed_tokens)},
            {"role": "user", "content": f"Edit: {REGISTRY[category].llm_instruction}\nSentence: {sentence}"},
        ]
        content = self.client.complete(messages, temperature=0, seed=seed)
        return _parse_reply(content or "")

    def _candidates(self, sentences, verbose, batch_size, seed):
        bar = _tqdm()(sentences, desc=f"LLM edits ({self.model})", unit="sentence", disable=not verbose)
        for sentence in bar:
            out = []
            for category in self.categories:
                sentence2 = self._ask(sentence, category, seed)
                if sentence2 is not None:
                    out.append((sentence2, category, f"{category}/llm"))
            yield out
