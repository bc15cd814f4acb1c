"""What the rules make and the filters judge: a candidate ``(sentence2, category, rule)`` and a labelled ``Edit``."""

from __future__ import annotations

from dataclasses import dataclass

Candidate = tuple[str, str, str]  # (sentence2, category, rule)


@dataclass
class Edit:
    """One minimal edit of ``sentence1``; ``category`` is one of CATEGORIES, ``rule`` the rule that made it."""

    sentence1: str
    sentence2: str
    category: str
    rule: str
