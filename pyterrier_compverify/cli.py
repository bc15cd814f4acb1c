"""The ``compverify`` command."""

from __future__ import annotations

import argparse
import os

from .encoder import DEFAULT_MODEL


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODEL, help="hub name or local folder of the encoder")
    parser.add_argument("--device", default=None, help="torch device (default: auto)")
    parser.add_argument("--data-dir", default=None, help="local data folder (default: $COMPVERIFY_DATA)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="compverify", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="BM25 / dense / dense >> MaxSim on an embedded near-miss collection")
    _common(demo)
    demo.add_argument("--folder", default=None, help="where to write the collection and indices (default: temp)")

    ev = sub.add_parser("evaluate", help="pt.Experiment of BM25, dense and >> MaxSim on a dataset")
    _common(ev)
    ev.add_argument("dataset", help="e.g. irds:beir/scifact/test, irds:cranfield, compverify/capretrieval/en")
    ev.add_argument("--max-length", type=int, default=128)
    ev.add_argument("--batch-size", type=int, default=32)
    ev.add_argument("--depth", type=int, default=100, help="rerank depth")
    ev.add_argument("--index-dir", default=None, help="where indices are kept (default: $COMPVERIFY_CACHE)")
    ev.add_argument("--out-dir", default="experiments/results")
    ev.add_argument("--baseline", default="Dense", help="system name for significance tests")
    ev.add_argument("--reference", action="store_true", help="add a plain SentenceTransformer.encode run")

    nm = sub.add_parser("nearmiss", help="near-miss table (win rate, AUC, mean similarity) per category")
    _common(nm)
    nm.add_argument("--source", default="all", choices=["all", "sugarcrepe", "condaqa"])
    nm.add_argument("--scorers", default="pooled,maxsim", help="comma-separated: pooled, maxsim")
    nm.add_argument("--max-length", type=int, default=128)
    nm.add_argument("--limit", type=int, default=None, help="first N triplets per category (quick runs)")
    nm.add_argument("--out", default="experiments/results/nearmiss-baselines", help="output stem (.md/.json)")

    tv = sub.add_parser("train-verifier", help="train a verifier head (frozen or end-to-end) on triplet rows")
    _common(tv)
    tv.add_argument("rows", help=".jsonl/.csv/.tsv with anchor, positive, negative columns")
    tv.add_argument("out", help="artifact folder (checkpoints inside; a killed run resumes)")
    tv.add_argument(
        "--head", default="F4", choices=["Pooled", "F0", "F1", "F2", "F3", "F4"], help="Pooled, F0-F2: end-to-end only"
    )
    tv.add_argument("--mode", default="frozen", choices=["frozen", "end-to-end"])
    tv.add_argument("--steps", type=int, default=300)
    tv.add_argument("--batch-size", type=int, default=32)
    tv.add_argument("--head-lr", type=float, default=1e-4)
    tv.add_argument("--encoder-lr", type=float, default=1.5e-5)
    tv.add_argument("--seed", type=int, default=42)
    tv.add_argument("--max-length", type=int, default=128)

    ng = sub.add_parser("negatives", help="structural near-miss negatives (negation, binding, spatial, paraphrase)")
    _common(ng)
    ng.add_argument("out", help="output table, .csv or .jsonl (sentence1, sentence2, category, rule)")
    ng.add_argument(
        "--sentences",
        default="irds:beir/scifact/train",
        help="a text file (one sentence a line) or a dataset id whose documents are split into sentences",
    )
    ng.add_argument("--limit", type=int, default=None, help="at most N sentences")
    ng.add_argument("--categories", default="negation,binding,spatial,paraphrase")
    ng.add_argument("--all-edits", action="store_true", help="every edit, not one per category per sentence")
    ng.add_argument("--seed", type=int, default=0)

    te = sub.add_parser("train-encoder", help="fine-tune a bi-encoder on Model A's or Model B's rows")
    _common(te)
    te.add_argument("out", help="output folder (checkpoints inside; the model in OUT/final)")
    te.add_argument("--recipe", default="A", choices=["A", "B"])
    te.add_argument("--edits", default=None, help="structural edits from `compverify negatives` (recipe B)")
    te.add_argument("--share", type=float, default=0.14, help="structural share of recipe B's rows")
    te.add_argument("--positives", default="identity", choices=["identity", "paraphrase"])
    te.add_argument("--self-supervised", type=int, default=2000, help="title -> abstract pairs added to the rows")
    te.add_argument("--balanced", action="store_true", help="as many structural rows of each category")
    te.add_argument("--steps", type=int, default=500)
    te.add_argument("--batch-size", type=int, default=32)
    te.add_argument("--lr", type=float, default=2e-5)
    te.add_argument("--seed", type=int, default=42)

    qg = sub.add_parser("querygen", help="SM / KW training queries for passages (leakage filter, validation split)")
    _common(qg)
    qg.add_argument("passages", help=".jsonl/.csv/.tsv with docno (or id) and text, or a collection id")
    qg.add_argument("out", help="output .jsonl or .csv (validation queries go to OUT.valid.<suffix>)")
    qg.add_argument("--strategy", default="KW", choices=["SM", "KW"])
    qg.add_argument("--backend", default="offline", help="offline (KW only), openai:MODEL or hf:MODEL")
    qg.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    qg.add_argument("--test", default=None, help="test passages (file or collection id) for the leakage filter")
    qg.add_argument("--leakage", type=float, default=0.6, help="drop passages above this ROUGE-L to a test one")
    qg.add_argument("--validation", type=float, default=0.05, help="share of passages held out")
    qg.add_argument("--limit", type=int, default=None, help="first N passages")
    qg.add_argument("--seed", type=int, default=0)

    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from .datasets import setup_local_data

    if args.data_dir or os.environ.get("COMPVERIFY_DATA"):
        setup_local_data(args.data_dir)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(model=args.model, folder=args.folder, device=args.device)
    elif args.command == "evaluate":
        from .evaluate import DEFAULT_INDEX_DIR, run_evaluation

        results = run_evaluation(
            args.dataset,
            model=args.model,
            max_length=args.max_length,
            batch_size=args.batch_size,
            device=args.device,
            depth=args.depth,
            index_dir=args.index_dir or DEFAULT_INDEX_DIR,
            out_dir=args.out_dir,
            baseline=args.baseline,
            reference=args.reference,
        )
        print(results.to_markdown(index=False))
    elif args.command == "train-verifier":
        from .encoder import TokenEncoder
        from .training import VerifierTrainingConfig, train_verifier

        config = VerifierTrainingConfig(
            head=args.head,
            mode=args.mode,
            steps=args.steps,
            batch_size=args.batch_size,
            head_lr=args.head_lr,
            encoder_lr=args.encoder_lr,
            seed=args.seed,
        )
        encoder = TokenEncoder(args.model, max_length=args.max_length, device=args.device)
        verifier, log = train_verifier(args.rows, args.out, encoder=encoder, config=config)
        print(f"saved {verifier}; last loss {log[-1]['loss']:.4f}" if log else f"saved {verifier}")
    elif args.command == "train-encoder":
        import pandas as pd

        from .training import EncoderTrainingConfig, train_encoder
        from .training.data import recipe_rows

        edits = pd.read_json(args.edits, lines=True) if args.edits else None
        rows = recipe_rows(
            args.recipe,
            edits=edits,
            share=args.share,
            self_supervised=args.self_supervised,
            positives=args.positives,
            seed=args.seed,
        )
        config = EncoderTrainingConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed)
        model = train_encoder(rows, args.out, model=args.model, config=config, device=args.device)
        print(f"trained on {len(rows)} rows {rows['kind'].value_counts().to_dict()}; saved {model.model_name}")
    elif args.command == "negatives":
        from pathlib import Path

        from .negatives import RuleBasedGenerator, write_table
        from .training.data import corpus_sentences

        if Path(args.sentences).is_file():
            lines = Path(args.sentences).read_text(encoding="utf-8").splitlines()
            sentences = lines[: args.limit] if args.limit else lines
        else:
            sentences = corpus_sentences(args.sentences, limit=args.limit, seed=args.seed)
        generator = RuleBasedGenerator(tuple(args.categories.split(",")))
        result = generator.generate(sentences, one_per_category=not args.all_edits, seed=args.seed)
        write_table(result, args.out)
        counts = result.table["category"].value_counts().to_dict()
        print(f"{result.n_input} sentences -> {len(result.table)} edits {counts}; written to {args.out}")
        print("skipped: " + ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items())))
        rules = result.table["rule"].value_counts().to_dict()
        print("by rule: " + ", ".join(f"{k}: {v}" for k, v in rules.items()))
    elif args.command == "querygen":
        from .querygen.command import run_querygen

        run_querygen(
            args.passages,
            args.out,
            strategy=args.strategy,
            backend=args.backend,
            base_url=args.base_url,
            test=args.test,
            leakage=args.leakage,
            validation=args.validation,
            limit=args.limit,
            seed=args.seed,
        )
    elif args.command == "nearmiss":
        from .nearmiss_report import run_nearmiss

        run_nearmiss(
            source=args.source,
            scorers=args.scorers.split(","),
            model=args.model,
            max_length=args.max_length,
            device=args.device,
            limit=args.limit,
            out=args.out,
        )


if __name__ == "__main__":
    main()
