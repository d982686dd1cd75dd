"""One large entity: thousands of equal or near-equal records of one business, end to end.

Equal records (one name and address) must take time linear in their number (the copies
shortcut), and near-equal ones (case, punctuation, an extra word such as "LLC" or "Suite 4",
a typo in a long word, a trailing dot) must end as one cluster without re-reading the
cluster's edges every batch (thinning). The run is the embedded one a user makes (RocksDB,
records prepared in a child process), on a schema of the generated listings.

    python -m bench.items.entities --kind near --n 3000 --n 6000
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema
from neardup.streams.running.embedded import run
from neardup.streams.running.reports import cluster_lines

from .evaluate import SCHEMAS

__all__ = ["equal_records", "main", "measure", "near_equal_records"]


def equal_records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"e{i}",
            "name": "Acme Widget Workshop",
            "address": "1200 Main Street",
            "city": "Springfield",
            "source": f"s{i % 7}",
        }
        for i in range(n)
    ]


def near_equal_records(n: int, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "id": f"n{i}",
            "name": _varied(["Acme", "Widget", "Workshop"], ["Inc", "LLC", "(Downtown)"], rng),
            "address": _varied(["1200", "Main", "Street"], ["Suite 4", "Floor 2"], rng),
            "city": "Springfield",
            "source": f"s{i % 7}",
        }
        for i in range(n)
    ]


def _varied(words: list[str], extras: list[str], rng: random.Random) -> str:
    words = list(words)
    change = rng.randrange(6)
    if change == 0:
        words = [word.upper() for word in words]
    elif change == 1:
        words.append(rng.choice(extras))
    elif change == 2:
        at = rng.randrange(len(words))
        words[at] = _typo(words[at], rng)
    elif change == 3:
        words = [word.lower() for word in words]
    elif change == 4:
        words[-1] += "."
    return " ".join(words)


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 6:
        return word
    at = rng.randrange(1, len(word) - 1)
    return word[:at] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[at + 1 :]


def measure(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Seconds, clusters and the largest one of an embedded run over ``records``."""
    schema = ItemSchema.from_toml((SCHEMAS / "listings.toml").read_text())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "items.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
        with State.open(Path(folder) / "state") as state:
            check_or_store_schema(state.store, schema)
            started = time.perf_counter()
            summary = run(state, [str(path)], items=schema, prepare="process")
            seconds = time.perf_counter() - started
            sizes = [len(line["members"]) for line in cluster_lines(state)]
    return {
        "records": len(records),
        "seconds": round(seconds, 2),
        "clusters": len(sizes) + len(records) - sum(sizes),  # a single record is one too
        "largest_cluster": max(sizes, default=1),
        "pairs_verified_per_item": round(summary.pairs_estimated / max(1, len(records)), 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.items.entities", description=__doc__)
    parser.add_argument("--kind", choices=("equal", "near"), default="near")
    parser.add_argument("--n", type=int, action="append", help="records (repeatable)")
    args = parser.parse_args(argv)
    for n in args.n or [3000, 6000]:
        records = equal_records(n) if args.kind == "equal" else near_equal_records(n)
        print(json.dumps({"kind": args.kind, **measure(records)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
