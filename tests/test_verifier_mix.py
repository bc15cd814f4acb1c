"""The verifier's training mix and the serving form recorded in a Verifier artifact."""

import pandas as pd
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.training.verifier_mix import arrange_batches, caption_rows, structural_rows

CAPTIONS = pd.DataFrame(
    {
        "image": ["i1", "i1", "i1", "i2", "i2", "i3"],
        "caption": ["a dog runs", "a brown dog running", "dog on grass", "a man sits", "a person sitting", "x"],
    }
)
EDITS = pd.DataFrame(
    {
        "caption": ["a dog runs", "a dog runs", "a man sits", "a man sits", "x"],
        "edit": ["a cat runs", "a dog is running", "a woman sits", "the man sits", "y"],
        "kind": ["replace_obj", "paraphrase", "replace_obj", "paraphrase", "replace_obj"],
    }
)


def test_caption_rows_pair_a_near_miss_with_a_real_paraphrase():
    rows = caption_rows(CAPTIONS, EDITS, paraphrase_share=0.0, seed=1)
    assert len(rows) == 2  # i3 has one caption only: no positive
    by_anchor = rows.set_index("anchor")
    assert by_anchor.loc["a dog runs", "negative"] == "a cat runs"
    assert by_anchor.loc["a dog runs", "positive"] in {"a brown dog running", "dog on grass"}
    assert set(rows["positive_kind"]) == {"caption"} and set(rows["negative_kind"]) == {"replace_obj"}
    para = caption_rows(CAPTIONS, EDITS, paraphrase_share=1.0, seed=1).set_index("anchor")
    assert (
        para.loc["a man sits", "positive"] == "the man sits" and para.loc["a man sits", "positive_kind"] == "paraphrase"
    )
    ident = caption_rows(CAPTIONS, EDITS, identity=True)
    assert (ident["anchor"] == ident["positive"]).all() and set(ident["positive_kind"]) == {"identity"}


def test_structural_rows_need_a_meaning_kept_and_a_flipped_edit():
    edits = pd.DataFrame(
        {
            "sentence1": ["s1", "s1", "s2"],
            "sentence2": ["s1 para", "s1 not", "s2 not"],
            "category": ["paraphrase", "negation", "negation"],
        }
    )
    rows = structural_rows(edits)
    assert rows[["anchor", "positive", "negative", "negative_kind"]].values.tolist() == [
        ["s1", "s1 para", "s1 not", "negation"]
    ]


def test_arranged_batches_hold_one_source_and_distinct_images_per_epoch():
    rows = lambda epoch: caption_rows(CAPTIONS, EDITS, seed=epoch)  # noqa: E731
    other = pd.DataFrame({"anchor": list("abcd"), "positive": list("abcd"), "negative": list("efgh"), "source": "r"})
    arranged = arrange_batches({"caption": rows, "r": other}, {"caption": 1, "r": 1}, steps=20, batch_size=2, seed=3)
    blocks = arranged.groupby(arranged.index // 2)
    assert len(arranged) == 40 and blocks["source"].nunique().max() == 1
    assert (blocks["anchor"].nunique() == 2).all()
    with pytest.raises(ValueError, match=r"fewer rows than one batch of 8: r \(4 rows\)"):
        arrange_batches({"r": other}, {"r": 1}, steps=1, batch_size=8)
    # a small source beside a usable one was dropped without a word, and so was a misspelt share
    with pytest.raises(ValueError, match=r"fewer rows than one batch of 2: r \(1 rows\); lower the batch size"):
        arrange_batches({"caption": rows, "r": other.head(1)}, {"caption": 1, "r": 1}, steps=1, batch_size=2)
    with pytest.raises(ValueError, match="shares name no source: rr"):
        arrange_batches({"caption": rows, "r": other}, {"caption": 1, "rr": 1}, steps=1, batch_size=2)
    shrinking = lambda epoch: other if epoch == 0 else other.head(1)  # noqa: E731
    with pytest.raises(
        ValueError,
        match="source r gave 1 rows at epoch 1, fewer than one batch of 2; lower the batch size or give it share 0",
    ):
        arrange_batches({"r": shrinking}, {"r": 1}, steps=3, batch_size=2)  # its blocks came out short


def test_the_serving_form_recorded_in_the_artifact_is_the_default(tmp_path, tiny_encoder):
    from pyterrier_compverify.scoring import ConditionalPenalty, build_head

    verifier = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    assert verifier.default_penalty is None
    assert not isinstance(cv.MapVerifier(verifier, encoder=tiny_encoder).head, ConditionalPenalty)
    verifier.set_default_penalty({"beta": 0.5, "tau": 0.9}, selected_on="dev")
    fused = cv.MapVerifier(tmp_path / "v", encoder=tiny_encoder)
    assert isinstance(fused.head, ConditionalPenalty) and fused.head.beta == 0.5
    assert not isinstance(cv.MapVerifier(verifier, encoder=tiny_encoder, penalty=False).head, ConditionalPenalty)


def test_a_symmetric_gate_spares_a_candidate_that_adds_much_but_not_a_one_word_edit():
    import torch

    from pyterrier_compverify.scoring import ConditionalPenalty

    class Reject(torch.nn.Module):
        def forward(self, sim, query_mask, cand_mask):
            return -torch.ones(sim.shape[0])

    # query of 4 tokens; candidate 0 = the query with one token changed (4 tokens), candidate 1 = the query
    # plus 8 unrelated tokens (a richer description): both have forward MaxSim 1.0 or close to it
    sim = torch.zeros(2, 4, 12)
    sim[0, :, :4] = torch.eye(4)
    sim[0, 3, 3] = 0.9
    sim[1, :, :4] = torch.eye(4)
    sim[1, :, 4:] = 0.1
    query_mask = torch.ones(4, dtype=torch.bool)
    cand_mask = torch.zeros(2, 12, dtype=torch.bool)
    cand_mask[0, :4] = True
    cand_mask[1] = True
    forward = ConditionalPenalty(Reject(), beta=0.5, tau=0.8)
    symmetric = ConditionalPenalty(Reject(), beta=0.5, tau=0.8, gate="symmetric")
    _, _, forward_penalty = forward.components(sim, query_mask, cand_mask)
    _, _, symmetric_penalty = symmetric.components(sim, query_mask, cand_mask)
    assert forward_penalty[0] > 0.9 and forward_penalty[1] > 0.9  # forward: both look like near-duplicates
    assert symmetric_penalty[0] > 0.9 and symmetric_penalty[1] < 0.01  # symmetric: only the one-word edit
    with pytest.raises(ValueError, match="gate='both'"):
        ConditionalPenalty(Reject(), gate="both")


def test_the_gate_is_recorded_with_the_serving_form(tmp_path, tiny_encoder):
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    verifier.set_default_penalty({"beta": 1.0, "tau": 0.8, "gate": "symmetric"}, selected_on="dev")
    reranker = cv.MapVerifier(tmp_path / "v", encoder=tiny_encoder)
    assert reranker.head.gate == "symmetric" and "gate=symmetric" in repr(reranker.head)
    assert cv.MapVerifier(verifier, encoder=tiny_encoder, penalty={"beta": 1.0, "tau": 0.8}).head.gate == "forward"


def test_an_image_whose_captions_are_all_alike_is_skipped():
    captions = pd.DataFrame({"image": ["i1", "i1", "i2", "i2"], "caption": ["A dog runs."] * 2 + ["a cat", "a kitten"]})
    edits = pd.DataFrame({"caption": ["A dog runs.", "a cat"], "edit": ["A cat runs.", "a dog"], "kind": "replace_obj"})
    rows = caption_rows(captions, edits)
    assert rows["anchor"].tolist() == ["a cat"] and rows["positive"].tolist() == ["a kitten"]
