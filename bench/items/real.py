"""Item mode measured through neardup itself: a corpus with ground truth run by
``neardup run --schema`` (in this process, on a RocksDB state in a temporary directory),
scored by pairwise precision, recall and F1 of "same cluster" against the truth.

    python -m bench.items.real --corpus listings --n 20000 --seed 1
    python -m bench.items.real --corpus listings-plain --n 20000 --seed 1
    python -m bench.items.real --corpus febrl3
    python -m bench.items.real --corpus walmart-amazon   # scored on its labelled pairs

Also: items a second, state bytes an item (compacted), candidates and pairs verified an item,
the stop keys met, the largest cluster. ``bench.items.evaluate`` is the in-memory reference
pipeline these must agree with.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema, item_doc_id
from neardup.streams.running.embedded import run

from . import public
from .evaluate import LISTINGS, labelled_scores, load_corpus, pair_scores
from .febrl import CORPORA

__all__ = ["main", "measure"]


def measure(
    schema_text: str,
    corpus: list[tuple[dict[str, Any], str]],
    labelled: Mapping[tuple[str, str], bool] | None = None,
) -> dict[str, Any]:
    """Run ``corpus`` (records with their entity) through item mode; what it found, scored
    against the entities, or against the labelled pairs alone when given."""
    schema = ItemSchema.from_toml(schema_text)
    with tempfile.TemporaryDirectory(prefix="neardup-items-") as scratch:
        inputs = Path(scratch) / "items.jsonl"
        inputs.write_text("".join(json.dumps(record) + "\n" for record, _ in corpus))
        with State.open(Path(scratch) / "state") as state:
            check_or_store_schema(state.store, schema)
            started = time.perf_counter()
            summary = run(state, [str(inputs)], items=schema, prepare="process")
            seconds = time.perf_counter() - started
            view = state.view()
            label = {}
            for root, members in view.clusters.members().items():
                for member in members:
                    label[member] = root
            ids = [str(record[schema.id_field]) for record, _ in corpus]
            predicted = [label.get(item_doc_id(item_id), item_doc_id(item_id)) for item_id in ids]
            largest = view.clusters.largest(1)
            stopped = view.counters.get("item_stop_keys_met")
            state.store.compact()
            disk = state.store.disk_bytes()
    if labelled is None:
        scores = pair_scores(predicted, [entity for _, entity in corpus])
    else:
        scores = labelled_scores(dict(zip(ids, predicted, strict=True)), labelled)
    items = summary.documents
    return {
        **{name: round(value, 4) for name, value in scores.items()},
        "items": items,
        "dead_letters": sum(summary.dead_letters.values()),
        "seconds": round(seconds, 2),
        "items_per_second": round(items / seconds, 1),
        "state_bytes_per_item": round(disk / items, 1),
        "candidates_per_item": round(summary.candidates / items, 2),
        "pairs_verified_per_item": round(summary.pairs_estimated / items, 2),
        "stop_keys_met": stopped,
        "largest_cluster": largest[0][1] if largest else 1,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", default="listings", choices=(*LISTINGS, *CORPORA, *public.CORPORA)
    )
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    schema_text, corpus = load_corpus(args.corpus, args.n, args.seed)
    report = {"corpus": args.corpus, "n": args.n, "seed": args.seed}
    labelled = public.labelled_pairs(args.corpus) if args.corpus in public.CORPORA else None
    print(json.dumps({**report, **measure(schema_text, corpus, labelled)}, indent=2))


if __name__ == "__main__":
    main()
