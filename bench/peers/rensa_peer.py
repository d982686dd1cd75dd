"""rensa peer: ``RMinHash`` (R-MinHash, 32-bit values) and ``RMinHashLSH``.

rensa does not choose bands itself; 32 bands of 4 rows (128 = 32 x 4, S-curve midpoint
(1/32)**(1/4) = 0.42) is the divisor of 128 whose curve fits 0.5 best (16 x 8 puts it at
0.71, losing recall).

Streaming (the default): each page is sketched alone, ``RMinHash(num_perm, seed)`` then
``.update(shingles)``; ``RMinHashLSH.query(minhash)``, each candidate verified by
``RMinHash.jaccard(stored) >= threshold``, then ``.insert(key, minhash)``.  ``--bulk``:
``RMinHash.from_token_sets(every page's shingles, num_perm, seed)`` (rensa's bulk sketching;
the same values), then the same query / verify / insert loop.
"""

from __future__ import annotations

import time

from rensa import RMinHash, RMinHashLSH

from ._common import Pairs, Phases, main

SEED = 42
NUM_BANDS = 32


def _bands(num_perm: int) -> int:
    return NUM_BANDS if num_perm % NUM_BANDS == 0 else num_perm // 4


class Streaming:
    def __init__(self, threshold: float, num_perm: int) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.bands = _bands(num_perm)
        self.lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=self.bands)
        self.sketches: dict[int, RMinHash] = {}
        self.sketch_s = self.query_verify_s = self.insert_s = 0.0
        self.candidates = 0

    def add(self, key: int, shingles: list[str]) -> list[int]:
        t0 = time.perf_counter()
        m = RMinHash(num_perm=self.num_perm, seed=SEED)
        m.update(shingles)
        t1 = time.perf_counter()
        found = []
        for j in self.lsh.query(m):
            self.candidates += 1
            if m.jaccard(self.sketches[j]) >= self.threshold:
                found.append(j)
        t2 = time.perf_counter()
        self.lsh.insert(key, m)
        self.sketches[key] = m
        t3 = time.perf_counter()
        self.sketch_s += t1 - t0
        self.query_verify_s += t2 - t1
        self.insert_s += t3 - t2
        return found

    def phases(self) -> Phases:
        return {
            "sketch_s": self.sketch_s,
            "query_verify_s": self.query_verify_s,
            "insert_s": self.insert_s,
            "candidates": self.candidates,
            "bands": self.bands,
            "rows": self.num_perm // self.bands,
        }


def detect(sets: list[list[str]], threshold: float, num_perm: int) -> tuple[Pairs, Phases]:
    t0 = time.perf_counter()
    sketches = RMinHash.from_token_sets(sets, num_perm=num_perm, seed=SEED)
    t1 = time.perf_counter()
    bands = _bands(num_perm)
    lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=bands)
    pairs: Pairs = []
    candidates = 0
    for i, m in enumerate(sketches):
        if not sets[i]:
            continue
        for j in lsh.query(m):
            candidates += 1
            if m.jaccard(sketches[j]) >= threshold:
                pairs.append((j, i))
        lsh.insert(i, m)
    t2 = time.perf_counter()
    return pairs, {
        "sketch_s": t1 - t0,
        "lsh_verify_s": t2 - t1,
        "candidates": candidates,
        "bands": bands,
        "rows": num_perm // bands,
    }


if __name__ == "__main__":
    main("rensa", Streaming, detect)
