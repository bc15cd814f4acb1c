"""Lexical negations (negatives.lexical): "did not reduce" / "failed to reduce" against "reduced", "does not have" /
"lacks" against "has", "is not present" / "is absent" against "is present"."""

import pytest

from pyterrier_compverify.negatives.lexical import DIRECTIONS, lexical_negations
from pyterrier_compverify.training.verifier_mix import reworded_rows


@pytest.mark.parametrize(
    "sentence, expected",
    [
        (
            "The drug failed to reduce mortality.",
            (
                "The drug did not reduce mortality.",
                "The drug failed to reduce mortality.",
                "The drug reduced mortality.",
            ),
        ),
        (
            "The method fails to detect small tumours.",
            (
                "The method does not detect small tumours.",
                "The method fails to detect small tumours.",
                "The method detects small tumours.",
            ),
        ),
        (
            "Mutant cells fail to divide.",
            ("Mutant cells do not divide.", "Mutant cells fail to divide.", "Mutant cells divide."),
        ),
        (
            "Most microspores failed to undergo division.",
            (
                "Most microspores did not undergo division.",
                "Most microspores failed to undergo division.",
                "Most microspores underwent division.",  # irregular past
            ),
        ),
        (
            "The protein lacks a signal peptide.",
            (
                "The protein does not have a signal peptide.",
                "The protein lacks a signal peptide.",
                "The protein has a signal peptide.",
            ),
        ),
        (
            "Cells that did not have the receptor were excluded.",  # read from the "not" side as well
            (
                "Cells that did not have the receptor were excluded.",
                "Cells that lacked the receptor were excluded.",
                "Cells that had the receptor were excluded.",
            ),
        ),
        (
            "The drug clearly failed to reduce pain.",  # an adverb that does not hedge stays
            (
                "The drug clearly did not reduce pain.",
                "The drug clearly failed to reduce pain.",
                "The drug clearly reduced pain.",
            ),
        ),
        (
            "The enzyme is absent in muscle.",
            (
                "The enzyme is not present in muscle.",
                "The enzyme is absent in muscle.",
                "The enzyme is present in muscle.",
            ),
        ),
    ],
)
def test_each_edited_sentence_gives_both_directions(sentence, expected):
    with_not, with_lexical, affirmative = expected
    table = lexical_negations([sentence])
    assert table[["anchor", "positive", "negative", "direction"]].values.tolist() == [
        [with_not, with_lexical, affirmative, DIRECTIONS[0]],
        [with_lexical, with_not, affirmative, DIRECTIONS[1]],
    ]
    assert set(table["sentence"]) == {sentence}


@pytest.mark.parametrize(
    "sentence",
    [
        "Patients who did not smoke were excluded.",  # "did not V" is never rewritten as "failed to V"
        "Patients who had failed to respond were enrolled.",  # a participle after "had"
        "The treatment may fail to reduce pain.",  # after a modal
        "The drug failed to show any benefit.",  # "showed any benefit": a negative-polarity word
        "No drug failed to reduce pain.",  # a negation earlier in the clause
        "The trial failed to be completed.",  # "to be": no finite form to write
        "The drug has repeatedly failed to reduce pain.",  # an auxiliary before an adverb
        "These cells have long lacked insulin.",
        "The drug has, however, failed to reduce pain.",  # an auxiliary before a parenthetical adverb
        "Cells may grow but fail to divide.",  # a modal earlier in the clause: "do not divide" drops it
        "The drug sometimes fails to reduce pain.",  # "sometimes reduces" does not contradict it
        "The drug only fails to reduce pain in mice.",  # "only", even where it ends in -ly
        "Patients who did or did not have diabetes were enrolled.",  # "did or lacked"
        "The agonist failed to up-regulate the receptor.",  # a hyphenated verb ("uped-regulate")
        "The drug failed to reduce or prevent pain.",  # "reduced or prevent"
        "The factor failed to bind DNA or activate transcription.",  # "bound DNA or activate"
        "The peptide failed to mimic the hormone.",  # an unsure past ("mimiced")
        "The enzyme failed to undo the damage.",  # an irregular verb behind a prefix ("undoed")
        "The enzyme is absent from muscle.",  # "not present from" is not English
        "Patients do not have to fast.",  # "have to": obligation, not possession
        "Although the drug failed to reduce pain, it was used.",  # a concessive reads as a contradiction once flipped
        "This is not true for all viruses.",  # "not true" / "false" is left out
        "The results were not significant.",  # an affixal pair, not a lexical one
        "The tumour was absent in all mice.",  # "not present in all mice" is "not in every mouse"
        "The drug failed to reduce pain in all patients.",
    ],
)
def test_sentences_that_cannot_be_flipped_cleanly_are_skipped(sentence):
    assert lexical_negations([sentence]).empty


def test_one_edit_per_sentence_and_rows_feed_the_mix():
    table = lexical_negations(["The drug failed to reduce pain and lacks a license.", "The dye is absent in skin."])
    assert table.groupby("sentence").size().tolist() == [2, 2]  # the first edit only
    assert table["antonym"].tolist() == ["fail", "fail", "absent", "absent"]
    rows = reworded_rows(table, seed=0)
    assert len(rows) == 2 and set(rows["negative"]) == {
        "The drug reduced pain and lacks a license.",
        "The dye is present in skin.",
    }
