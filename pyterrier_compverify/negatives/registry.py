"""The one registry of near-miss categories: each category module's ``CATEGORY``, in generation order.

Each category's rule takes a spaCy ``Doc`` and returns candidates ``(sentence2, category, rule)``. The rules are
deliberately conservative: when the parse does not fit a pattern, they emit nothing. To add a category, write its
module (with a ``CATEGORY`` record) and list it here."""

from __future__ import annotations

from collections.abc import Callable

from . import binding, negation, paraphrase, spatial
from .category import Category

REGISTRY: dict[str, Category] = {
    c.name: c for c in (negation.CATEGORY, binding.CATEGORY, spatial.CATEGORY, paraphrase.CATEGORY)
}
CATEGORIES: tuple[str, ...] = tuple(REGISTRY)
RULES: dict[str, Callable] = {name: c.rule for name, c in REGISTRY.items()}
# categories whose edits keep the sentence's meaning (positives, not negatives)
MEANING_KEEPING: tuple[str, ...] = tuple(name for name, c in REGISTRY.items() if c.keeps_meaning)
