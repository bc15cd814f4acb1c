"""Sentence splitting for the structural negatives: abstracts with capitals, and tokenised lower-case text."""

import pytest

from pyterrier_compverify.training.data import corpus_sentences, sentence_homes, sentences_of, split_sentences


def test_capitalised_text_splits_after_end_punctuation():
    text = "We found X in mice. The effect was not seen in rats. It is small."
    assert sentences_of(text) == ["We found X in mice.", "The effect was not seen in rats.", "It is small."]


def test_tokenised_lower_case_text_splits_at_a_spaced_full_stop():
    # Cranfield writes its abstracts in lower case, the full stop set off by a space and lines broken mid-sentence
    text = "the bending strength of pressurized\ncylinders . discussion of experimental data\nfor the loading ."
    assert sentences_of(text) == [
        "the bending strength of pressurized cylinders .",
        "discussion of experimental data for the loading .",
    ]


def test_spaced_stop_after_a_bracket_ends_a_sentence():
    assert sentences_of("as kelly /2/ . the rest agree") == ["as kelly /2/ .", "the rest agree"]


def test_spaced_stop_after_an_initial_stays_and_after_a_number_splits():
    assert sentences_of("strains of E . coli grew well") == ["strains of E . coli grew well"]
    assert sentences_of("the rate was 3 . the yield was low") == ["the rate was 3 .", "the yield was low"]


def test_split_sentences_keeps_lengths_suited_to_edits():
    text = "the flow over the wing was measured in the tunnel . short . the results agree with theory at all speeds ."
    assert split_sentences(text) == [
        "the flow over the wing was measured in the tunnel .",
        "the results agree with theory at all speeds .",
    ]


def test_sentence_homes_find_the_same_sentences():
    text = "the flow was\nmeasured . results\nare given ."
    homes = sentence_homes([text])
    assert homes["results are given ."] == (["the flow was measured .", "results are given ."], 1)


@pytest.mark.integration
def test_cranfield_gives_sentences_to_edit(data_dir):
    sentences = corpus_sentences("irds:cranfield", seed=0)
    assert len(sentences) > 9000  # one sentence per abstract's worth before (5 in all)
    assert not any("\n" in s for s in sentences)
    assert all(6 <= len(s.split()) <= 40 for s in sentences)
