"""How many pairs each rule of the key plan brings, as a corpus grows:
``python -m bench.items.rule_pairs --corpus listings --n 100000``.

For each rule: its distinct keys over the corpus, the most items one key holds, and the
pairs of items sharing one of its keys (the sum over keys of n(n-1)/2, an item; a pair
sharing several keys counts once for each), the candidates it would bring without the
others. A rule whose figure grows with N makes time per item grow with the state.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence

from neardup.core.items.prepare import ItemPreparer
from neardup.core.items.schema import ItemSchema

from .evaluate import LISTINGS, load_corpus

__all__ = ["main", "rule_pairs"]


def rule_pairs(schema_text: str, records: Sequence[dict[str, object]]) -> list[dict[str, object]]:
    """Per rule of the schema's plan: its atoms, keys, largest key and pairs an item."""
    schema = ItemSchema.from_toml(schema_text)
    preparer = ItemPreparer(schema)
    names = [spec.name for spec in schema.fields]
    counts: list[Counter[int]] = [Counter() for _ in preparer.plan.rules]
    for record in records:
        item = preparer.prepare(record)
        for held, (posted, _) in zip(
            counts, preparer.keymaker.keys_by_rule(item.values), strict=True
        ):
            held.update(set(posted))
    return [
        {
            "rule": [(names[field], floor) for field, floor, _ in rule.atoms],
            "keys": len(held),
            "largest_key": max(held.values(), default=0),
            "pairs_per_item": round(
                sum(n * (n - 1) // 2 for n in held.values()) / max(1, len(records)), 2
            ),
        }
        for rule, held in zip(preparer.plan.rules, counts, strict=True)
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="listings", choices=LISTINGS)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    schema_text, corpus = load_corpus(args.corpus, args.n, args.seed)
    for line in rule_pairs(schema_text, [record for record, _ in corpus]):
        print(line)


if __name__ == "__main__":
    main()
