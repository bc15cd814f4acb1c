"""Registry of the caption near-miss rules: kind -> rule, each taking a spaCy ``Doc`` and returning
``(edit, kind, rule)`` candidates.

Every rule changes the scene in one stated way and leaves the other words as they are. When the parse does not fit
a pattern, or the result would be implausible for the nouns involved, a rule emits nothing. The rules live in one
module per family: :mod:`.swaps`, :mod:`.replacements`, :mod:`.additions`, :mod:`.negation`, :mod:`.spatial` and
:mod:`.count`.
"""

from __future__ import annotations

from .additions import add_att, add_obj
from .count import count
from .negation import negate
from .replacements import replace_att, replace_obj, replace_rel
from .spatial import spatial
from .swaps import swap_att, swap_obj

NEAR_MISS_RULES = {
    "swap_att": swap_att,
    "swap_obj": swap_obj,
    "replace_att": replace_att,
    "replace_obj": replace_obj,
    "replace_rel": replace_rel,
    "add_att": add_att,
    "add_obj": add_obj,
    "negate": negate,
    "spatial": spatial,
    "count": count,
}
__all__ = ["NEAR_MISS_RULES"]
