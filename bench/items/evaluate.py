"""Item mode's reference pipeline in memory, and its accuracy against ground truth.

One item at a time, as the stream will: prepare it, look its probes up in an inverted index
(each list capped: a full list takes no more items, and every item it turns away is counted,
with the true pairs it may lose), verify every candidate, join matches with union-find, post
the item's keys. Then pairwise precision, recall and F1 of "same cluster" against the truth,
and the work: keys, probes and candidates per item, the largest cluster.

    python -m bench.items.evaluate --corpus listings --n 20000 --seed 1
    python -m bench.items.evaluate --corpus listings-plain --n 20000 --seed 1
    python -m bench.items.evaluate --corpus listings-rich --n 20000 --seed 1
    python -m bench.items.evaluate --corpus febrl3

``--missed`` also checks the key guarantee on the truth: every true pair whose score reaches
the threshold must share a key (probes of one, posted keys of the other).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from importlib.resources import files
from math import comb
from pathlib import Path
from typing import Any

from neardup.core.exceptions import BadRecordError
from neardup.core.items.prepare import ItemPreparer, PreparedItem, verify
from neardup.core.items.schema import ItemSchema

from . import febrl, listings

__all__ = ["evaluate", "load_corpus", "main", "pair_scores"]

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
    raise SystemExit(f"unknown corpus {name!r}: {', '.join(LISTINGS + febrl.CORPORA)}")


class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def pair_scores(predicted: Sequence[int], truth: Sequence[str]) -> dict[str, float]:
    """Pairwise precision, recall and F1 of co-membership (cluster label per item)."""
    both = Counter(zip(predicted, truth, strict=True))
    together = sum(comb(n, 2) for n in both.values())
    predicted_pairs = sum(comb(n, 2) for n in Counter(predicted).values())
    true_pairs = sum(comb(n, 2) for n in Counter(truth).values())
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
    cap: int = 1000,
    missed: bool = False,
    rules: bool = False,
) -> dict[str, Any]:
    """Run the reference pipeline over the corpus and score it."""
    preparer = ItemPreparer(schema)
    index: dict[int, list[int]] = defaultdict(list)
    turned_away: Counter[int] = Counter()
    items: list[PreparedItem] = []
    truth: list[str] = []
    clusters = _UnionFind()
    dead: Counter[str] = Counter()
    candidates = verified_pairs = 0
    by_rule: Counter[int] | None = Counter() if rules else None
    rule_keys: Counter[int] = Counter()
    started = time.perf_counter()
    for record, entity in corpus:
        try:
            item = preparer.prepare(record)
        except BadRecordError as error:
            dead[error.reason] += 1
            continue
        me = clusters.add()
        items.append(item)
        truth.append(entity)
        found = {other for key in item.probes for other in index.get(key, ())}
        candidates += len(found)
        if by_rule is not None:
            for number, (posted, probes) in enumerate(preparer.keymaker.keys_by_rule(item.values)):
                rule_keys[number] += len(set(posted))
                by_rule[number] += len({o for key in probes for o in index.get(key, ())})
        for other in found:
            if verify(item, items[other], schema).matched:
                verified_pairs += 1
                clusters.union(me, other)
        for key in item.keys:
            posting = index[key]
            if len(posting) < cap:
                posting.append(me)
            else:
                turned_away[key] += 1
    elapsed = time.perf_counter() - started
    labels = [clusters.find(i) for i in range(len(items))]
    sizes = Counter(labels)
    result: dict[str, Any] = {
        "items": len(items),
        "dead_letters": dict(dead),
        "plan": preparer.plan.describe(schema),
        **pair_scores(labels, truth),
        "keys_per_item": sum(len(i.keys) for i in items) / max(1, len(items)),
        "probes_per_item": sum(len(i.probes) for i in items) / max(1, len(items)),
        "candidates_per_item": candidates / max(1, len(items)),
        "matches": verified_pairs,
        "largest_cluster": max(sizes.values(), default=0),
        "largest_true_cluster": max(Counter(truth).values(), default=0),
        "stop_keys": len(turned_away),
        "postings_turned_away": sum(turned_away.values()),
        "encoded_bytes_per_item": sum(len(i.encode()) for i in items) / max(1, len(items)),
        "seconds": round(elapsed, 1),
    }
    if by_rule is not None:
        names = preparer.plan.describe(schema).split(" | ")
        result["by_rule"] = {
            name: {
                "keys": rule_keys[n] / max(1, len(items)),
                "candidates": by_rule[n] / max(1, len(items)),
            }
            for n, name in enumerate(names)
        }
    if missed:
        result["missed_by_keys"] = _missed_by_keys(schema, items, truth)
    return result


def _missed_by_keys(schema: ItemSchema, items: list[PreparedItem], truth: list[str]) -> int:
    """True pairs that reach the threshold but share no key (the guarantee says: none)."""
    groups: dict[str, list[PreparedItem]] = defaultdict(list)
    for item, entity in zip(items, truth, strict=True):
        groups[entity].append(item)
    lost = 0
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if verify(a, b, schema).matched and not (
                    set(a.probes) & set(b.keys) and set(b.probes) & set(a.keys)
                ):
                    lost += 1
    return lost


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.items.evaluate", description=__doc__)
    parser.add_argument("--corpus", default="listings")
    parser.add_argument("--n", type=int, default=20000, help="items (generated corpora)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cap", type=int, default=1000, help="posting list cap")
    parser.add_argument("--threshold", type=float, help="override the schema's threshold")
    parser.add_argument("--schema", type=Path, help="a schema TOML instead of the corpus's")
    parser.add_argument("--missed", action="store_true", help="check the key guarantee")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rules", action="store_true", help="keys and candidates per rule")
    args = parser.parse_args(argv)
    text, corpus = load_corpus(args.corpus, args.n, args.seed)
    if args.schema is not None:
        text = args.schema.read_text()
    if args.threshold is not None:
        text = f"threshold = {args.threshold}\n{text}"
    result = evaluate(ItemSchema.from_toml(text), corpus, args.cap, args.missed, args.rules)
    result["corpus"] = args.corpus
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        shown = f"{value:.4f}" if isinstance(value, float) else value
        print(f"{key:>24}: {shown}")


if __name__ == "__main__":
    main()
