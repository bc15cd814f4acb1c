"""Structural near-miss negatives: minimal, labelled edits that flip (or keep) a sentence's meaning.

Rule-based (spaCy dependency parse + WordNet) or LLM-written; both pass the same filters."""

from .collocations import Collocations
from .filters import filter_edit
from .generator import CATEGORIES, Edit, GenerationResult, RuleBasedGenerator, write_table
from .llm import LLMGenerator

__all__ = [
    "CATEGORIES",
    "Collocations",
    "Edit",
    "GenerationResult",
    "LLMGenerator",
    "RuleBasedGenerator",
    "filter_edit",
    "write_table",
]
