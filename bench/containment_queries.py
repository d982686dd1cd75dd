"""Query latency of containment queries on a built state: ``neardup query --containment``,
in process, one query at a time (as a user or the service asks).

The queries are excerpts of the corpus's own pages (a contiguous 5 to 60 % of the words of
a page's visible text, 2 % of them substituted), so each has a source in the state.
Reported: queries, p50/p99 milliseconds, the share whose answers include the source or a
copy of it (its cluster: the corpus copies pages, an excerpt of one is as much in its
copies, and an exact copy is listed as the first stored one), and the share whose first
answer does. Exact containment is not computed here: ``tests/accuracy`` scores that.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from neardup.core import Page, Preparer, page_from_json, to_canonical_text
from neardup.state import State
from neardup.streams.detection import find_containing

__all__ = ["containment_query_latency"]


def _excerpts(corpus: Path, count: int, seed: int) -> list[tuple[Page, str]]:
    rng = np.random.default_rng(seed)
    pages = [page_from_json(line) for line in corpus.read_bytes().splitlines()]
    long = [p for p in pages if len(p.content.split()) >= 300]  # markup included: roughly
    chosen: list[tuple[Page, str]] = []
    for index in rng.choice(len(long), size=min(count, len(long)), replace=False).tolist():
        words = to_canonical_text(long[index].content, long[index].content_type).split()
        size = max(20, round(len(words) * rng.uniform(0.05, 0.6)))
        first = int(rng.integers(len(words) - size + 1))
        part = words[first : first + size]
        for at in rng.choice(len(part), size=len(part) // 50, replace=False).tolist():
            part[at] = "edited"
        chosen.append((long[index], " ".join(part)))
    return chosen


def containment_query_latency(
    state_dir: Path, corpus: Path, count: int = 300, seed: int = 1
) -> dict[str, Any]:
    queries = _excerpts(corpus, count, seed)
    seconds: list[float] = []
    first = returned = 0
    with State.open(state_dir) as state:
        preparer = Preparer(state.settings)
        for source, text in queries:
            started = time.perf_counter()
            doc = preparer.prepare([Page("query:", text, content_type="text/plain")], query=True)[0]
            view = state.view()
            found = find_containing(view, doc, state.settings, 0.5)
            seconds.append(time.perf_counter() - started)
            home = view.clusters.find(preparer.prepare([source])[0].doc_id)  # as stored
            returned += any(m.cluster == home for m in found)
            first += bool(found) and found[0].cluster == home
    ms = np.array(seconds) * 1000
    return {
        "queries": len(queries),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "source_returned": round(returned / max(len(queries), 1), 3),
        "source_first": round(first / max(len(queries), 1), 3),
    }


if __name__ == "__main__":
    import sys

    print(json.dumps(containment_query_latency(Path(sys.argv[1]), Path(sys.argv[2]))))
