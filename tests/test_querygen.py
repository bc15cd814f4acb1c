"""Training-query generation: offline KW, LLM backends (fake endpoint, tiny local model), leakage filter,
validation split, the command; pair training with in-batch negatives."""

import json
import random

import pandas as pd
import pytest

from pyterrier_compverify.chat import ChatClient
from pyterrier_compverify.querygen import (
    COLUMNS,
    KeywordQueries,
    LLMQueries,
    drop_leaking,
    generate_queries,
    label_human,
    max_rouge_l,
    rouge_l,
    sibling_captions,
    validation_split,
)
from pyterrier_compverify.querygen.command import make_generator, read_passages, run_querygen
from pyterrier_compverify.querygen.leakage import lcs_length, tokens

pytest.importorskip("spacy")

CAPTIONS = pd.DataFrame(
    {
        "docno": ["c1", "c2", "c3"],
        "text": [
            "A black dog runs on the grass.",
            "Two people are flying a kite at the beach.",
            "A man riding a horse through a park with a waterfall.",
        ],
    }
)


@pytest.fixture(scope="module")
def keywords():
    return KeywordQueries()


def test_keyword_queries_are_keywords_phrases_and_hypernyms(keywords):
    queries = dict(keywords.queries("A black dog runs on the grass."))
    assert queries["dog"] == queries["black dog"] == queries["grass"] == "keyword"
    assert queries["dog running"] == "phrase"
    assert queries["canine"] == "hypernym"  # dog.n.01 -> canine.n.02
    assert "the" not in queries and "a" not in queries
    kite = dict(keywords.queries("Two people are flying a kite at the beach."))
    assert kite["flying kite"] == "phrase" and "plaything" in kite  # the toy sense, not the cheque
    assert keywords.queries("") == [] and keywords.queries("Yes.") == []


def test_keyword_queries_respect_the_cap_and_are_unique(keywords):
    long = "The image shows a gas meter on the wall with pipes, a power adapter, a red valve and a small clock."
    capped = KeywordQueries(keywords.nlp, max_queries=5).queries(long)
    assert len(capped) == 5
    full = keywords.queries(long)
    assert len({q for q, _ in full}) == len(full) <= 14
    assert ("measuring instrument", "hypernym") in full  # the compound "gas meter" has its own WordNet entry


def test_generate_queries_labels_every_row(keywords):
    frame = generate_queries(CAPTIONS, keywords, verbose=False)
    assert list(frame.columns) == COLUMNS
    assert set(frame["docno"]) == {"c1", "c2", "c3"}
    assert (frame["strategy"] == "KW").all() and (frame["backend"] == "offline:spacy+wordnet").all()
    assert set(frame["kind"]) <= {"keyword", "phrase", "hypernym"}
    with pytest.raises(ValueError, match="docno"):
        generate_queries(CAPTIONS.drop(columns="docno"), keywords)


def fake_endpoint(reply: str, calls: list):
    def transport(url, payload, headers):
        calls.append((url, payload, headers))
        return {"choices": [{"message": {"content": reply}}]}

    return transport


def test_llm_queries_through_an_openai_compatible_endpoint():
    calls = []
    client = ChatClient("fake-model", base_url="http://llm.test/v1", api_key="k", transport=fake_endpoint(
        '{"queries": ["a dog running on grass", "what is the black dog doing?", "a dog running on grass"]}', calls
    ))  # fmt: skip
    sm = LLMQueries("SM", client)
    frame = generate_queries(CAPTIONS.head(1), sm, verbose=False)
    assert frame["query"].tolist() == ["a dog running on grass", "what is the black dog doing?"]  # deduplicated
    assert set(frame["backend"]) == {"llm:fake-model"} and set(frame["kind"]) == {"summary"}
    url, payload, headers = calls[0]
    assert url == "http://llm.test/v1/chat/completions" and headers == {"Authorization": "Bearer k"}
    assert payload["model"] == "fake-model" and "about 7" in payload["messages"][1]["content"]
    assert "A black dog runs" in payload["messages"][1]["content"]
    kw = LLMQueries("KW", ChatClient("m", transport=fake_endpoint("1. dog\n2. grass\n", [])))
    assert kw.queries("x") == [("dog", "keyword"), ("grass", "keyword")]
    with pytest.raises(ValueError, match="strategy"):
        LLMQueries("XX", client)
    broken = ChatClient("m", base_url="http://x.test", transport=lambda *a: {"error": "quota"})
    with pytest.raises(ValueError, match="unexpected reply"):
        LLMQueries("SM", broken).queries("x")


def test_llm_queries_from_a_local_hugging_face_model(tmp_path):
    """A tiny random GPT-2 saved here stands in for a local text-generation model: the wiring, not the text."""
    from transformers import BertTokenizerFast, GPT2Config, GPT2LMHeadModel

    from pyterrier_compverify.querygen import hf_chat

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "dog", "grass", "queries", "write", "a", "the", "."]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)})
    GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_embd=16, n_layer=1, n_head=2, n_positions=512)).save_pretrained(
        tmp_path
    )
    tokenizer.save_pretrained(tmp_path)
    generator = LLMQueries("KW", hf_chat(str(tmp_path), max_new_tokens=8, device="cpu"))
    assert generator.backend == f"hf:{tmp_path}"
    queries = generator.queries("A black dog runs on the grass.")
    assert all(kind == "keyword" and isinstance(q, str) and q for q, kind in queries)


def test_rouge_l_and_the_bounded_search_agree_with_brute_force():
    assert rouge_l("a b c d", "a b c d") == 1.0 and rouge_l("", "a") == 0.0
    assert lcs_length(list("abcbdab"), list("bdcaba")) == 4
    rng = random.Random(0)
    words = "a dog cat runs on the grass park red blue sits near".split()
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 9))) for _ in range(40)]
    test = [" ".join(rng.choices(words, k=rng.randint(1, 9))) for _ in range(30)]
    brute = [max(rouge_l(t, s) for s in test) for t in texts]
    assert max_rouge_l(texts, test).tolist() == pytest.approx(brute)
    keep = drop_leaking(texts, test, threshold=0.6)
    assert keep.tolist() == [b <= 0.6 for b in brute]
    assert tokens("It's a Dog!") == ["it", "s", "a", "dog"]


def test_human_sm_queries_and_validation_split():
    captions = pd.DataFrame(
        {
            "docno": ["1", "2", "3", "4"],
            "text": ["a dog", "a brown dog", "a cat", "a cat"],
            "image": ["i", "i", "j", "j"],
        }
    )
    sm = label_human(sibling_captions(captions), captions, source="coco-sibling-caption")
    assert sm.values.tolist() == [
        ["1", "a dog", "a brown dog", "SM", "sibling caption", "human:coco-sibling-caption"],
        ["2", "a brown dog", "a dog", "SM", "sibling caption", "human:coco-sibling-caption"],
    ]  # identical captions are not each other's query
    queries = pd.DataFrame({"docno": [str(i % 100) for i in range(1000)], "query": [f"q{i}" for i in range(1000)]})
    train, valid = validation_split(queries, share=0.05, seed=1)
    assert valid["docno"].nunique() == 5 and len(valid) == 50 and len(train) == 950
    assert not set(train["docno"]) & set(valid["docno"])


def test_querygen_command(tmp_path, capsys):
    source = tmp_path / "passages.jsonl"
    CAPTIONS.rename(columns={"docno": "id"}).to_json(source, orient="records", lines=True)
    test = tmp_path / "test.csv"
    pd.DataFrame({"docno": ["t"], "text": ["A man riding a horse through a park with a big waterfall."]}).to_csv(test)
    train, valid = run_querygen(str(source), tmp_path / "q.jsonl", test=str(test), validation=0.34, seed=0)
    assert "3 passages, 1 dropped by the leakage filter" in capsys.readouterr().out
    written = [json.loads(line) for line in (tmp_path / "q.jsonl").read_text().splitlines()]
    held = [json.loads(line) for line in (tmp_path / "q.valid.jsonl").read_text().splitlines()]
    assert len(written) == len(train) and len(held) == len(valid) > 0
    assert {r["docno"] for r in written + held} == {"c1", "c2"}
    assert all(r["backend"] == "offline:spacy+wordnet" and r["strategy"] == "KW" for r in written)
    with pytest.raises(ValueError, match="SM needs"):
        make_generator("SM", "offline")
    with pytest.raises(ValueError, match="backend must be"):
        make_generator("KW", "gpt")
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"docno": ["1"], "body": ["x"]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="missing column"):
        read_passages(str(bad))
    rows = tmp_path / "rows.jsonl"  # a number as text crashed; id replaced docno where both were given
    rows.write_text('{"docno": "a", "id": "b", "text": 42}\n{"docno": "c", "id": "d", "text": "a dog"}\n')
    assert read_passages(str(rows))[["docno", "text"]].values.tolist() == [["a", "42"], ["c", "a dog"]]


def test_pair_training_with_in_batch_negatives(tmp_path, tiny_model_dir):
    import pyterrier_compverify as cv
    from pyterrier_compverify.training import EncoderTrainingConfig, train_encoder

    anchors = [f"cell {i}" for i in range(12)]
    pairs = pd.DataFrame({"anchor": anchors * 2, "positive": [f"a document about the {a}" for a in anchors] * 2})
    config = EncoderTrainingConfig(steps=2, batch_size=4, scale=100.0, max_length=16, no_duplicates=True)
    trained = train_encoder(pairs, tmp_path / "p", model=tiny_model_dir, config=config, verbose=False, device="cpu")
    assert trained.fingerprint != cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu").fingerprint
    with pytest.raises(ValueError, match="'positive'"):
        train_encoder(pairs.assign(positive=""), tmp_path / "q", model=tiny_model_dir, config=config, verbose=False)


def test_readers_expand_a_home_path_the_shell_left_alone(tmp_path, monkeypatch):
    """``--sentences=~/s.txt``: bash does not expand ``~`` after ``=``; it was looked up as a dataset id."""
    from pyterrier_compverify.negatives.command import read_sentences
    from pyterrier_compverify.querygen.command import read_passages

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "s.txt").write_text("one\ntwo\n")
    (tmp_path / "p.tsv").write_text("docno\ttext\nd1\ta dog\n")
    assert read_sentences("~/s.txt") == ["one", "two"]
    assert read_passages("~/p.tsv")[["docno", "text"]].values.tolist() == [["d1", "a dog"]]


def test_an_endpoints_errors_keep_its_message_and_content_parts_are_joined():
    import http.server
    import threading

    replies = {"/v1/missing/chat/completions": (404, '{"error": "model not found"}'),
               "/v1/proxy/chat/completions": (200, "<html>502 Bad Gateway</html>"),
               "/v1/parts/chat/completions": (200, json.dumps({"choices": [{"message": {"content": [
                   {"type": "text", "text": "red "}, {"type": "text", "text": "car"}]}}]}))}  # fmt: skip

    class Endpoint(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            code, body = replies[self.path]
            self.send_response(code)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/v1"
    try:
        with pytest.raises(ConnectionError, match="404.*model not found"):  # was only "HTTP Error 404: Not Found"
            ChatClient("m", base_url=f"{base}/missing").complete([])
        with pytest.raises(ValueError, match="did not reply with JSON: '<html>502"):  # was a bare JSONDecodeError
            ChatClient("m", base_url=f"{base}/proxy").complete([])
        assert ChatClient("m", base_url=f"{base}/parts").complete([]) == "red car"  # was the list of parts
    finally:
        server.shutdown()
