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
from collections.abc import Iterable

from rensa import RMinHash, RMinHashLSH

from ._common import Pairs, Phases, SketchStreamer, main

SEED = 42
NUM_BANDS = 32


def _bands(num_perm: int) -> int:
    return NUM_BANDS if num_perm % NUM_BANDS == 0 else num_perm // 4


class Streaming(SketchStreamer[RMinHash]):
    def __init__(self, threshold: float, num_perm: int) -> None:
        super().__init__(threshold)
        self.num_perm = num_perm
        self.bands = _bands(num_perm)
        self.lsh = RMinHashLSH(threshold=threshold, num_perm=num_perm, num_bands=self.bands)

    def sketch(self, shingles: list[str]) -> RMinHash:
        m = RMinHash(num_perm=self.num_perm, seed=SEED)
        m.update(shingles)
        return m

    def query(self, sketch: RMinHash) -> Iterable[int]:
        found: list[int] = self.lsh.query(sketch)
        return found

    def jaccard(self, sketch: RMinHash, other: RMinHash) -> float:
        return float(sketch.jaccard(other))

    def insert(self, key: int, sketch: RMinHash) -> None:
        self.lsh.insert(key, sketch)

    def shape(self) -> tuple[int, int]:
        return self.bands, self.num_perm // self.bands


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
