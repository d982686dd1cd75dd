"""datasketch peer: ``MinHash`` (default scheme "affine32", default SHA-1 based 32-bit hash)
and ``MinHashLSH(threshold, num_perm)`` (bands/rows chosen by datasketch: 25 x 5 for 0.5/128).

Streaming: each document queries the index of the earlier ones, its candidates are verified by
``MinHash.jaccard >= threshold``, then it is inserted.  Sketches are built with
``MinHash.bulk`` (datasketch's fast path for many sets; same values as one-by-one ``update``).
"""

from __future__ import annotations

import time

from datasketch import MinHash, MinHashLSH

from ._common import Pairs, Phases, main


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
    main("datasketch_peer", detect)
