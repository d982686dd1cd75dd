"""gaoya peer: ``gaoya.minhash.MinHashStringIndex`` (32-bit MinHash + banded LSH in Rust).

Built as ``MinHashStringIndex(hash_size=32, jaccard_threshold=t, num_bands=None,
band_size=None, num_hashes=num_perm)``: gaoya then picks bands x rows from the S-curve
(42 x 3 = 126 hashes for 0.5/128).  Documents go in as our shingles through the index's token
path, ``index.minhash_index.insert_tokens(id, tokens)`` and
``.query_tokens_return_similarity(tokens)`` -- exactly what the wrapper's own ``insert_document``
/ ``query`` call when ``analyzer`` is a callable.  (Its built-in ``analyzer='word',
ngram_range=(5, 5)`` gives every document of fewer than 5 words an empty feature set, so all
such documents would match each other at similarity 1.0.)  ``query`` already drops candidates
whose estimated Jaccard is under the threshold; the check is repeated here for clarity.
Streaming: query, verify, insert.
"""

from __future__ import annotations

import time

from gaoya.minhash import MinHashStringIndex

from ._common import Pairs, Phases, main


def detect(sets: list[list[str]], threshold: float, num_perm: int) -> tuple[Pairs, Phases]:
    t0 = time.perf_counter()
    index = MinHashStringIndex(
        hash_size=32,
        jaccard_threshold=threshold,
        num_bands=None,
        band_size=None,
        num_hashes=num_perm,
    )
    native = index.minhash_index
    pairs: Pairs = []
    candidates = 0
    for i, shs in enumerate(sets):
        if not shs:
            continue
        for j, sim in native.query_tokens_return_similarity(shs):
            candidates += 1
            if sim >= threshold:
                pairs.append((j, i))
        native.insert_tokens(i, shs)
    t1 = time.perf_counter()
    return pairs, {
        "sketch_lsh_verify_s": t1 - t0,
        "candidates": candidates,
        "index": str(index).split(" size")[0],
    }


if __name__ == "__main__":
    main("gaoya_peer", detect)
