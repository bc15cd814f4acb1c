"""Reworded negations (negatives.affixal): "is not clear" / "is unclear" against "is clear", and their mix rows."""

import pytest

from pyterrier_compverify.negatives.affixal import affixal_antonyms, reworded_negations
from pyterrier_compverify.training.verifier_mix import reworded_rows


def test_antonyms_are_affixal_contradictories_without_participles_or_excluded_senses():
    pairs = affixal_antonyms()
    assert pairs["possible"] == "impossible" and pairs["clear"] == "unclear" and pairs["useful"] == "useless"
    assert pairs["significant"] == "insignificant"  # "in" before "non" (WordNet also has "nonsignificant")
    assert "treated" not in pairs and "critical" not in pairs and "comparable" not in pairs
    assert "paid" not in pairs and "written" not in pairs and pairs["known"] == "unknown"  # participles but one
    assert all(negative != word and word in negative or negative.endswith("less") for word, negative in pairs.items())


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (
            "The mechanism is unclear.",
            ("The mechanism is not clear.", "The mechanism is unclear.", "The mechanism is clear."),
        ),
        (
            "It was not possible to act.",
            ("It was not possible to act.", "It was impossible to act.", "It was possible to act."),
        ),
        (
            "These are sufficient for growth.",
            (
                "These are not sufficient for growth.",
                "These are insufficient for growth.",
                "These are sufficient for growth.",
            ),
        ),
        ("The dye was useless.", ("The dye was not useful.", "The dye was useless.", "The dye was useful.")),
        (
            "It is unknown whether it binds.",
            ("It is not known whether it binds.", "It is unknown whether it binds.", "It is known whether it binds."),
        ),
        # the first copula is rejected (an adverb before a participle), the second is edited
        (
            "It is likely mediated by X, which is clear.",
            (
                "It is likely mediated by X, which is not clear.",
                "It is likely mediated by X, which is unclear.",
                "It is likely mediated by X, which is clear.",
            ),
        ),
        (
            "Results remained not significant.",
            ("Results remained not significant.", "Results remained insignificant.", "Results remained significant."),
        ),
    ],
)
def test_each_edited_sentence_gives_both_directions(sentence, expected):
    with_not, with_affix, affirmative = expected
    table = reworded_negations([sentence])
    assert table[["anchor", "positive", "negative", "direction"]].values.tolist() == [
        [with_not, with_affix, affirmative, "not->affix"],
        [with_affix, with_not, affirmative, "affix->not"],
    ]
    assert set(table["sentence"]) == {sentence}


@pytest.mark.parametrize(
    "sentence",
    [
        "This effect is likely mediated by inhibition.",  # an adverb before a participle, not a predicate
        "Little is known about the cause.",  # "little is not known" would flip the quantifier, not the predicate
        "The protein is known to bind DNA.",  # "unknown to bind"
        "The result is not unclear.",  # a double negation: no affirmative to write
        "The result remains clear.",  # where "not" goes after "remains" is not one place
        "Patients were treated with aspirin.",  # a participle: passive voice
        "The sample is clear-cut.",  # part of a compound
        "No method is available.",  # a negative subject: "no method is not available"
        "Only one solution is possible.",  # "only" before the copula
        "The wall is porous and smooth.",  # "not porous and smooth" denies both, "nonporous and smooth" one
        "Although it is clear, we test it.",  # a concessive reads as a contradiction once flipped
        "The fee is paid.",  # an irregular participle ("unpaid")
        "No copula here at all.",
        "The data are unavailable for all patients.",  # "not available for all" is "not for every one"
    ],
)
def test_sentences_that_are_not_edited(sentence):
    assert reworded_negations([sentence]).empty


def test_mix_rows_take_one_direction_per_sentence_and_redraw_by_seed():
    table = reworded_negations(["The mechanism is unclear.", "It was possible to act.", "Data are available."])
    draws = [reworded_rows(table, seed=s) for s in range(8)]
    for rows in draws:
        assert len(rows) == 3 and rows["negative"].is_unique  # each sentence once: no anchor is a batch negative
        assert set(rows["source"]) == {"reworded"} and set(rows["negative_kind"]) == {"affirmative"}
        assert not (set(rows["anchor"]) & set(rows["positive"]))
    assert len({tuple(rows["anchor"]) for rows in draws}) > 1  # directions are drawn, not fixed


def test_mix_rows_refuse_rows_out_of_their_order():
    table = reworded_negations(["The mechanism is unclear.", "It was possible to act.", "Data are available."])
    with pytest.raises(ValueError, match="in their order"):
        reworded_rows(table.iloc[[0, 2, 1, 3, 4, 5]].reset_index(drop=True))
    with pytest.raises(ValueError, match="reset_index"):
        reworded_rows(table.iloc[2:])  # a filtered frame keeps its old labels


def test_mix_rows_take_the_passage_form_of_a_share_of_the_sentences():
    from pyterrier_compverify.training.data import sentence_homes, triplets_in_passages

    sentences = ["The mechanism is unclear.", "It was possible to act.", "Data are available."]
    table = reworded_negations(sentences)
    abstract = "Cells were grown in vitro. The mechanism is unclear. We used mice."  # a home for the first only
    passages = triplets_in_passages(table, sentence_homes([abstract, "Data are available."]), words=40)
    assert len(passages) == 2 and set(passages["sentence"]) == {"The mechanism is unclear."}  # no lone sentence
    assert passages["anchor"].str.startswith("Cells were grown in vitro. The mechanism is").all()
    assert reworded_rows(table, seed=3).equals(reworded_rows(table, seed=3, passages=passages, passage_share=0.0))
    plain = reworded_rows(table, seed=3)
    every = reworded_rows(table, seed=3, passages=passages, passage_share=1.0)
    inside = every["positive_kind"] == "reworded negation in a passage"
    assert inside.sum() == 1 and every.loc[inside, "negative"].item() == (
        "Cells were grown in vitro. The mechanism is clear. We used mice."
    )
    for column in ("anchor", "positive"):  # the passage of the direction drawn, not of the other one
        assert (
            every.loc[inside, column].item()
            == f"Cells were grown in vitro. {plain.loc[inside, column].item()} We used mice."
        )
    assert every.loc[~inside].drop(columns="positive_kind").equals(plain.loc[~inside].drop(columns="positive_kind"))
    shares = [
        (
            reworded_rows(table, seed=s, passages=passages, passage_share=0.5)["positive_kind"] != "reworded negation"
        ).sum()
        for s in range(40)
    ]
    assert 10 < sum(shares) < 30  # about half the draws of that sentence
    stale = passages.assign(anchor=passages["anchor"].str.replace("mechanism", "pathway"))
    with pytest.raises(ValueError, match="rebuild them"):  # passages made from other (older) edits
        reworded_rows(table, seed=3, passages=stale, passage_share=1.0)


def test_the_idiom_after_all_is_not_a_universal_quantifier():
    rows = reworded_negations(["The data were unavailable after all adjustments."])
    assert "The data were not available after all adjustments." in set(rows["anchor"])
