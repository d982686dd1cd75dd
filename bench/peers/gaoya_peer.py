"""gaoya peer: ``gaoya.minhash.MinHashStringIndex`` (32-bit MinHash + banded LSH in Rust).

Built as ``MinHashStringIndex(hash_size=32, jaccard_threshold=t, num_bands=None,
band_size=None, num_hashes=num_perm)``: gaoya then picks bands x rows from the S-curve
(42 x 3 = 126 hashes for 0.5/128).  Documents go in as our shingles through the index's token
path -- exactly what the wrapper's own ``insert_document`` / ``query`` call when ``analyzer``
is a callable.  (Its built-in ``analyzer='word', ngram_range=(5, 5)`` gives every document of
fewer than 5 words an empty feature set, so all such documents would match each other at
similarity 1.0.)  gaoya's queries already drop candidates whose estimated Jaccard is under
the threshold; the check is repeated here for clarity.

Streaming (the default): per page, ``index.minhash_index.query_tokens_return_similarity(
shingles)`` then ``.insert_tokens(key, shingles)`` (gaoya keeps each page's sketch in the
index and has no call that queries and inserts one sketch: it sketches the page twice).
``--bulk``: ``par_bulk_insert_tokens`` of every page, then
``par_bulk_query_tokens_return_similarity`` of every page (gaoya's bulk calls, on its Rayon
thread pool: both cores); a page's matches other than itself are its pairs.
"""

from __future__ import annotations

import time

from gaoya.minhash import MinHashStringIndex

from ._common import Pairs, Phases, main


def _index(threshold: float, num_perm: int) -> MinHashStringIndex:
    return MinHashStringIndex(
        hash_size=32,
        jaccard_threshold=threshold,
        num_bands=None,
        band_size=None,
        num_hashes=num_perm,
    )


class Streaming:
    def __init__(self, threshold: float, num_perm: int) -> None:
        self.threshold = threshold
        self.index = _index(threshold, num_perm)
        self.native = self.index.minhash_index
        self.query_verify_s = self.insert_s = 0.0
        self.candidates = 0

    def add(self, key: int, shingles: list[str]) -> list[int]:
        t0 = time.perf_counter()
        found = []
        for j, sim in self.native.query_tokens_return_similarity(shingles):
            self.candidates += 1
            if sim >= self.threshold:
                found.append(j)
        t1 = time.perf_counter()
        self.native.insert_tokens(key, shingles)
        t2 = time.perf_counter()
        self.query_verify_s += t1 - t0
        self.insert_s += t2 - t1
        return found

    def phases(self) -> Phases:
        return {
            "sketch_query_verify_s": self.query_verify_s,
            "sketch_insert_s": self.insert_s,
            "candidates": self.candidates,
            "index": str(self.index).split(" size")[0],
        }


def detect(sets: list[list[str]], threshold: float, num_perm: int) -> tuple[Pairs, Phases]:
    t0 = time.perf_counter()
    index = _index(threshold, num_perm)
    native = index.minhash_index
    keys = [i for i, shs in enumerate(sets) if shs]  # empty sets would all match each other
    native.par_bulk_insert_tokens(keys, [sets[i] for i in keys])
    t1 = time.perf_counter()
    answers = native.par_bulk_query_tokens_return_similarity([sets[i] for i in keys])
    pairs: Pairs = []
    candidates = 0
    for i, found in zip(keys, answers, strict=True):
        for j, sim in found:
            if j < i:  # each pair once (a query finds the later pages too, and itself)
                candidates += 1
                if sim >= threshold:
                    pairs.append((j, i))
    t2 = time.perf_counter()
    return pairs, {
        "bulk_insert_s": t1 - t0,
        "bulk_query_verify_s": t2 - t1,
        "candidates": candidates,
        "index": str(index).split(" size")[0],
    }


if __name__ == "__main__":
    main("gaoya", Streaming, detect)
