"""``reranker.explain(query, text)`` and ``compverify explain``: the map, the best matches, the score taken apart,
the picture, and the one-line error without matplotlib."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.cli import main
from pyterrier_compverify.explain import INSTALL_HINT, plot_explanations

QUERY = "the big dog chases a small cat"
TEXTS = ["a small cat chases the big dog", "the big dog is not on the cat", "hello world"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def f4_verifier(tmp_path_factory, tiny_encoder):
    """A random F4 head saved as an artifact whose serving form is the fused one (MaxSim minus the penalty);
    tau 0.5 so the penalty is not vanishingly small on the tiny model's maps."""
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(
        tmp_path_factory.mktemp("f4") / "v", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4"
    )
    verifier.set_default_penalty({"beta": 0.5, "tau": 0.5}, selected_on="test")
    return verifier


def _rerankers(tiny_encoder, f4_verifier) -> dict:
    return {
        "maxsim": cv.MaxSim(tiny_encoder),
        "pooled": cv.PooledCosine(tiny_encoder),  # a states head: the map is still drawn
        "fused": cv.MapVerifier(f4_verifier, encoder=tiny_encoder),
        "head": cv.MapVerifier(f4_verifier, encoder=tiny_encoder, penalty=False),
    }


def test_map_shapes_and_tokens_are_the_tokenizers(tiny_encoder):
    e = cv.MaxSim(tiny_encoder).explain(QUERY, TEXTS[1])
    tokenizer = tiny_encoder.model.tokenizer
    assert e.query_tokens == ["[CLS]", *tokenizer.tokenize(QUERY), "[SEP]"]
    assert e.doc_tokens == ["[CLS]", *tokenizer.tokenize(TEXTS[1]), "[SEP]"]
    states = tiny_encoder.encode([QUERY, TEXTS[1]]).token_states
    assert e.sim.shape == (states[0].shape[0], states[1].shape[0]) == (len(e.query_tokens), len(e.doc_tokens))
    assert e.sim.dtype == np.float32 and e.best.shape == (len(e.query_tokens),)


def test_tokens_follow_truncation_and_unknown_words(tiny_encoder):
    long_text = " ".join(["dog cat"] * 20) + " zebra"  # 41 words, max_length 16; "zebra" is not in the vocabulary
    e = cv.MaxSim(tiny_encoder).explain("zebra dog", long_text)
    assert len(e.doc_tokens) == tiny_encoder.max_length == e.sim.shape[1]
    assert e.doc_tokens[-1] == "[SEP]" and e.query_tokens == ["[CLS]", "[UNK]", "dog", "[SEP]"]


def test_best_matches_are_the_maps_row_argmax_and_maxsim_their_mean(tiny_encoder):
    e = cv.MaxSim(tiny_encoder).explain(QUERY, TEXTS[0])
    np.testing.assert_array_equal(e.best, e.sim.argmax(axis=1))
    np.testing.assert_allclose(e.best_sim, e.sim.max(axis=1))
    assert e.score == pytest.approx(float(e.sim.max(axis=1).mean()), abs=1e-6) == pytest.approx(e.maxsim, abs=1e-6)
    assert [m[1] for m in e.matches()] == [e.doc_tokens[j] for j in e.sim.argmax(axis=1)]
    assert e.verdict is None and e.penalty is None


@pytest.mark.parametrize("name", ["maxsim", "pooled", "fused", "head"])
def test_explained_score_is_the_served_score(name, tiny_encoder, f4_verifier):
    reranker = _rerankers(tiny_encoder, f4_verifier)[name]
    frame = pd.DataFrame({"qid": "q1", "query": QUERY, "docno": [f"d{i}" for i in range(len(TEXTS))], "text": TEXTS})
    served = reranker(frame).set_index("docno")["score"]
    for i, text in enumerate(TEXTS):
        assert reranker.explain(QUERY, text).score == pytest.approx(served[f"d{i}"], abs=1e-5)


def test_a_bf16_rerankers_explained_score_is_its_served_score(tiny_encoder, f4_verifier):
    """explain() ran the head in float32 whatever the reranker's dtype (review 50-c)."""
    reranker = cv.MapVerifier(f4_verifier, encoder=tiny_encoder, penalty=False, dtype="bfloat16")
    for text in TEXTS:
        served = reranker(pd.DataFrame({"qid": "q1", "query": QUERY, "docno": ["d"], "text": [text]}))["score"][0]
        assert reranker.explain(QUERY, text).score == pytest.approx(served, abs=1e-6)


def test_fused_score_is_maxsim_minus_the_penalty_of_the_heads_verdict(tiny_encoder, f4_verifier):
    rerankers = _rerankers(tiny_encoder, f4_verifier)
    for text in TEXTS:
        fused = rerankers["fused"].explain(QUERY, text)
        head_alone = rerankers["head"].explain(QUERY, text)
        assert fused.maxsim == pytest.approx(rerankers["maxsim"].explain(QUERY, text).score, abs=1e-6)
        assert fused.verdict == pytest.approx(head_alone.score, abs=1e-6) == pytest.approx(head_alone.verdict)
        assert fused.penalty > 0 and fused.score == pytest.approx(fused.maxsim - fused.penalty, abs=1e-6)
        assert head_alone.penalty is None
    assert "beta 0.5, tau 0.5" in fused.reranker and "penalty" in fused.summary()


def test_png_is_written(tmp_path, tiny_encoder):
    reranker = cv.MaxSim(tiny_encoder)
    e = reranker.explain(QUERY, TEXTS[0])
    figure = e.plot(tmp_path / "one.png")
    data = (tmp_path / "one.png").read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == e.query_tokens
    assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == e.doc_tokens
    assert e._repr_png_().startswith(PNG_MAGIC)
    pair = [reranker.explain(QUERY, t) for t in TEXTS[:2]]
    plot_explanations(pair, tmp_path / "pair.png", labels=["swap", "negation"])
    assert (tmp_path / "pair.png").read_bytes().startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="one per explanation"):
        plot_explanations(pair, labels=["swap"])
    for text in (r"the gene $\alpha$ cell", "costs $5 and $10"):  # not mathtext: it failed, or dropped the $s
        figure = reranker.explain(QUERY, text).plot(tmp_path / "dollars.png")
        ax = figure.axes[0]
        assert ax.get_title().startswith(repr(text)) and not ax.title.get_parse_math()
        assert not any(label.get_parse_math() for label in [*ax.get_xticklabels(), *ax.get_yticklabels()])


def test_cli_prints_the_matches_and_writes_the_file(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "map.png"
    main(["explain", QUERY, *TEXTS[:2], "--reranker", "maxsim", "--model", tiny_model_dir, "--out", str(out)])
    assert out.read_bytes().startswith(PNG_MAGIC)
    printed = capsys.readouterr().out
    assert printed.count("MaxSim: score") == 2 and f"wrote {out}" in printed and "chases -> chases" in printed


def test_a_verifier_folder_given_with_a_tilde_is_explained(f4_verifier, tiny_model_dir, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(f4_verifier.path.parent))  # "--reranker=~/v": the shell leaves the tilde to us
    main(["explain", QUERY, TEXTS[0], "--reranker", "~/v", "--model", tiny_model_dir])
    assert "score" in capsys.readouterr().out  # was refused as an unknown scorer after the encoder loaded


def test_without_matplotlib_one_line_names_the_extra(monkeypatch, tmp_path, tiny_encoder, tiny_model_dir, capsys):
    e = cv.MaxSim(tiny_encoder).explain(QUERY, TEXTS[0])  # the numbers need no matplotlib
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    with pytest.raises(ImportError) as error:
        e.plot(tmp_path / "x.png")
    assert str(error.value) == INSTALL_HINT and 'pip install "pyterrier-compverify[explain]"' in INSTALL_HINT
    assert e._repr_png_() is None and not (tmp_path / "x.png").exists()
    with pytest.raises(SystemExit) as exit_:
        main(["explain", QUERY, TEXTS[0], "--reranker", "maxsim", "--model", tiny_model_dir, "--out", "x.png"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and err == f"compverify explain: error: {INSTALL_HINT}"


@pytest.mark.integration
def test_word_pieces_of_the_real_tokenizer_are_shown_as_it_cuts_them(minilm):
    e = cv.MaxSim(minilm).explain("a zebrafish swims", "the fish chased a zebra")
    tokenizer = minilm.model.tokenizer
    assert e.query_tokens == ["[CLS]", *tokenizer.tokenize("a zebrafish swims"), "[SEP]"]
    assert any(t.startswith("##") for t in e.query_tokens) and e.sim.shape == (len(e.query_tokens), len(e.doc_tokens))


@pytest.mark.parametrize(
    ("penalty", "message"),
    [(True, "penalty must be a dict of beta, tau"), ({"betta": 1.0}, r"unknown option\(s\) \['betta'\]")],
)
def test_a_penalty_that_is_not_one_is_a_one_line_error(tiny_encoder, f4_verifier, penalty, message):
    """penalty=True and a misspelt key gave raw TypeErrors; head= another TypeError (review 50-a)."""
    with pytest.raises(ValueError, match=message):
        cv.MapVerifier(f4_verifier, encoder=tiny_encoder, penalty=penalty)
    with pytest.raises(ValueError, match="serves the verifier's own head"):
        cv.MapVerifier(f4_verifier, encoder=tiny_encoder, head="F1")
    assert cv.MapVerifier(f4_verifier, encoder=tiny_encoder, penalty=0).penalty is False  # as False: the head alone


def test_a_verifier_package_holds_the_artifact_not_the_training_run(tmp_path, tiny_encoder):
    """train_verifier saves the artifact inside its run folder; to_hf / build_package packed the checkpoints
    (optimiser state, pickles) and the state cache too (review 50-g)."""
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(tmp_path / "run", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    for junk in ("checkpoints/checkpoint-2/optimizer.pt", "state-cache/abc/states.npy"):
        (tmp_path / "run" / junk).parent.mkdir(parents=True)
        (tmp_path / "run" / junk).write_bytes(b"x")
    names = [name for name, _ in verifier._package_files()]
    assert names == ["pt_meta.json", "head.safetensors"]
    package = tmp_path / "v.tar.lz4"
    verifier.build_package(str(package))
    assert package.stat().st_size < 10 * (tmp_path / "run" / "head.safetensors").stat().st_size


def test_a_hub_verifier_that_cannot_be_fetched_is_one_line(monkeypatch):
    """'hf:org/name' offline went to urllib and a twenty-frame URLError (review 50-g)."""
    import urllib.error

    def unreachable(repo, *args, **kwargs):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(cv.Verifier, "from_hf", unreachable)
    with pytest.raises(FileNotFoundError, match="cannot fetch the verifier 'someone/repo' from the Hugging Face hub"):
        cv.MapVerifier.from_pretrained("hf:someone/repo")
