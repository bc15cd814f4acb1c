"""Binding: move a modifier, a role or a value to another entity of the sentence (meaning flipped).

One module per sub-rule family: :mod:`.adjectives`, :mod:`.roles`, :mod:`.relations`, :mod:`.values`; what they
share (swapping words and noun phrases) is in :mod:`.swaps`."""

from __future__ import annotations

from ..category import Category
from ..collocations import Collocations
from ..edit import Candidate
from .adjectives import swap_amod
from .relations import swap_relation_arguments
from .roles import swap_roles
from .values import swap_values


def binding(doc, collocations: Collocations | None = None) -> list[Candidate]:
    """Move a modifier or a role to another entity: swap the adjectives of two nouns of one clause; swap subject
    and object (or agent) of a verb; swap the subjects of two clauses; swap the two sides of a comparison, an
    effect, a contrast or a nominalised verb; swap two percentages. ``collocations`` (word-pair counts of the
    corpus) keep adjectives of fixed terms in place."""
    return swap_amod(doc, collocations) + swap_roles(doc) + swap_relation_arguments(doc) + swap_values(doc)


CATEGORY = Category(
    "binding",
    keeps_meaning=False,
    rule=binding,
    llm_instruction="Move a modifier or a role to another entity of the sentence, e.g. swap the adjectives of two "
    "nouns ('the tall man greeted the short woman' -> 'the short man greeted the tall woman') or swap subject and "
    "object.",
    uses_collocations=True,
)
