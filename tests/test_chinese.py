"""Chinese BM25: jieba segmentation, PISA-safe terms, and the CapRetrieval zh BM25 row."""

from dataclasses import dataclass

import pandas as pd
import pytest

from pyterrier_compverify.chinese import chinese_terms, index_term, segment
from pyterrier_compverify.evaluate import bm25_index, bm25_pipeline

pytest.importorskip("jieba")


def test_segmentation_modes_and_terms():
    assert segment("一只黑色的小狗在草地上奔跑", "accurate") == [
        "一只",
        "黑色",
        "的",
        "小狗",
        "在",
        "草地",
        "上",
        "奔跑",
    ]
    assert set(segment("中华人民共和国", "search")) >= {"中华", "人民", "共和国", "中华人民共和国"}
    assert segment("，。！", "char") == []
    assert chinese_terms("小狗 Dog") == f"{index_term('小狗')} dog"
    assert all(t.isascii() and t.isalnum() for t in chinese_terms("两个人在海边放风筝。").split())
    with pytest.raises(ValueError, match="mode"):
        segment("小狗", "words")


@dataclass
class TinyChinese:
    name: str = "tiny-zh"
    language: str = "zh"

    def corpus_iter(self):
        texts = ["一只黑色的小狗在草地上奔跑", "两个人在海边放风筝", "一个穿红衣服的女孩在吃冰淇淋"]
        return ({"docno": str(i), "text": t} for i, t in enumerate(texts))


def test_chinese_bm25_finds_the_matching_passage(tmp_path):
    pisa = bm25_index(TinyChinese(), tmp_path / "bm25.pisa")
    assert (tmp_path / "bm25-jieba-search.pisa").exists()
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["海边的风筝", "小狗"]})
    run = bm25_pipeline(pisa, num_results=3, language="zh")(topics)
    top = run[run["rank"] == 0].set_index("qid")["docno"].to_dict()
    assert top == {"1": "1", "2": "0"}
    assert run["query"].tolist()[0] in ("海边的风筝", "小狗")  # the original query is restored


@pytest.mark.integration
def test_capretrieval_zh_bm25_row(data_dir, tmp_path):
    import pyterrier as pt
    from ir_measures import nDCG

    from pyterrier_compverify.datasets import load_collection

    collection = load_collection("compverify/capretrieval/zh")
    assert collection.language == "zh"
    pisa = bm25_index(collection, tmp_path / "bm25.pisa")
    topics = collection.topics()
    result = pt.Experiment([bm25_pipeline(pisa, language="zh")], topics, collection.qrels(), [nDCG @ 10])
    assert result["nDCG@10"][0] == pytest.approx(0.7015, abs=0.002)  # experiments/results/chinese-bm25.md
