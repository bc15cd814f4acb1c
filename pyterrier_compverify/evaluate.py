"""``compverify evaluate``: ``pt.Experiment`` of BM25, dense, and dense's top ``depth`` reranked by each chosen
reranker, on one dataset; the tables are written with the command that made them.

The indices and pipelines are in :mod:`.pipelines`, the tables in :mod:`.reporting`, the command's options in
:mod:`.evaluate_command`.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

NAMED_RERANKERS = {
    "maxsim": "MaxSim",
    "mapverifier": "MapVerifier",
    "mapcnn": "MapCNN",
    "weightedmaxsim": "WeightedMaxSim",
}
PACKAGED_HEADS = {"mapverifier": "F4", "mapcnn": "F3", "weightedmaxsim": "F1w"}  # named rerankers with weights
REFERENCE = "ST.encode + exact cosine (reference)"  # the --reference system
FUSION_LABEL = "(Dense, BM25)@{depth} >> WeightedMaxSim + BM25"  # the --fusion system: the union of both top k
# multiple-test corrections (statsmodels' multipletests methods)
CORRECTIONS = ("bonferroni", "sidak", "holm-sidak", "holm", "simes-hochberg", "hommel", "fdr_bh", "fdr_by")


def run_evaluation(
    dataset_id: str,
    *,
    model: str | None = None,
    max_length: int | None = None,
    batch_size: int | None = None,
    device: str | None = None,
    depth: int = 100,
    rerankers: Sequence[str] = ("maxsim",),
    index_dir: str | os.PathLike | None = None,
    out_dir: str | os.PathLike | None = "compverify-results",
    baseline: str | None = "Dense",
    correction: str | None = None,
    reference: bool = False,
    fusion: bool | str = False,
    fusion_depth: int | None = None,
    fusion_wordnet: float = 0.0,
    fusion_cross_encoder: str | None = None,
    fusion_cross_encoder_weight: float | None = None,
    fusion_cross_encoder_dtype: str | None = None,
    overwrite: bool = False,
    verbose: bool = True,
):
    """``pt.Experiment`` on ``dataset_id``; writes ``out_dir/evaluate-<name>.{md,json}`` unless ``out_dir`` is None.
    ``rerankers``: ``maxsim``, ``mapverifier``, ``mapcnn``, ``weightedmaxsim`` or a trained verifier folder, each
    reranking dense's top ``depth`` from the TokenStore (MaxSim also BM25's; a verifier over another or a fine-tuned
    encoder from a store of its own, built once under ``index_dir``). ``max_length`` None: the encoder's
    default. ``fusion``: also run :func:`~.pipelines.fusion_pipeline` over dense's and BM25's top ``fusion_depth``
    (None: 300) with the packaged WeightedMaxSim (True) or the F1w head in a folder; ``fusion_wordnet``: the same
    fusion with :class:`~.wordnet_coverage.WordNetCoverage` at that weight beside it (0: none; English only; the
    ``[negatives]`` extra); ``fusion_cross_encoder``: a cross-encoder (name or folder) that then reads that fusion's
    top 30 (:func:`~.pipelines.cross_encoder_stage`, weight ``fusion_cross_encoder_weight``, None: 0.25), one more
    system; ``fusion_cross_encoder_dtype``: ``"fp32"`` (also None, in which the results' figures were made) or
    ``"bf16"`` (about 2x faster on a CPU with bf16 units, ranking nearly alike; its label says "(bf16)").
    ``correction``: a multiple-test correction of the p-values against ``baseline`` over the systems (one of
    ``CORRECTIONS``, e.g. ``"holm"``; ``reporting.with_correction`` adds ``<measure> p-value corrected`` and the
    tables mark those).
    ``index_dir`` None: ``$COMPVERIFY_CACHE`` or ``~/.cache/pyterrier_compverify``. Tables already in ``out_dir``
    are refused (FileExistsError, before any model loads) unless ``overwrite``. Returns the experiment's frame
    (measures first); ``attrs["written"]`` names the .md file written."""
    started = time.time()
    from .encoder import check_count

    depth = check_count(depth, 100, "depth")
    rerankers = check_rerankers(rerankers)
    fusion_depth = check_fusion(
        fusion,
        fusion_depth,
        fusion_wordnet,
        fusion_cross_encoder,
        fusion_cross_encoder_weight,
        fusion_cross_encoder_dtype,
    )
    from .encoder import check_dtype
    from .pipelines import CROSS_ENCODER_WEIGHT

    ce_weight = fusion_cross_encoder_weight if fusion_cross_encoder_weight is not None else CROSS_ENCODER_WEIGHT
    ce_weight = ce_weight if fusion_cross_encoder else 0.0
    ce_dtype = "fp32" if fusion_cross_encoder_dtype is None else check_dtype(fusion_cross_encoder_dtype)
    check_baseline(baseline, rerankers, depth=depth, reference=reference, fusion_depth=fusion_depth,
                   fusion_wordnet=fusion_wordnet, fusion_cross_encoder=ce_weight,
                   fusion_cross_encoder_dtype=ce_dtype)  # fmt: skip
    check_correction(correction, baseline)
    collection = open_collection(dataset_id)
    if fusion_wordnet and getattr(collection, "language", "en") != "en":
        raise ValueError(f"--fusion-wordnet reads English words; {dataset_id} is {collection.language}: leave it out")
    stem = None if out_dir is None else Path(out_dir).expanduser() / f"evaluate-{collection.name}"
    if stem is not None:
        from .reporting import refuse_overwrite

        refuse_overwrite(stem, overwrite, FileExistsError)
    topics, qrels = judged_topics(collection)  # before the corpus is encoded: a corpus-only id has none

    import pandas as pd
    import pyterrier as pt

    from .encoder import DEFAULT_MODEL, TokenEncoder
    from .pipelines import (
        DEFAULT_INDEX_DIR,
        build_indices,
        fusion_pipeline,
        plain_dense_run,
        standard_pipelines,
        token_store,
    )
    from .reporting import MEASURES, evaluation_markdown, with_correction, write_table

    if fusion_cross_encoder:  # loaded (or refused in one line) before the corpus is encoded
        from .cross_encoder import CrossEncoderScorer

        cross_encoder = CrossEncoderScorer(
            os.fspath(fusion_cross_encoder), device=device, dtype=ce_dtype, verbose=verbose
        )
    encoder = TokenEncoder(
        model or DEFAULT_MODEL, max_length=max_length, batch_size=batch_size, device=device, verbose=False
    )
    check_heads(rerankers, fusion, encoder)  # before the corpus is encoded
    indices = build_indices(collection, encoder, index_dir or DEFAULT_INDEX_DIR, verbose=verbose)

    def store_for(own):  # a verifier's own (e.g. fine-tuned) encoder reads a store of its own
        return token_store(collection, own, index_dir or DEFAULT_INDEX_DIR, verbose=verbose)

    scorers = build_rerankers(rerankers, encoder, indices, store_for=store_for, verbose=verbose)  # a bar each
    systems = standard_pipelines(indices, encoder, depth=depth, rerankers=scorers)
    if fusion_depth:
        from .datasets.collection import CorpusText
        from .verifier import WeightedMaxSim

        head = WeightedMaxSim(fusion_head(fusion), encoder=encoder, store=indices.store, verbose=verbose)
        if fusion_wordnet or fusion_cross_encoder:  # one pool, scored once, fused without and with the others
            from .fusion import fuse
            from .pipelines import FUSION_WEIGHTS, cross_encoder_stage

            texts = CorpusText(collection)
            pool = fusion_pipeline(indices, encoder, depth=fusion_depth, weighted=head, wordnet=fusion_wordnet,
                                   texts=texts, features=True)(topics)  # fmt: skip
            for weight in sorted({0.0, fusion_wordnet}):
                weights = {**FUSION_WEIGHTS, **({"wordnet": weight} if weight else {})}
                fused = fuse(pool, weights).drop(columns=[c for c in pool.columns if c in (*FUSION_WEIGHTS, "wordnet")])
                systems[fusion_label(fusion_depth, weight)] = fused
            if fusion_cross_encoder:  # over the last: with WordNet where it is given
                stage = cross_encoder_stage(cross_encoder, texts, weight=ce_weight)
                systems[fusion_label(fusion_depth, fusion_wordnet, ce_weight, ce_dtype)] = stage(fused)
        else:
            systems[fusion_label(fusion_depth)] = fusion_pipeline(indices, encoder, depth=fusion_depth, weighted=head)
    if reference:
        systems[REFERENCE] = plain_dense_run(collection, encoder, topics)
    runs = {name: system if isinstance(system, pd.DataFrame) else system(topics) for name, system in systems.items()}
    names = list(runs)
    measures = [str(m) for m in MEASURES + collection.extra_measures]
    results = pt.Experiment(
        list(runs.values()),
        topics,
        qrels,
        eval_metrics=MEASURES + collection.extra_measures,
        names=names,
        baseline=None if baseline is None else names.index(baseline),
        round=4,
        verbose=verbose,
    )
    if correction is not None:
        results = with_correction(results, correction)
    results = results[["name", *measures, *[c for c in results.columns if c not in ("name", *measures)]]]
    results.attrs["correction"] = correction
    if stem is not None:
        markdown = evaluation_markdown(results, measures, runs, topics, qrels, collection.query_types())
        try:
            write_table(results, stem, dataset_id, encoder, time.time() - started, markdown, overwrite=overwrite)
        except OSError:  # a full disk, another run's tables: the results are not lost with the files
            print(markdown)
            raise
        results.attrs["written"] = f"{stem}.md"
    return results


def check_rerankers(names: Sequence[str]) -> list[str]:
    """The reranker names, checked before any model is loaded: each is one of ``NAMED_RERANKERS`` or a folder.

    >>> check_rerankers(["maxsim", "mapcnn"])
    ['maxsim', 'mapcnn']
    """
    if isinstance(names, str):
        raise TypeError(f"rerankers must be a list of names, not the string {names!r}: e.g. {names.split(',')!r}")
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValueError("no reranker given: choose from " + ", ".join(NAMED_RERANKERS) + " or a verifier folder")
    for name in names:
        if name not in NAMED_RERANKERS and not Path(name).expanduser().is_dir():
            raise FileNotFoundError(
                f"reranker {name!r} is neither one of {', '.join(NAMED_RERANKERS)} nor a trained verifier folder"
            )
    return names


def fusion_label(depth: int, wordnet: float = 0.0, cross_encoder: float = 0.0, cross_encoder_dtype="fp32") -> str:
    """The name of the ``--fusion`` system in the tables; a cross-encoder run in bf16 says so.

    >>> fusion_label(300, 0.5), fusion_label(300, 0.5, 0.25)[-34:], fusion_label(300, 0, 1, "bf16")[-25:]
    ('(Dense, BM25)@300 >> WeightedMaxSim + BM25 + 0.5 WordNet', '+ 0.5 WordNet >> 0.25 CrossEncoder', \
' >> 1 CrossEncoder (bf16)')
    """
    label = FUSION_LABEL.format(depth=depth) + (f" + {wordnet:g} WordNet" if wordnet else "")
    precision = "" if cross_encoder_dtype == "fp32" else f" ({cross_encoder_dtype})"
    return label + (f" >> {cross_encoder:g} CrossEncoder{precision}" if cross_encoder else "")


def check_fusion(
    fusion: bool | str,
    depth: int | None,
    wordnet: float = 0.0,
    cross_encoder: str | None = None,
    cross_encoder_weight: float | None = None,
    cross_encoder_dtype: str | None = None,
) -> int | None:
    """The depth of the ``fusion`` system (None when it is off), checked before any model is loaded: ``fusion``
    is False, True (the packaged head) or an existing folder; a ``depth``, a ``wordnet`` weight or a
    ``cross_encoder`` needs ``fusion``, the WordNet weight is a number >= 0 whose scorer can load (the
    ``[negatives]`` extra), a ``cross_encoder_weight`` needs a ``cross_encoder`` and is a number >= 0, a
    ``cross_encoder_dtype`` needs a ``cross_encoder`` and is one :func:`~.encoder.check_dtype` takes.

    >>> check_fusion(True, None), check_fusion(False, None)
    (300, None)
    >>> check_fusion(False, 200)
    Traceback (most recent call last):
    ValueError: fusion_depth has no effect without fusion
    >>> check_fusion(True, None, -1)
    Traceback (most recent call last):
    ValueError: fusion_wordnet (the WordNet weight) must be a finite number >= 0, not -1
    >>> check_fusion(True, 0)
    Traceback (most recent call last):
    ValueError: fusion_depth must be at least 1, got 0
    """
    from .encoder import check_count
    from .pipelines import FUSION_DEPTH

    if isinstance(fusion, str) and not (fusion.strip() and Path(fusion).expanduser().is_dir()):
        raise FileNotFoundError(f"fusion head {fusion!r} is not a folder: give a trained F1w (WeightedMaxSim) folder")
    from .fusion import check_weight

    wordnet = check_weight(wordnet, name="fusion_wordnet (the WordNet weight)")
    cross_encoder = os.fspath(cross_encoder) if isinstance(cross_encoder, os.PathLike) else cross_encoder
    if cross_encoder is not None and not (isinstance(cross_encoder, str) and cross_encoder.strip()):
        raise ValueError(f"fusion_cross_encoder must be a cross-encoder's name or folder, not {cross_encoder!r}")
    if cross_encoder and Path(cross_encoder).expanduser().is_file():
        raise NotADirectoryError(f"fusion_cross_encoder {cross_encoder!r} is a file: give the model's folder")
    if cross_encoder_weight is not None:
        if not check_weight(cross_encoder_weight, name="fusion_cross_encoder_weight"):
            raise ValueError("fusion_cross_encoder_weight 0 leaves the cross-encoder out: give a weight > 0")
        if not cross_encoder:
            raise ValueError("fusion_cross_encoder_weight has no effect without fusion_cross_encoder")
    if cross_encoder_dtype is not None:
        from .encoder import check_dtype

        try:
            check_dtype(cross_encoder_dtype)
        except ValueError as error:
            raise ValueError(f"fusion_cross_encoder_dtype: {error}") from None
        if not cross_encoder:
            raise ValueError("fusion_cross_encoder_dtype has no effect without fusion_cross_encoder")
    if not fusion:
        checked = (
            ("fusion_depth", depth),
            ("fusion_wordnet", wordnet or None),
            ("fusion_cross_encoder", cross_encoder),
        )
        for name, value in checked:
            if value is not None:
                raise ValueError(f"{name} has no effect without fusion")
        return None
    depth = check_count(depth, FUSION_DEPTH, "fusion_depth")
    if wordnet:
        from .negatives.wordnet import load_wordnet

        load_wordnet()  # the [negatives] extra, named in one line before any model loads
    return depth


def fusion_head(fusion: bool | str) -> str:
    """The folder of the fusion's F1w head: the packaged one for True, else ``fusion``."""
    from .verifier import default_verifier_path

    return default_verifier_path("F1w") if fusion is True else str(fusion)


def check_heads(rerankers: Sequence[str], fusion: bool | str, encoder) -> None:
    """Refuse, before the corpus is encoded, a packaged head (``PACKAGED_HEADS``) or the fusion's head that was
    trained over another encoder, or a fusion folder that holds no F1w head."""
    from .verifier import Verifier, default_verifier_path

    heads = [Verifier(default_verifier_path(PACKAGED_HEADS[n])) for n in rerankers if n in PACKAGED_HEADS]
    if fusion:
        heads.append(Verifier(fusion_head(fusion)))
        if heads[-1].meta["head"] != "F1w":
            raise ValueError(f"fusion head {fusion!r} holds a {heads[-1].meta['head']} head, not F1w (WeightedMaxSim)")
    for head in heads:
        head.load_encoder(encoder=encoder)


def reranker_label(name: str) -> str:
    """The label of a reranker name in the systems' names: ``MaxSim`` for ``maxsim``, a folder as given."""
    return NAMED_RERANKERS.get(name, name)


def check_baseline(
    baseline: str | None,
    rerankers: Sequence[str],
    *,
    depth: int,
    reference: bool = False,
    fusion_depth: int | None = None,
    fusion_wordnet: float = 0.0,
    fusion_cross_encoder: float = 0.0,
    fusion_cross_encoder_dtype: str = "fp32",
) -> None:
    """Refuse a ``baseline`` that names none of the systems (the significance tests would be dropped silently);
    None: no significance tests. ``fusion_depth``: the depth of the ``--fusion`` system, None when it is off;
    ``fusion_wordnet``: its WordNet weight; ``fusion_cross_encoder``: the cross-encoder's weight (0: none), run in
    ``fusion_cross_encoder_dtype``.

    >>> check_baseline("Dense >> MaxSim@100", ["maxsim"], depth=100)
    >>> check_baseline("(Dense, BM25)@300 >> WeightedMaxSim + BM25", ["maxsim"], depth=100, fusion_depth=300)
    >>> check_baseline("Dense >> MaxSim", ["maxsim"], depth=100)
    Traceback (most recent call last):
    ValueError: baseline 'Dense >> MaxSim' is none of the systems: BM25, Dense, BM25 >> MaxSim@100, Dense >> MaxSim@100
    """
    labels = [reranker_label(name) for name in rerankers]
    names = ["BM25", "Dense", *([f"BM25 >> MaxSim@{depth}"] if "MaxSim" in labels else [])]
    names += [f"Dense >> {label}@{depth}" for label in labels]
    names += [REFERENCE] if reference else []
    names += [fusion_label(fusion_depth)] if fusion_depth else []
    names += [fusion_label(fusion_depth, fusion_wordnet)] if fusion_depth and fusion_wordnet else []
    names += (
        [fusion_label(fusion_depth, fusion_wordnet, fusion_cross_encoder, fusion_cross_encoder_dtype)]
        if fusion_depth and fusion_cross_encoder
        else []
    )
    if baseline is not None and baseline not in names:
        raise ValueError(f"baseline {baseline!r} is none of the systems: {', '.join(names)}")


def check_correction(correction: str | None, baseline: str | None) -> None:
    """Refuse a ``correction`` that statsmodels' ``multipletests`` does not know, or one without a ``baseline`` to
    test against.

    >>> check_correction("holm", "Dense")
    >>> check_correction("holmes", "Dense")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: correction 'holmes' is none of: bonferroni, sidak, holm-sidak, holm, ..., fdr_by
    >>> check_correction("holm", None)
    Traceback (most recent call last):
    ValueError: a correction needs a baseline: the p-values it corrects are against the baseline
    """
    if correction is None:
        return
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} is none of: {', '.join(CORRECTIONS)}")
    if baseline is None:
        raise ValueError("a correction needs a baseline: the p-values it corrects are against the baseline")


def build_rerankers(names: Sequence[str], encoder, indices, *, store_for=None, verbose: bool = False) -> dict:
    """Label -> reranker: ``MaxSim`` over ``encoder``, the packaged ``MapVerifier`` / ``MapCNN`` /
    ``WeightedMaxSim`` (over ``encoder`` too: its max length), or ``cv.Verifier(folder).reranker(store=...)``
    (labelled by the folder), each reading the TokenStore of ``indices``; except a verifier over another encoder
    (e.g. one it fine-tuned), which reranks with its own encoder, at ``encoder``'s max length and batch size, from
    the store ``store_for(its encoder)`` gives (without ``store_for`` it is refused). ``verbose``: each shows a
    per-query progress bar."""
    import pyterrier_compverify as cv

    rerankers = {}
    for name in names:
        if name == "maxsim":
            rerankers["MaxSim"] = cv.MaxSim(encoder, store=indices.store, verbose=verbose)
        elif name in NAMED_RERANKERS:  # packaged heads over this encoder (check_heads): its length, device, batch
            reranker = getattr(cv, reranker_label(name))(encoder=encoder, store=indices.store, verbose=verbose)
            rerankers[reranker_label(name)] = reranker
        else:
            verifier = cv.Verifier(name)
            own = encoder if store_for is None else verifier.encoder_for(encoder)  # None: another one is refused
            store = indices.store if own is encoder else store_for(own)
            rerankers[name] = verifier.reranker(encoder=own, store=store, verbose=verbose)
    return rerankers


def open_collection(dataset_id: str):
    """:func:`~.datasets.load_collection`, checked at once: an unknown id raises a KeyError with a hint."""
    from .datasets import load_collection

    collection = load_collection(dataset_id)
    try:
        collection.dataset  # noqa: B018 (opening it is the check)
    except KeyError:
        raise KeyError(f"unknown dataset {dataset_id!r}{dataset_hint(dataset_id)}") from None
    return collection


def judged_topics(collection):
    """The collection's topics and qrels, or a ValueError naming its sub-ids that have them (an id such as
    ``irds:beir/scifact`` is a corpus only; its test split ``irds:beir/scifact/test`` has queries); a download
    that fails for want of a network is a FileNotFoundError naming ``--data-dir``."""
    from .datasets.collection import network_hint

    try:
        with network_hint(getattr(collection, "dataset_id", "the collection")):  # test collections have no id
            return collection.topics(), collection.qrels()
    except NotImplementedError:
        import ir_datasets

        name = collection.dataset_id.removeprefix("irds:")
        splits = [f"irds:{k}" for k in ir_datasets.registry if k.startswith(name + "/")]
        hint = f"; evaluate one of its splits: {', '.join(splits[:6])}" if splits else ""
        raise ValueError(f"{collection.dataset_id} has no queries and relevance judgements{hint}") from None


def dataset_hint(dataset_id: str) -> str:
    """``; did you mean irds:...?`` for the nearest ir_datasets id, else a pointer to the id format.

    >>> dataset_hint("cranfield")
    '; did you mean irds:cranfield?'
    """
    import difflib

    import ir_datasets

    known = list(ir_datasets.registry)
    name = dataset_id.removeprefix("irds:")
    close = [name] if name in known else difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if close:
        return f"; did you mean irds:{close[0]}?"
    return "; ids look like irds:cranfield, irds:beir/scifact/test or compverify/capretrieval/en"


_MOVED = {  # name -> the module it moved to when this module was split
    **dict.fromkeys(
        (
            "DEFAULT_INDEX_DIR",
            "Indices",
            "bm25_index",
            "bm25_pipeline",
            "build_indices",
            "plain_dense_run",
            "standard_pipelines",
            "strip_punctuation",
        ),
        "pipelines",
    ),
    **dict.fromkeys(("MEASURES", "by_query_type", "error_view", "summary_table", "write_table"), "reporting"),
    "quiet_native_output": "native_output",
    **dict.fromkeys(("register", "evaluate_command"), "evaluate_command"),
}


def __getattr__(name: str):
    """Names that lived here before the split stay importable from here."""
    if name in _MOVED:
        return getattr(importlib.import_module(f"{__package__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
