"""The record each near-miss category module defines (its ``CATEGORY``); :mod:`.registry` collects them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .edit import Candidate


@dataclass(frozen=True)
class Category:
    """One kind of near-miss edit.

    ``rule(doc)`` turns a spaCy ``Doc`` into candidates ``(sentence2, category, rule)``; ``keeps_meaning`` says
    whether its edits say the same as the sentence (a positive) or not (a negative); ``llm_instruction`` asks an LLM
    for such an edit; ``uses_collocations``: the rule also takes ``collocations=`` (word-pair counts of the corpus)."""

    name: str
    keeps_meaning: bool
    rule: Callable[..., list[Candidate]]
    llm_instruction: str
    uses_collocations: bool = False
