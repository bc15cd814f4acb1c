"""BiEncoder.index / retriever: one pass fills a FlexIndex and a TokenStore, and `retriever >> reranker` works with
no store= and no text column (issue 16: the one-liners as written)."""

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.spec import IncompatibleEncoderError

DOCS = [
    {"docno": "d1", "text": "a dog chases a cat"},
    {"docno": "d2", "text": "the cat chases the dog"},
    {"docno": "d3", "text": "protein gene cell"},
    {"docno": "d4", "text": "a small red cell is not blue"},
]
TOPICS = pd.DataFrame({"qid": ["q1", "q2"], "query": ["dog chases cat", "red cell"]})


@pytest.fixture
def model(tiny_model_dir):
    return cv.BiEncoder(tiny_model_dir, max_length=16, batch_size=4, device="cpu")


@pytest.fixture
def index(model, tmp_path):
    return model.index(DOCS, tmp_path / "docs.index")


def test_index_holds_dense_vectors_and_token_states(model, index):
    assert index.store is not None and len(index.store) == len(DOCS)
    assert sorted(index.store.docnos()) == [d["docno"] for d in DOCS]
    assert (index.path / "dense" / "pt_meta.json").is_file()


def test_reranker_after_the_retriever_needs_no_store_and_no_text(model, index, tmp_path):
    dense = model.retriever(index.path)
    res = (dense % 3 >> cv.MaxSim(model))(TOPICS)
    assert "text" not in res.columns and len(res) == 6
    # the same scores as the explicit form: a text column and the reranker's own encoding
    explicit = model.query_encoder() >> index.flex.retriever(num_results=3) >> with_text_column()
    expected = cv.MaxSim(model)(explicit(TOPICS).drop(columns=["query_vec"], errors="ignore"))
    merged = res.merge(expected, on=["qid", "docno"], suffixes=("", "_text"))
    assert len(merged) == 6
    np.testing.assert_allclose(merged["score"], merged["score_text"], atol=2e-3)


def with_text_column():
    texts = {d["docno"]: d["text"] for d in DOCS}
    return pt.apply.generic(lambda df: df.assign(text=df["docno"].map(texts)))


def test_one_liner_in_pt_experiment(model, index):
    dense = model.retriever(index.path)
    qrels = pd.DataFrame({"qid": ["q1", "q2"], "docno": ["d1", "d4"], "label": [1, 1]})
    table = pt.Experiment([dense, dense % 3 >> cv.MaxSim(model)], TOPICS, qrels, [pt.measures.nDCG @ 10])
    assert len(table) == 2 and table["nDCG@10"].between(0, 1).all()


def test_a_reranker_of_another_encoder_is_refused_with_the_fix(model, index, tiny_model_dir):
    other = cv.TokenEncoder(tiny_model_dir, max_length=12, device="cpu")
    with pytest.raises(IncompatibleEncoderError, match=r"give the reranker the index's encoder.*or the text"):
        (model.retriever(index.path) % 2 >> cv.MaxSim(other))(TOPICS)
    # with the text, it is scored from the text (as the README says for any other first stage)
    got = (model.retriever(index.path) % 2 >> with_text_column() >> cv.MaxSim(other))(TOPICS)
    alone = cv.MaxSim(other)(got.drop(columns=["query_toks"]))  # no first-stage states at all
    key = ["qid", "docno"]
    pd.testing.assert_series_equal(
        got.set_index(key)["score"], alone.set_index(key)["score"].loc[got.set_index(key).index]
    )


def test_without_token_states_or_text_the_error_names_the_fix(model, index):
    bm25_like = pd.DataFrame({"qid": ["q1"], "query": ["dog"], "docno": ["d1"], "score": [1.0], "rank": [0]})
    with pytest.raises(ValueError, match=r"pt.text.get_text\(dataset, 'text'\)"):
        cv.MaxSim(model)(bm25_like)


def test_dense_only_index_then_reranker_names_the_fix(model, tmp_path):
    index = model.index(DOCS, tmp_path / "dense-only.index", token_states=False)
    assert index.store is None
    with pytest.raises(ValueError, match="store=cv.TokenStore"):
        (model.retriever(index.path) % 2 >> cv.MaxSim(model))(TOPICS)


def test_modes_create_reuse_overwrite(model, index):
    for token_states in (True, False):  # the hint names this method's modes, reuse included
        with pytest.raises(FileExistsError, match=r"already exists; pass mode='reuse' or mode='overwrite'$"):
            model.index(DOCS, index.path, token_states=token_states)
    states = index.path / "tokens"
    before = states.stat().st_mtime_ns
    reused = model.index(iter(()), index.path, mode="reuse")  # nothing to encode: the built index is opened
    assert reused.path == index.path and states.stat().st_mtime_ns == before
    rebuilt = model.index(DOCS[:2], index.path, mode="overwrite")
    assert len(rebuilt.store) == 2
    with pytest.raises(ValueError, match="mode must be one of"):
        model.index(DOCS, index.path, mode="append")


def test_indexing_shows_a_bar_with_a_total_unless_told_not_to(model, tmp_path, capfd):
    assert not model.verbose  # the encoder's own setting does not hide the one long pass
    model.index(DOCS, tmp_path / "shown.index")
    assert f"token store: 100%|██████████| {len(DOCS)}/{len(DOCS)}" in capfd.readouterr().err
    model.index(DOCS, tmp_path / "quiet.index", verbose=False)
    assert "token store" not in capfd.readouterr().err


def test_reuse_rebuilds_an_index_whose_token_store_is_missing(model, tmp_path):
    dense_only = model.index(DOCS, tmp_path / "partial.index", token_states=False)  # or killed between the swaps
    assert dense_only.store is None
    reused = model.index(DOCS, dense_only.path, mode="reuse")
    assert reused.store is not None and len(reused.store) == len(DOCS)
    assert model.index(iter(()), dense_only.path, mode="reuse").store is not None  # now complete: opened as it is


def test_reuse_refuses_an_index_of_another_encoder(index, tiny_model_dir):
    other = cv.BiEncoder(tiny_model_dir, max_length=12, device="cpu")
    with pytest.raises(IncompatibleEncoderError):
        other.index(DOCS, index.path, mode="reuse")


def test_a_dense_only_index_of_another_encoder_is_refused(model, tiny_model_dir, tmp_path):
    """Without a token store the dense vectors were the only record; another encoder's queries searched them."""
    dense_only = model.index(DOCS, tmp_path / "dense.index", token_states=False)
    other = cv.BiEncoder(tiny_model_dir, max_length=12, device="cpu")
    with pytest.raises(IncompatibleEncoderError, match=r"the index at .*dense.index was made with encoder"):
        other.index(DOCS, dense_only.path, mode="reuse", token_states=False)
    with pytest.raises(IncompatibleEncoderError, match="max_length 16 != 12"):
        other.retriever(dense_only.path)
    assert len(model.retriever(dense_only.path)(TOPICS)) > 0  # its own encoder opens it


def test_an_overwrite_stopped_before_its_end_is_refused_not_read_as_either_encoders(
    model, tiny_model_dir, tmp_path, monkeypatch
):
    from pyterrier_compverify import biencoder

    built = model.index(DOCS, tmp_path / "dense.index", token_states=False)
    other = cv.BiEncoder(tiny_model_dir, max_length=12, device="cpu")
    real_write = biencoder.write_json

    def stopped_before_the_record(path, data):  # a kill after the new vectors are in place
        if biencoder.BUILDING_KEY not in data:
            raise KeyboardInterrupt
        real_write(path, data)

    monkeypatch.setattr(biencoder, "write_json", stopped_before_the_record)
    with pytest.raises(KeyboardInterrupt):
        other.index(DOCS, built.path, mode="overwrite", token_states=False)
    monkeypatch.undo()
    for encoder in (model, other):  # the old record named model: the vectors are other's
        with pytest.raises(biencoder.IncompleteIndexError, match="was being built when it stopped: rebuild it"):
            encoder.retriever(built.path)
    assert model.index(DOCS, built.path, mode="reuse", token_states=False).path == built.path  # rebuilt
    assert len(model.retriever(built.path)(TOPICS)) > 0


def test_an_overwrite_that_fails_before_any_part_moves_leaves_the_index_as_it_was(model, tiny_model_dir, tmp_path):
    built = model.index(DOCS, tmp_path / "docs.index")
    other = cv.BiEncoder(tiny_model_dir, max_length=12, device="cpu")
    with pytest.raises(ValueError, match="duplicate docno 'd1'"):
        other.index([*DOCS, DOCS[0]], built.path, mode="overwrite")
    assert len(model.retriever(built.path)(TOPICS)) > 0  # still model's index, and says so
    with pytest.raises(IncompatibleEncoderError):
        other.retriever(built.path)


def test_missing_index_is_named(model, tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no index"):
        model.retriever(tmp_path / "nowhere")


@pytest.mark.integration
def test_readme_one_liner_with_the_packaged_verifier(data_dir, tmp_path):
    """`dense % k >> cv.MapVerifier()` and `>> cv.MaxSim()` with no argument, in pt.Experiment (real MiniLM)."""
    from pyterrier_compverify.datasets import load_collection

    collection = load_collection("irds:beir/scifact/test")
    qrels = collection.qrels()
    topics = collection.topics().head(3)
    wanted = set(qrels[qrels.qid.isin(topics.qid)].docno)
    docs = [d for d in collection.corpus_iter() if d["docno"] in wanted]
    docs += [d for _, d in zip(range(40), collection.corpus_iter()) if d["docno"] not in wanted]
    model = cv.BiEncoder(device="cpu")
    model.index(docs, tmp_path / "scifact.index", mode="reuse")
    dense = model.retriever(tmp_path / "scifact.index")
    table = pt.Experiment(
        [dense, dense % 20 >> cv.MaxSim(), dense % 20 >> cv.MapVerifier()],
        topics,
        qrels[qrels.qid.isin(topics.qid)],
        [pt.measures.nDCG @ 10],
        names=["dense", "maxsim", "mapverifier"],
    )
    assert list(table["name"]) == ["dense", "maxsim", "mapverifier"]
    assert table["nDCG@10"].between(0.05, 1).all()  # the relevant documents are in the 40-60 indexed


def test_index_with_a_codec_and_reuse_checks_it(model, tmp_path):
    built = model.index(DOCS, tmp_path / "bf16.index", codec="bf16")
    assert built.store.codec == {"name": "bf16"}
    assert built.store.gather(*built.store.row_ranges(["d1"])).dtype == torch.bfloat16
    assert model.index(iter(()), built.path, mode="reuse").store.codec == {"name": "bf16"}  # no codec: any
    assert model.index(iter(()), built.path, mode="reuse", codec="bf16").path == built.path
    with pytest.raises(ValueError, match="keeps its token states as {'name': 'bf16'}, not {'name': 'fp16'}: pass"):
        model.index(DOCS, built.path, mode="reuse", codec="fp16")
    with pytest.raises(ValueError, match="not {'name': 'pq', 'm': 8, "):  # parameters count, not only the name
        model.index(DOCS, built.path, mode="reuse", codec={"name": "pq", "m": 8})
    with pytest.raises(ValueError, match="unknown store codec 'int4'"):
        model.index(DOCS, tmp_path / "other.index", codec="int4")
    assert not (tmp_path / "other.index").exists()
    out = (model.retriever(built.path) >> cv.MaxSim(model, dtype="bfloat16"))(TOPICS)
    assert len(out) and out["score"].notna().all()


def test_a_dense_only_overwrite_drops_the_old_token_states(model, tmp_path):
    path = tmp_path / "both.index"
    assert model.index(DOCS, path).store is not None
    rebuilt = model.index(DOCS[:2], path, mode="overwrite", token_states=False)
    # the old store held the old documents' states: rerankers after model.retriever(path) would have read them
    assert rebuilt.store is None and not (path / "tokens").exists()
    assert model.open_index(path).store is None


def test_a_generator_gets_a_bar_total_from_total(model, tmp_path, capfd):
    model.index((d for d in DOCS), tmp_path / "gen.index", total=len(DOCS))
    assert f"token store: 100%|██████████| {len(DOCS)}/{len(DOCS)}" in capfd.readouterr().err


def test_tree_plan_keeps_two_indices_query_encoders_apart(model, index, tmp_path):
    """PyTerrier's tree plan runs equal stages once: two indices' query encoders must not compare equal, or the
    second system reranks with the first index's token states (review 50-a)."""
    int8 = model.index(DOCS, tmp_path / "int8.index", codec="int8")
    first, second = model.retriever(index.path), model.retriever(int8.path)
    assert first[0] != second[0] and model.query_token_encoder() != model.query_encoder()
    assert model.retriever(index.path)[0] == first[0]  # the same index: one stage
    seen = []
    spy = lambda tag: pt.apply.generic(lambda df: seen.append((tag, {t.store for t in df["query_toks"]})) or df)  # noqa: E731
    qrels = pd.DataFrame({"qid": ["q1"], "docno": ["d1"], "label": [1]})
    pt.Experiment([first % 3 >> spy("a"), second % 3 >> spy("b")], TOPICS, qrels, ["map"], plan="tree")
    assert dict(seen) == {"a": {index.store}, "b": {int8.store}}


def test_an_explicit_text_field_or_store_false_scores_the_rows_text(model, index):
    """After model.retriever(index) the index's token states are used, unless the user asks for a text field or
    store=False; a docno the index lacks (a passage of pt.text.sliding) is scored from its text."""
    dense = model.retriever(index.path, num_results=3)
    other = pt.apply.generic(lambda df: df.assign(title="protein gene cell", text="protein gene cell"))
    from_store = (dense >> other >> cv.MaxSim(model))(TOPICS)
    titles = (dense >> other >> cv.MaxSim(model, text_field="title"))(TOPICS)
    texts = (dense >> other >> cv.MaxSim(model, store=False))(TOPICS)
    assert from_store.groupby("qid")["score"].nunique().max() > 1  # each document's own states
    assert titles.groupby("qid")["score"].nunique().max() == 1  # the one title every row carries
    np.testing.assert_allclose(titles["score"], texts["score"], atol=1e-6)
    assert "store=False" in repr(cv.MaxSim(model, store=False))
    passages = pt.apply.generic(lambda df: df.assign(docno=df["docno"] + "%p0", text="protein gene cell"))
    assert len((dense >> passages >> cv.MaxSim(model))(TOPICS)) == 6


def test_a_store_refuses_docnos_it_does_not_hold_that_look_like_its_own(model, tmp_path):
    """npids reads 'd' + integer docnos as integers: 'd01' found d1's states, '01' found document '1'."""
    store = model.index(DOCS, tmp_path / "x.index").store
    for missing in (["d01"], ["D1"], ["z"], [1], ["d1", "d001"]):
        with pytest.raises(KeyError, match="not in TokenStore"):
            store.token_states(missing)
    numeric = model.index([{**d, "docno": str(i)} for i, d in enumerate(DOCS)], tmp_path / "n.index").store
    with pytest.raises(KeyError, match=r"e\.g\. \['00', '01'\]"):
        numeric.token_states(["00", "01", "1"])
    assert len(numeric.token_states(["0", "3", 1])) == 3
    scattered = [{**d, "docno": n} for d, n in zip(DOCS, ["7", "12", "300", "4983"])]  # rising: npids' InvIntStored
    stored = model.index(scattered, tmp_path / "s.index").store
    with pytest.raises(KeyError, match=r"e\.g\. \['04983'\]"):
        stored.token_states(["04983"])
    padded = [{**d, "docno": f"d{i:04d}"} for i, d in enumerate(DOCS)]  # InvIntSequenceMulti: 'd1' found 'd0001'
    with pytest.raises(KeyError, match="not in TokenStore"):
        model.index(padded, tmp_path / "p.index").store.token_states(["d1"])


def test_query_tokens_print_short(model, index):
    res = (model.retriever(index.path) % 1)(TOPICS[:1])
    assert repr(res["query_toks"].iloc[0]).startswith("QueryTokens(m=") and len(repr(res)) < 2000


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_retriever_num_results_must_be_a_positive_whole_number(model, index, bad):
    """0 gave a malformed row, -1 dropped the last document, 2.5 a TypeError (review 50-a)."""
    with pytest.raises(ValueError, match="num_results"):
        model.retriever(index.path, num_results=bad)


def test_store_false_never_reads_the_first_stages_index(model, index):
    """store=False with rows that carry no text read the index all the same (review 50-e); True is not a store."""
    with pytest.raises(ValueError, match="needs the documents' token states or text"):
        (model.retriever(index.path, num_results=2) >> cv.MaxSim(model, store=False))(TOPICS)
    with pytest.raises(ValueError, match="store=True: give the TokenStore"):
        cv.MaxSim(model, store=True)


def test_interop_details_of_review_50g(model, index):
    """The index object passes for its path; an explicit store lacking the rows' docnos names store=False;
    ScoreFusion shows its scorers and its input to pt.inspect, and a retriever outside retrievers= says so."""
    assert len(model.retriever(index, num_results=2)(TOPICS)) == 4
    passages = pt.apply.generic(lambda df: df.assign(docno=df["docno"] + "%p0", text="protein gene cell"))
    with pytest.raises(KeyError, match="the rows carry text: store=False scores it"):
        (model.retriever(index.path, num_results=2) >> passages >> cv.MaxSim(model, store=index.store))(TOPICS)
    fusion = cv.ScoreFusion({"dense": model.retriever(index.path), "maxsim": cv.MaxSim(model)}, weights={"maxsim": 1})
    assert pt.inspect.transformer_inputs(fusion) == [["qid", "docno", "query"]]
    assert list(pt.inspect.subtransformers(fusion)) == ["dense", "maxsim"]
    with pytest.raises(ValueError, match=r"goes in retrievers=\('dense',\)"):
        (model.retriever(index.path, num_results=2) >> fusion)(TOPICS)
