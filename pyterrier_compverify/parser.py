"""Old name of :mod:`pyterrier_compverify.spacy_english`, kept until every importer uses the new one."""

from .spacy_english import SPACY_MODEL, english_parser

__all__ = ["SPACY_MODEL", "english_parser"]
