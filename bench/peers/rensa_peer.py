"""rensa peer: ``RMinHash`` (R-MinHash, 32-bit values) and ``RMinHashLSH``.

APIs used: ``RMinHash.from_token_sets(token_sets, num_perm, seed)`` (bulk sketching),
``RMinHashLSH(threshold, num_perm, num_bands)``, ``.query(minhash)``, ``.insert(key, minhash)``,
``RMinHash.jaccard(other)``.  rensa does not choose bands itself; 32 bands of 4 rows (128 =
32 x 4, S-curve midpoint (1/32)**(1/4) = 0.42) is the divisor of 128 whose curve fits 0.5 best
(16 x 8 puts it at 0.71, losing recall).  Streaming, as the datasketch peer: query, verify by
``jaccard >= threshold``, insert.
"""

from __future__ import annotations

import time

from rensa import RMinHash, RMinHashLSH

from ._common import Pairs, Phases, main

SEED = 42
NUM_BANDS = 32


def detect(sets: list[list[str]], threshold: float, num_perm: int) -> tuple[Pairs, Phases]:
    t0 = time.perf_counter()
    sketches = RMinHash.from_token_sets(sets, num_perm=num_perm, seed=SEED)
    t1 = time.perf_counter()
    bands = NUM_BANDS if num_perm % NUM_BANDS == 0 else num_perm // 4
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
    main("rensa_peer", detect)
