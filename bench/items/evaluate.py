"""Item mode's reference pipeline in memory, and its accuracy against ground truth.

The same core as a run (``neardup.core.items``): the records prepared, the model fitted on
them (``fit.py``), each item's keys looked up in an inverted index capped as the state's is,
every candidate scored, the graph of matches cut into clusters (``communities.py``). Then
pairwise precision, recall and F1 of "same cluster" against the truth (over the labelled
pairs alone for corpora whose truth is a set of labelled pairs), and the work: keys and
candidates an item, candidate recall (the share of the true pairs that share a key), the
largest cluster.

    python -m bench.items.evaluate --corpus listings --n 20000 --seed 1
    python -m bench.items.evaluate --corpus walmart-amazon
    python -m bench.items.evaluate --corpus febrl3 --json
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from importlib.resources import files
from math import comb
from pathlib import Path
from typing import Any

from neardup.core.exceptions import BadRecordError
from neardup.core.items.blocking import Blocker
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import Scorer
from neardup.state.items import item_doc_id
from neardup.streams.detection.communities import components, cut_component
from neardup.streams.detection.item_fit import fit_model

from . import febrl, listings, public

__all__ = ["across_scores", "evaluate", "labelled_scores", "load_corpus", "main", "pair_scores"]

SCHEMAS = Path(str(files("bench.items").joinpath("schemas")))
#: generated corpora: with coordinates or without ("-plain"), with a description and a price
LISTINGS = ("listings", "listings-plain", "listings-rich", "listings-rich-plain")


def load_corpus(name: str, count: int, seed: int) -> tuple[str, list[tuple[dict[str, Any], str]]]:
    """(schema TOML text, [(record, entity)]) of a named corpus."""
    if name in LISTINGS:
        flavour = "plain" if name.endswith("-plain") else "coords"
        rich = name.startswith("listings-rich")
        made = listings.generate(count, seed, flavour, rich)
        schema = "listings-rich.toml" if rich else "listings.toml"
        return (SCHEMAS / schema).read_text(), [(x.record, x.entity) for x in made]
    if name in febrl.CORPORA:
        return (SCHEMAS / "febrl.toml").read_text(), febrl.load(name)
    if name in public.CORPORA:
        return public.schema_text(name), public.load(name)
    known = LISTINGS + febrl.CORPORA + public.CORPORA
    raise SystemExit(f"unknown corpus {name!r}: {', '.join(known)}")


def clusters_of(
    count: int,
    edges: Sequence[tuple[int, int, float]],
    schema: ItemSchema,
    sources: Sequence[str | None],
    names: Sequence[int] | None = None,
) -> list[int]:
    """A cluster label per item, from the graph of matches (``communities.py``); ``names``:
    each item's node in a run (its doc id), which breaks ties between equal scores as a
    run does (two copies matching one record, where ``link = "across"`` takes one)."""
    name = list(range(count)) if names is None else list(names)
    linked = schema.link == "across" or bool(schema.once)

    def sources_of(node: int) -> set[str | None]:
        source = sources[at[node]]
        return {source} if schema.listed_once(source) else set()

    at = {node: index for index, node in enumerate(name)}
    graph: dict[int, dict[int, float]] = defaultdict(dict)
    for a, b, score in edges:
        x, y = name[a], name[b]
        graph[x][y] = graph[y][x] = max(score, graph[x].get(y, 0.0))
    labels = list(range(count))
    for component in components(sorted(graph), graph):
        cut = cut_component(
            component,
            graph,
            sources_of=sources_of if linked else None,
            every_source=schema.link == "across",
        )
        for group in cut:
            for member in group:
                labels[at[member]] = at[group[0]]
    return labels


def pair_scores(predicted: Sequence[int], truth: Sequence[str]) -> dict[str, float]:
    """Pairwise precision, recall and F1 of co-membership (cluster label per item)."""
    both = Counter(zip(predicted, truth, strict=True))
    together = sum(comb(n, 2) for n in both.values())
    predicted_pairs = sum(comb(n, 2) for n in Counter(predicted).values())
    true_pairs = sum(comb(n, 2) for n in Counter(truth).values())
    return _scores(together, predicted_pairs, true_pairs)


def across_scores(
    predicted: Sequence[int | str], truth: Sequence[str], sources: Sequence[str | None]
) -> dict[str, float]:
    """Pairwise precision, recall and F1 over the pairs of records of two different
    sources alone (a mapping's truth: ``public.mapped``)."""

    def pairs(keys: Sequence[object]) -> int:
        by_source: dict[object, Counter[str | None]] = defaultdict(Counter)
        for key, source in zip(keys, sources, strict=True):
            by_source[key][source] += 1
        return sum(
            (sum(held.values()) ** 2 - sum(n * n for n in held.values())) // 2
            for held in by_source.values()
        )

    together = pairs(list(zip(predicted, truth, strict=True)))
    return _scores(together, pairs(predicted), pairs(truth))


def labelled_scores(
    cluster_of: Mapping[str, Any], labelled: Mapping[tuple[str, str], bool]
) -> dict[str, float]:
    """Precision, recall and F1 of "same cluster" over labelled pairs alone (record ids,
    each pair given in both orders), for corpora whose truth is a set of labelled pairs."""
    tp = fp = fn = 0
    for (a, b), match in labelled.items():
        if a > b or a not in cluster_of or b not in cluster_of:
            continue
        together = cluster_of[a] == cluster_of[b]
        tp += together and match
        fp += together and not match
        fn += match and not together
    return _scores(tp, tp + fp, tp + fn)


def _scores(together: int, predicted_pairs: int, true_pairs: int) -> dict[str, float]:
    precision = together / predicted_pairs if predicted_pairs else 1.0
    recall = together / true_pairs if true_pairs else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_pairs": true_pairs,
        "predicted_pairs": predicted_pairs,
    }


def evaluate(
    schema: ItemSchema,
    corpus: Sequence[tuple[dict[str, Any], str]],
    labelled: Mapping[tuple[str, str], bool] | None = None,
    cap: int = 1000,
    across: bool = False,
) -> dict[str, Any]:
    """Run the reference pipeline over the corpus and score it (``across``: on the pairs
    across sources too, under ``across_sources``)."""
    started = time.perf_counter()
    preparer = ItemPreparer(schema)
    items: list[PreparedItem] = []
    truth: list[str] = []
    dead: Counter[str] = Counter()
    for record, entity in corpus:
        try:
            items.append(preparer.prepare(record))
        except BadRecordError as error:
            dead[error.reason] += 1
            continue
        truth.append(entity)
    prepared = time.perf_counter()
    model = fit_model(schema, items)
    fitted = time.perf_counter()
    scorer, blocker = Scorer(schema, model), Blocker(schema, model)
    features = [scorer.features(item.values) for item in items]
    keys = [blocker.keys(item.values) for item in items]
    index: dict[int, list[int]] = defaultdict(list)
    edges: list[tuple[int, int, float]] = []
    candidates = 0
    verified_true = 0
    for at, item in enumerate(items):
        shared = Counter(other for key in keys[at][1] for other in index.get(key, ()))
        least = min(model.least_shared, max(shared.values(), default=0))
        met = {other for other, count in shared.items() if count >= least}
        candidates += len(met)
        verified_true += sum(1 for other in met if truth[other] == truth[at])
        for other in sorted(met):
            if not schema.compares(items[other].source, item.source):
                continue
            match = scorer.verify(features[at], features[other])
            if match is not None and match.matched:
                edges.append((other, at, match.score))
        for key in keys[at][0]:
            if len(index[key]) < cap:
                index[key].append(at)
    sources = [item.source for item in items]
    labels = clusters_of(len(items), edges, schema, sources, [item_doc_id(i.id) for i in items])
    detected = time.perf_counter()
    scores: dict[str, Any]
    if labelled is None:
        scores = pair_scores(labels, truth)
    else:
        scores = labelled_scores({item.id: labels[at] for at, item in enumerate(items)}, labelled)
    if across:
        scores = {**scores, "across_sources": across_scores(labels, truth, sources)}
    sizes = Counter(labels)
    return {
        "items": len(items),
        "dead_letters": dict(dead),
        **scores,
        "keys_per_item": sum(len(k[0]) for k in keys) / max(1, len(items)),
        "candidates_per_item": candidates / max(1, len(items)),
        "candidate_recall": _candidate_recall(keys, truth),
        "verified_recall": verified_true / max(1, _true_pairs(truth)),
        "least_shared": model.least_shared,
        "edges": len(edges),
        "largest_cluster": max(sizes.values(), default=0),
        "largest_true_cluster": max(Counter(truth).values(), default=0),
        "prior_odds_bits": round(model.prior, 2),
        "seconds": {
            "prepare": round(prepared - started, 2),
            "fit": round(fitted - prepared, 2),
            "detect": round(detected - fitted, 2),
        },
    }


def _true_pairs(truth: Sequence[str]) -> int:
    return sum(comb(count, 2) for count in Counter(truth).values())


def _candidate_recall(keys: Sequence[tuple[list[int], list[int]]], truth: Sequence[str]) -> float:
    """The share of the true pairs that share a key (probes of one, posted keys of the
    other)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for at, entity in enumerate(truth):
        groups[entity].append(at)
    pairs = met = 0
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                pairs += 1
                met += bool(set(keys[a][1]) & set(keys[b][0]) or set(keys[b][1]) & set(keys[a][0]))
    return met / pairs if pairs else 1.0


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.items.evaluate", description=__doc__)
    parser.add_argument("--corpus", default="listings")
    parser.add_argument("--n", type=int, default=20000, help="items (generated corpora)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cap", type=int, default=1000, help="posting list cap")
    parser.add_argument("--threshold", type=float, help="override the schema's threshold")
    parser.add_argument("--schema", type=Path, help="a schema TOML instead of the corpus's")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    text, corpus = load_corpus(args.corpus, args.n, args.seed)
    if args.schema is not None:
        text = args.schema.read_text()
    if args.threshold is not None:
        text = f"threshold = {args.threshold}\n{text}"
    labelled = public.labelled_pairs(args.corpus) if args.corpus in public.CORPORA else None
    across = args.corpus in public.CORPORA and public.mapped(args.corpus)
    result = evaluate(ItemSchema.from_toml(text), corpus, labelled, args.cap, across)
    result["corpus"] = args.corpus
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        shown = f"{value:.4f}" if isinstance(value, float) else value
        print(f"{key:>24}: {shown}")


if __name__ == "__main__":
    main()
