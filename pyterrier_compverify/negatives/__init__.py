"""Structural near-miss negatives: minimal, labelled edits that flip (or keep) a sentence's meaning.

Rule-based (spaCy dependency parse + WordNet) or LLM-written; both pass the same filters. The categories
(negation, binding, spatial, paraphrase) are collected in :mod:`.registry`, one module each."""

from .category import Category
from .collocations import Collocations
from .edit import Edit
from .filters import filter_edit
from .generator import GenerationResult, RuleBasedGenerator, write_table
from .llm import LLMGenerator
from .registry import CATEGORIES, MEANING_KEEPING, REGISTRY, RULES

__all__ = [
    "CATEGORIES",
    "MEANING_KEEPING",
    "REGISTRY",
    "RULES",
    "Category",
    "Collocations",
    "Edit",
    "GenerationResult",
    "LLMGenerator",
    "RuleBasedGenerator",
    "filter_edit",
    "write_table",
]
