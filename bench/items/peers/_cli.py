"""The labelled corpora, the peers' scores, and the command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._child import CHILD_MEMORY_MB, CHILD_TIMEOUT, run_in_child, worker
from ._input import fields_from_schema


def load_labelled(
    name: str, n: int = 20000, seed: int = 1
) -> tuple[list[dict[str, Any]], list[Any], dict[str, str], bool]:
    """(records, fields, truth, link_across) of a corpus ``evaluate.load_corpus`` knows;
    febrl4's records get their file as ``source`` ("a", "b") and link across."""
    from ..evaluate import load_corpus

    schema_text, corpus = load_corpus(name, n, seed)
    from neardup.core.items.schema import ItemSchema

    schema = ItemSchema.from_toml(schema_text)
    fields = fields_from_schema(schema)
    records: list[dict[str, Any]] = []
    truth: dict[str, str] = {}
    for record, entity in corpus:
        item = dict(record)
        item["id"] = str(record[schema.id_field])
        if schema.source_field and schema.source_field in record:
            item["source"] = str(record[schema.source_field])
        records.append(item)
        truth[item["id"]] = entity
    link_across = schema.link == "across"
    if name == "febrl4":  # febrl.load puts file A's 5,000 records first, then file B's
        half = len(records) // 2
        for number, item in enumerate(records):
            item["source"] = "a" if number < half else "b"
        link_across = True
    return records, fields, truth, link_across


def score(
    labels: Mapping[str, str],
    truth: Mapping[str, str],
    labelled: Mapping[tuple[str, str], bool] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Pairwise precision, recall and F1 of "same cluster" (``evaluate.pair_scores``), or
    over the labelled pairs alone (``evaluate.labelled_scores``) when the corpus has them;
    with ``sources`` (a mapping's corpus), over the pairs across sources too."""
    from ..evaluate import across_scores, labelled_scores, pair_scores

    ids = list(truth)
    predicted = [labels[i] for i in ids]
    if labelled is not None:
        scores: dict[str, Any] = labelled_scores(labels, labelled)
    else:
        scores = pair_scores(predicted, [truth[i] for i in ids])  # type: ignore[arg-type]
    if sources is not None:
        found = across_scores(predicted, [truth[i] for i in ids], [sources[i] for i in ids])
        scores["across_sources"] = _rounded(found)
    out = _rounded(scores)
    out["largest_cluster"] = max(Counter(predicted).values(), default=0)
    out["largest_true_cluster"] = max(Counter(truth.values()).values(), default=0)
    return out


def _rounded(scores: Mapping[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in scores.items()}


def _summary(
    result: dict[str, Any],
    truth: Mapping[str, str],
    labelled: Mapping[tuple[str, str], bool] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    if not result.get("completed", True):
        return result
    out = {"seconds": result["seconds"], **score(result["labels"], truth, labelled, sources)}
    if "child" in result:
        out["peak_rss_mb"] = result["child"]["peak_rss_mb"]
        out["peak_group_mb"] = result["child"]["peak_group_mb"]
        out["child_wall_seconds"] = result["child"]["wall_seconds"]
    out["stage_seconds"] = result["stage_seconds"]
    if result["peer"] == "splink":
        out["pairs_predicted_above_floor"] = result["pairs_predicted_above_floor"]
        out["threshold_match_probability"] = result["config"]["threshold_match_probability"]
        config = result["config"]
        out["blocking_rules"] = [[r["key"], r["comparisons"]] for r in config["blocking_rules"]]
        prior = config["probability_two_random_records_match"]
        out["probability_two_random_records_match"] = {
            "value": prior["value"],
            "source": prior["source"],
            "failed": [a for a in prior["attempts"] if "failed" in a],
        }
        out["em_sessions"] = [
            {k: s[k] for k in ("key", "comparisons", "failed") if k in s}
            for s in config["em_sessions"]
        ]
        out["em_not_estimated"] = config["em_not_estimated"]
        out["comparisons"] = config["comparisons"]
        if "one_to_one" in result:
            out["one_to_one"] = {
                "clustering": "cluster_using_single_best_links",
                "seconds": result["one_to_one"]["seconds"],
                **score(result["one_to_one"]["labels"], truth, labelled, sources),
            }
    else:
        best = result["best"]
        out["threshold"] = result["threshold"]
        out["best"] = {
            "threshold": round(best["threshold"], 4),
            "expected_precision": round(best["expected_precision"], 4),
            "expected_recall": round(best["expected_recall"], 4),
            "seconds": best["seconds"],
            **score(best["labels"], truth, labelled, sources),
        }
        out["questions"] = result["questions"]
        out["pairs_scored"] = result["pairs_scored"]
        out["predicates"] = result["config"]["predicates"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from . import __doc__ as overview  # the package's: imported once it is complete

    assert overview is not None
    parser = argparse.ArgumentParser(
        prog="python -m bench.items.peers", description=overview.split("\n\n")[0]
    )
    parser.add_argument("--corpus", default="febrl3", help="febrl1..4, listings... (evaluate)")
    parser.add_argument("--n", type=int, default=20000, help="items (generated corpora)")
    parser.add_argument("--peer", choices=("splink", "dedupe", "both"), default="both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--labels", type=int, default=50, help="dedupe's oracle answers")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT, help="seconds a peer")
    parser.add_argument(
        "--memory-mb", type=float, default=CHILD_MEMORY_MB, help="MB (PSS) a peer may use"
    )
    parser.add_argument("--configs", type=Path, help="write each peer's config here as JSON")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker)
        return 0
    records, fields, truth, link_across = load_labelled(args.corpus, args.n, args.seed)
    from .. import public

    labelled = public.labelled_pairs(args.corpus) if args.corpus in public.CORPORA else None
    mapped = args.corpus in public.CORPORA and public.mapped(args.corpus)
    sources = {record["id"]: record["source"] for record in records} if mapped else None
    report: dict[str, Any] = {
        "corpus": args.corpus,
        "records": len(records),
        "true_entities": len(set(truth.values())),
        "link_across": link_across,
        "seed": args.seed,
    }
    peers = ("splink", "dedupe") if args.peer == "both" else (args.peer,)
    for peer in peers:
        options: dict[str, Any] = {"seed": args.seed, "link_across": link_across}
        if peer == "dedupe":
            options["labels"] = args.labels
        result = run_in_child(
            peer, records, fields, truth if peer == "dedupe" else None,
            timeout=args.timeout, memory_mb=args.memory_mb, **options,
        )  # fmt: skip
        report[peer] = _summary(result, truth, labelled, sources)
        if args.configs is not None and result.get("completed"):
            args.configs.mkdir(parents=True, exist_ok=True)
            path = args.configs / f"{args.corpus}.{peer}.json"
            path.write_text(json.dumps(result["config"], indent=1) + "\n")
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0 if all(report[p].get("completed", True) for p in peers) else 1


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
