"""Query latency of containment queries on a built state: ``neardup query --containment``,
in process, one query at a time (as a user or the service asks).

The queries are excerpts of the corpus's own pages (a contiguous 5 to 60 % of a page's
words, 2 % of them substituted), so each has a source in the state; reported: queries,
p50/p99 milliseconds, and the share whose source came back first.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from neardup.core import Page, Preparer, page_from_json
from neardup.state import State
from neardup.streams.detection import find_containing

__all__ = ["containment_query_latency"]


def _excerpts(corpus: Path, count: int, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    pages = [page_from_json(line) for line in corpus.read_bytes().splitlines()]
    long = [p for p in pages if len(p.content.split()) >= 300]
    chosen: list[tuple[str, str]] = []
    for index in rng.choice(len(long), size=min(count, len(long)), replace=False).tolist():
        words = long[index].content.split()
        size = max(20, round(len(words) * rng.uniform(0.05, 0.6)))
        first = int(rng.integers(len(words) - size + 1))
        part = words[first : first + size]
        for at in rng.choice(len(part), size=len(part) // 50, replace=False).tolist():
            part[at] = "edited"
        chosen.append((long[index].url, " ".join(part)))
    return chosen


def containment_query_latency(
    state_dir: Path, corpus: Path, count: int = 300, seed: int = 1
) -> dict[str, Any]:
    queries = _excerpts(corpus, count, seed)
    seconds: list[float] = []
    first = 0
    with State.open(state_dir) as state:
        preparer = Preparer(state.settings)
        for url, text in queries:
            started = time.perf_counter()
            doc = preparer.prepare([Page("query:", text)], query=True)[0]
            found = find_containing(state.view(), doc, state.settings, 0.5)
            seconds.append(time.perf_counter() - started)
            first += bool(found) and found[0].doc.url == url
    ms = np.array(seconds) * 1000
    return {
        "queries": len(queries),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "source_first": round(first / max(len(queries), 1), 3),
    }


if __name__ == "__main__":
    import sys

    print(json.dumps(containment_query_latency(Path(sys.argv[1]), Path(sys.argv[2]))))
