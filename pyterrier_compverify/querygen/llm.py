"""SM and KW training queries written by a language model: an OpenAI-compatible endpoint or a local Hugging Face
text-generation model, behind one prompt per strategy."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator

from ..chat import ChatClient

PROMPTS = {
    "SM": "Write about {n} search queries a user could type to find the passage below, each a one-sentence summary "
    "or a long question about the passage as a whole.",
    "KW": "Write about {n} short search queries for the passage below: every salient keyword, more general terms "
    "(hypernyms) of them, and short user-style phrases of two to five words.",
}
COUNTS = {"SM": 7, "KW": 13}  # the paper's: about 7 SM and 12-14 KW queries per passage
_FORMAT = 'Answer with JSON only: {"queries": ["...", "..."]}.'


def parse_queries(content: str) -> list[str]:
    """The queries of a reply: a JSON object with ``queries`` (a list of strings, or one string), a JSON list of
    strings, or else one query per line (also where the JSON found is neither, e.g. a "[1]" in a numbered list).

    >>> parse_queries('```json\\n{"queries": ["red car", " parking lot "]}\\n```')
    ['red car', 'parking lot']
    >>> parse_queries("1. red car\\n- parking lot")
    ['red car', 'parking lot']
    >>> parse_queries('{"queries": "red car parked in a lot"}')
    ['red car parked in a lot']
    >>> parse_queries("1. effect of statins on LDL [1]\\n2. statin side effects")
    ['effect of statins on LDL [1]', 'statin side effects']
    >>> parse_queries('[{"query": "red car"}, {"query": "parking"}]'), parse_queries('{"answer": null}')
    (['red car', 'parking'], [])
    >>> parse_queries('{"queries": ["red car", null, 3, "parking lot"]}')
    ['red car', 'parking lot']
    """
    match = re.search(r"(\{.*\}|\[.*\])", content, flags=re.DOTALL)
    if match:
        try:
            value, parsed = json.loads(match.group(0)), True
        except json.JSONDecodeError:
            value, parsed = None, False
        value = value.get("queries") if isinstance(value, dict) else value
        items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
        queries = [q.get("query") if isinstance(q, dict) else q for q in items or []]  # also [{"query": ...}]
        queries = [q.strip() for q in queries if isinstance(q, str) and q.strip()]  # a null or a number left out
        if queries:
            return queries
        if parsed and not re.sub(r"```(?:json)?", "", content.replace(match.group(0), "")).strip():
            return []  # a reply that is JSON only, without a query in the form asked for: none, not its text
    lines = (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip() for line in content.splitlines())
    return [line for line in lines if line]


def hf_chat(model: str, *, max_new_tokens: int = 256, device: str | None = None) -> Callable[[list[dict]], str]:
    """A local Hugging Face text-generation model (hub name or folder) as a ``messages -> text`` function; models
    with a chat template get it, others the plain concatenated prompt. Decoding is greedy."""
    from transformers import pipeline

    from ..encoder import hub_could_not_give, not_on_the_hub

    local = os.path.expanduser(model)
    try:
        generator = pipeline("text-generation", model=local if os.path.isdir(local) else model, device=device)
    except OSError as error:  # neither a folder nor to be had from the hub: one line, as for encoders
        if os.path.exists(local) or not hub_could_not_give(error):
            raise
        raise not_on_the_hub("the language model", model, error) from error
    has_template = getattr(generator.tokenizer, "chat_template", None) is not None

    def complete(messages: list[dict]) -> str:
        prompt = messages if has_template else "\n\n".join(m["content"] for m in messages) + "\n\n"
        out = generator(prompt, max_new_tokens=max_new_tokens, do_sample=False, return_full_text=False)
        text = out[0]["generated_text"]
        return text[-1]["content"] if isinstance(text, list) else text

    complete.name = f"hf:{model}"
    return complete


class LLMQueries:
    """``strategy`` ``"SM"`` or ``"KW"`` queries per passage from ``backend``: a :class:`~..chat.ChatClient`
    (OpenAI-compatible endpoint) or any ``messages -> text`` function such as :func:`hf_chat`.

    Example::

        sm = LLMQueries("SM", ChatClient("gpt-4o-mini"))                 # $OPENAI_API_KEY, $OPENAI_BASE_URL
        kw = LLMQueries("KW", hf_chat("Qwen/Qwen2.5-1.5B-Instruct"))
    """

    def __init__(self, strategy: str, backend, *, n: int | None = None, seed: int = 0):
        if strategy not in PROMPTS:
            raise ValueError(f"strategy must be one of {sorted(PROMPTS)}, got {strategy!r}")
        self.strategy, self.n, self.seed = strategy, n or COUNTS[strategy], seed
        if isinstance(backend, ChatClient):
            self.backend = f"llm:{backend.model}"
            self._complete = lambda messages: backend.complete(messages, temperature=0, seed=seed)
        elif callable(backend):
            self.backend = getattr(backend, "name", "llm:custom")
            self._complete = backend
        else:
            raise TypeError("backend must be a ChatClient or a messages -> text function")

    def __repr__(self) -> str:
        return f"LLMQueries({self.strategy!r}, backend={self.backend!r})"

    def queries(self, passage: str) -> list[tuple[str, str]]:
        """(query, kind) pairs for one passage; kind is ``summary`` (SM) or ``keyword`` (KW)."""
        messages = [
            {"role": "system", "content": "You write training queries for a search engine. " + _FORMAT},
            {"role": "user", "content": PROMPTS[self.strategy].format(n=self.n) + f"\n\nPassage: {passage}"},
        ]
        kind = "summary" if self.strategy == "SM" else "keyword"
        return [(q, kind) for q in dict.fromkeys(parse_queries(self._complete(messages)))]

    def generate(self, passages: Iterable[str], *, batch_size: int = 1) -> Iterator[list[tuple[str, str]]]:
        for passage in passages:
            yield self.queries(passage)
