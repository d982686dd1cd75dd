"""datasketch peer: ``MinHash`` (default scheme "affine32", default SHA-1 based 32-bit hash)
and ``MinHashLSH(threshold, num_perm)`` (bands/rows chosen by datasketch: 25 x 5 for 0.5/128).

Streaming (the default): each page is sketched alone, ``MinHash(num_perm=..., scheme=
"affine32", permutations=...)`` then ``update_batch`` of its encoded shingles (the
permutations are drawn once and shared, as datasketch's documentation suggests for many
MinHashes: the same values as drawing them anew for each page); then ``lsh.query``, each
candidate verified by ``MinHash.jaccard >= threshold`` against the stored sketch, and
``lsh.insert``.  ``--bulk``: ``MinHash.bulk`` over every page's shingles (datasketch's fast
path for many sets; the same values), then the same query / verify / insert loop.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from datasketch import MinHash, MinHashLSH

from ._common import Pairs, Phases, SketchStreamer, main


class Streaming(SketchStreamer[MinHash]):
    def __init__(self, threshold: float, num_perm: int) -> None:
        super().__init__(threshold)
        self.num_perm = num_perm
        self.permutations = MinHash(num_perm=num_perm).permutations
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)

    def sketch(self, shingles: list[str]) -> MinHash:
        m = MinHash(num_perm=self.num_perm, scheme="affine32", permutations=self.permutations)
        m.update_batch([s.encode() for s in shingles])
        return m

    def query(self, sketch: MinHash) -> Iterable[int]:
        found: list[int] = self.lsh.query(sketch)
        return found

    def jaccard(self, sketch: MinHash, other: MinHash) -> float:
        return float(sketch.jaccard(other))

    def insert(self, key: int, sketch: MinHash) -> None:
        self.lsh.insert(key, sketch, check_duplication=False)

    def shape(self) -> tuple[int, int]:
        return self.lsh.b, self.lsh.r


def detect(sets: list[list[str]], threshold: float, num_perm: int) -> tuple[Pairs, Phases]:
    t0 = time.perf_counter()
    sketches = MinHash.bulk([[s.encode() for s in shs] for shs in sets], num_perm=num_perm)
    t1 = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    pairs: Pairs = []
    candidates = 0
    for i, m in enumerate(sketches):
        if not sets[i]:
            continue  # an empty set's sketch would match every other empty one
        for j in lsh.query(m):
            candidates += 1
            if m.jaccard(sketches[j]) >= threshold:
                pairs.append((j, i))
        lsh.insert(i, m, check_duplication=False)
    t2 = time.perf_counter()
    return pairs, {
        "sketch_s": t1 - t0,
        "lsh_verify_s": t2 - t1,
        "candidates": candidates,
        "bands": lsh.b,
        "rows": lsh.r,
    }


if __name__ == "__main__":
    main("datasketch", Streaming, detect)
