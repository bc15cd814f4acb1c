"""The old home of the rules, kept as an import path: the rule of each category, by name (see :mod:`.registry`)."""

from .binding import binding
from .edit import Candidate
from .negation import negation
from .paraphrase import paraphrase
from .registry import RULES
from .spans import main_root
from .spatial import spatial

__all__ = ["RULES", "Candidate", "binding", "main_root", "negation", "paraphrase", "spatial"]
