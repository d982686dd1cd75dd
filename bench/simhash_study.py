"""What a SimHash mode finds, by feature choice and Hamming distance k, against exact Jaccard.

``python -m bench.simhash_study --docs 20000 --seed 1 --out bench/results/simhash-study.json``

On a corpus of ``bench.corpus`` (the same as ``python -m bench``), with neardup's canonical
tokens and 5-shingle sets:

1. the truth: exact resemblance of every pair sharing a shingle (``bench.truth``);
2. per feature choice (``FEATURES``), each document's 64-bit SimHash (``core/simhash.py``),
   and by brute force every pair of documents within distance 6 (all n(n-1)/2 pairs);
3. per k in 2..6: the share of the pairs of exact resemblance >= 0.9 / 0.8 / 0.5 whose
   distance is at most k ("pair recall"), and, after union-find over the pairs within k
   and the exact shortcut (identical shingle sets), the share of them ending in one cluster
   ("cluster recall"); pairwise precision, recall and F1 of co-membership against the
   connected components of exact resemblance >= 0.5, as ``python -m bench`` scores;
4. per k, Manku's tables (``core/simhash_tables.py``) in several layouts: the pairs they
   propose (candidates a document, as a streaming detector would meet them: each pair
   once, by its later document), against what uniform fingerprints would give; every pair
   within k must be among them (checked); state bytes a document: the 64-bit SimHash and
   one posting (8-byte key, 8-byte document id) per table;
5. a second verifier for the pairs within k: a bottom-s sample of the shingles (s = 16, 32)
   estimates resemblance, and a pair estimated under 0.5 is dropped, for every pair within k
   or only for those at distance k - 1 or k;
6. gaoya's ``SimHashStringIndex`` (its defaults: 6 blocks, k = 5, and k = 3), fed the same
   canonical tokens: word unigrams with their counts (its word analyzer), and the 5-shingles.

Times are rough: the machine is shared (2 cores), and only the SimHash's own work is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from neardup.core import Settings, Sketch, Tokenizer, shingle_sets, to_canonical_text
from neardup.core.canonical import TokenBatch
from neardup.core.simhash import (
    Features,
    concat_features,
    hamming,
    set_features,
    simhash_batch,
    token_features,
)
from neardup.core.simhash_tables import TableScheme, manku_tables, table_keys
from neardup.core.sketch import estimate_columns
from neardup.core.supershingles import super_shingles

from .corpus import Page, generate
from .truth import PairScores, components, pair_scores, pairwise_scores, true_clusters

__all__ = ["FEATURES", "SCHEMES", "main"]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
DISTANCES = (2, 3, 4, 5, 6)
BANDS = (0.9, 0.8, 0.5)
#: the table layouts measured for each k: one level of b blocks, or nested levels
SCHEMES: dict[int, list[int | tuple[int, ...]]] = {
    2: [3, 4],
    3: [4, 5, (4, 4), 6],
    4: [5, 6, 7],
    5: [6, 7, (6, 6)],
    6: [7, 8],
}
VERIFIER_SAMPLES = (16, 32)
VERIFIER_FLOORS = (0.5, 0.6, 0.7)
#: (pair, table) meetings past which a layout's distinct candidates are not listed
MAX_MEETINGS = 20_000_000
BATCH = 256  # pages a batch, as neardup run prepares them


@dataclass(frozen=True, slots=True)
class Corpus:
    pages: list[Page]
    tokens: TokenBatch
    sets: list[U64]  # 5-shingle sets, as the detector makes them
    settings: Settings


def _ngram_sets(corpus: Corpus, size: int) -> list[U64]:
    if size == corpus.settings.shingle_size:
        return corpus.sets
    return shingle_sets(corpus.tokens, size, corpus.settings.seed)


#: feature choice -> its features (from the corpus's tokens and shingle sets)
FEATURES: dict[str, Callable[[Corpus], Features]] = {
    "shingles-5": lambda c: set_features(c.sets),
    "shingles-3": lambda c: set_features(_ngram_sets(c, 3)),
    "shingles-2": lambda c: set_features(_ngram_sets(c, 2)),
    "words-binary": lambda c: token_features(c.tokens, "binary"),
    "words-tf": lambda c: token_features(c.tokens, "tf"),
    "words-log-tf": lambda c: token_features(c.tokens, "log_tf"),
    "shingles-1..5": lambda c: concat_features(
        *(set_features(_ngram_sets(c, w)) for w in range(1, 6))
    ),
    "words-log-tf+shingles-5": lambda c: concat_features(
        token_features(c.tokens, "log_tf"), set_features(c.sets)
    ),
    "words-binary+shingles-5": lambda c: concat_features(
        token_features(c.tokens, "binary"), set_features(c.sets)
    ),
    "words-log-tf*2+shingles-5": lambda c: concat_features(
        _scaled(token_features(c.tokens, "log_tf"), 2), set_features(c.sets)
    ),
    "words-log-tf*4+shingles-5": lambda c: concat_features(
        _scaled(token_features(c.tokens, "log_tf"), 4), set_features(c.sets)
    ),
    # without the words every page of a language shares (its most frequent ones)
    "words-tf<=2": lambda c: _reweighted(token_features(c.tokens, "tf"), lambda tf: tf <= 2),
    "words-inv-tf": lambda c: _reweighted(
        token_features(c.tokens, "tf"), lambda tf: np.maximum(1, 4 // tf)
    ),
}


def _reweighted(features: Features, weight: Callable[[I64], npt.NDArray[np.generic]]) -> Features:
    """The features with weights ``weight(tf)`` (``features``' weights are tf), those of
    weight 0 dropped."""
    assert features.weights is not None
    weights = weight(features.weights).astype(np.int64)
    kept = weights > 0
    running = np.concatenate([np.zeros(1, np.int64), np.cumsum(kept)])
    offsets = running[features.offsets]
    return Features(features.values[kept], offsets, weights[kept])


def _scaled(features: Features, factor: int) -> Features:
    weights = (
        np.ones(len(features.values), np.int64) if features.weights is None else features.weights
    )
    return Features(features.values, features.offsets, weights * factor)


def build_corpus(docs: int, seed: int, short_share: float) -> Corpus:
    settings = Settings()
    pages = generate(docs, seed=seed, short_share=short_share)
    tokens = Tokenizer(settings.seed, settings.token_unit).hash_batch(
        [to_canonical_text(p.content, p.content_type) for p in pages]
    )
    return Corpus(
        pages, tokens, shingle_sets(tokens, settings.shingle_size, settings.seed), settings
    )


def _batches(corpus: Corpus) -> list[tuple[TokenBatch, list[U64]]]:
    """The corpus in batches of 256 pages, as ``neardup run`` prepares them."""
    out = []
    offsets = corpus.tokens.offsets
    for start in range(0, len(corpus.pages), BATCH):
        end = min(start + BATCH, len(corpus.pages))
        lo, hi = int(offsets[start]), int(offsets[end])
        out.append(
            (
                TokenBatch(corpus.tokens.hashes[lo:hi], offsets[start : end + 1] - lo),
                corpus.sets[start:end],
            )
        )
    return out


def simhashes(corpus: Corpus, name: str) -> tuple[U64, float]:
    """Each document's SimHash for one feature choice, and the µs a document it took, in
    batches of 256 (the 5-shingle sets are given: the detector makes them anyway)."""
    parts = []
    started = time.perf_counter()
    for tokens, sets in _batches(corpus):
        batch = Corpus(corpus.pages, tokens, sets, corpus.settings)
        parts.append(simhash_batch(FEATURES[name](batch)))
    seconds = time.perf_counter() - started
    return np.concatenate(parts), seconds / len(corpus.pages) * 1e6


def minhash_cost(corpus: Corpus) -> float:
    """µs a document of what SimHash replaces in preparing a page: the bottom-s sketch and
    the super-shingles of the default mode (same batches)."""
    settings = corpus.settings
    started = time.perf_counter()
    for _, sets in _batches(corpus):
        super_shingles(sets, settings)
        for s in sets:
            Sketch.from_shingles(s, settings)
    return (time.perf_counter() - started) / len(corpus.pages) * 1e6


def close_pairs(hashes: U64, usable: npt.NDArray[np.bool_], limit: int) -> tuple[I64, I64, I64]:
    """Every pair i < j of usable documents within distance ``limit``, by brute force."""
    n = len(hashes)
    found_i, found_j, found_d = [], [], []
    rows = 512
    for start in range(0, n, rows):
        block = hashes[start : start + rows]
        distance = hamming(block[:, None], hashes[None, :])
        i, j = np.nonzero(distance <= limit)
        i += start
        keep = (j > i) & usable[i] & usable[j]
        found_i.append(i[keep])
        found_j.append(j[keep])
        found_d.append(distance[i[keep] - start, j[keep]].astype(np.int64))
    return np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_d)


def table_pairs(keys: U64, cap: int | None = None) -> tuple[I64 | None, int]:
    """The distinct pairs (as i * n + j, i < j) that share a key in some table, and the
    number of (pair, table) meetings; no pairs when the meetings are more than ``cap``."""
    n, tables = keys.shape
    flat = keys.ravel()
    docs = np.repeat(np.arange(n, dtype=np.int64), tables)
    order = np.argsort(flat, kind="stable")  # documents ascending within a key
    flat, docs = flat[order], docs[order]
    starts = np.flatnonzero(np.concatenate([[True], flat[1:] != flat[:-1]]))
    lengths = np.diff(np.append(starts, len(flat)))
    total = int((lengths * (lengths - 1) // 2).sum())
    if cap is not None and total > cap:
        return None, total
    run_end = np.repeat(starts + lengths, lengths)
    after = run_end - np.arange(len(flat)) - 1
    first = np.repeat(np.arange(len(flat)) + 1 - (np.cumsum(after) - after), after)
    partner = docs[first + np.arange(total)]
    mine = np.repeat(docs, after)
    return np.unique(mine * n + partner), total


def _identical_sets(scores: PairScores) -> tuple[I64, I64]:
    """The exact shortcut: pairs whose shingle sets are equal (the detector's
    ``shingle`` method; equal bytes and equal token streams are among them)."""
    same = (scores.intersection == scores.sizes[scores.i]) & (
        scores.intersection == scores.sizes[scores.j]
    )
    return scores.i[same], scores.j[same]


def _labels(n: int, i: I64, j: I64) -> I64:
    label = np.arange(n, dtype=np.int64)
    for number, members in enumerate(components(n, i, j)):
        label[members] = n + number
    return label


def _recalls(scores: PairScores, joined: npt.NDArray[np.bool_]) -> dict[str, float]:
    return {f"r>={band}": round(float(joined[scores.jaccard >= band].mean()), 4) for band in BANDS}


def evaluate(
    name: str,
    hashes: U64,
    corpus: Corpus,
    scores: PairScores,
    truth: list[list[int]],
    distances: list[int],
) -> dict[str, object]:
    n = len(hashes)
    usable = np.fromiter((len(s) > 0 for s in corpus.sets), np.bool_, n)
    ci, cj, cd = close_pairs(hashes, usable, max(distances))
    truth_d = hamming(hashes[scores.i], hashes[scores.j]).astype(np.int64)
    same_i, same_j = _identical_sets(scores)
    # resemblance of each close pair (0 when they share no shingle)
    truth_codes = scores.i * n + scores.j
    close_codes = ci * n + cj
    near_codes = np.sort(close_codes)
    where = np.searchsorted(truth_codes, close_codes)
    where = np.minimum(where, len(truth_codes) - 1)
    shares = truth_codes[where] == close_codes
    close_r = np.where(shares, scores.jaccard[where], 0.0)
    short = np.array([len(s) < corpus.settings.short_limit for s in corpus.sets])
    rows: list[dict[str, object]] = []
    for k in distances:
        within = cd <= k
        edges_i = np.concatenate([ci[within], same_i])
        edges_j = np.concatenate([cj[within], same_j])
        label = _labels(n, edges_i, edges_j)
        clustered = label[scores.i] == label[scores.j]
        predicted = components(n, edges_i, edges_j)
        precision, recall, f1 = pairwise_scores(predicted, truth)
        long_pairs = ~(short[scores.i] | short[scores.j])
        row: dict[str, object] = {
            "k": k,
            "pair_recall": _recalls(scores, truth_d <= k),
            "cluster_recall": _recalls(scores, clustered),
            "cluster_recall_long": _recalls(_subset(scores, long_pairs), clustered[long_pairs]),
            "cluster_recall_short": _recalls(_subset(scores, ~long_pairs), clustered[~long_pairs]),
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
            "pairs_within_k": int(within.sum()),
            "pairs_within_k_under_0.5": int((close_r[within] < 0.5).sum()),
            "pairs_within_k_sharing_nothing": int((~shares[within]).sum()),
            "tables": [
                _tables(hashes, usable, k, blocks, ci[within], cj[within], near_codes)
                for blocks in SCHEMES.get(k, [k + 1])
            ],
        }
        rows.append(row)
    return {
        "features": name,
        "distance_by_resemblance": _distance_profile(scores, truth_d),
        "by_k": rows,
        "close": (ci, cj, cd),
    }


def _subset(scores: PairScores, keep: npt.NDArray[np.bool_]) -> PairScores:
    return PairScores(
        scores.i[keep],
        scores.j[keep],
        scores.intersection[keep],
        scores.jaccard[keep],
        scores.containment[keep],
        scores.sizes,
    )


def _distance_profile(scores: PairScores, distance: I64) -> dict[str, dict[str, float]]:
    """Mean and quartiles of the distance of the pairs in each band of resemblance."""
    edges = [0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0]
    out = {}
    for low, high in pairwise(edges):
        inside = (scores.jaccard >= low) & (scores.jaccard < high)
        if inside.any():
            d = distance[inside]
            out[f"[{low},{high})"] = {
                "pairs": int(inside.sum()),
                "mean": round(float(d.mean()), 2),
                "p10": float(np.percentile(d, 10)),
                "median": float(np.median(d)),
                "p90": float(np.percentile(d, 90)),
            }
    return out


def _tables(
    hashes: U64,
    usable: npt.NDArray[np.bool_],
    k: int,
    blocks: int | tuple[int, ...],
    within_i: I64,
    within_j: I64,
    near_codes: I64,
) -> dict[str, object]:
    """One layout of tables for k: its candidates, and how those beyond the farthest distance
    studied (``near_codes``: every pair within it, as i * n + j) grow with the corpus."""
    scheme: TableScheme = manku_tables(k, blocks)
    n = len(hashes)
    docs = np.flatnonzero(usable)
    keys = table_keys(hashes[docs], scheme)
    # Manku's guarantee: every pair within k shares a key (checked pair by pair)
    at = np.searchsorted(docs, within_i), np.searchsorted(docs, within_j)
    missed = int((~(keys[at[0]] == keys[at[1]]).any(axis=1)).sum())
    if missed:
        raise AssertionError(f"k={k} blocks={blocks}: {missed} pairs within k share no key")
    codes, meetings = table_pairs(keys, cap=MAX_MEETINGS)
    pairs_uniform = len(docs) * (len(docs) - 1) / 2
    growth: dict[str, object] = {}
    if codes is not None:
        codes = docs[codes // len(docs)] * n + docs[codes % len(docs)]
        far = codes[~np.isin(codes, near_codes)]
        # far pairs among the first m documents: a pair (i < j) is there when j < m
        for m in (n // 4, n // 2, n):
            growth[str(m)] = round(float((far % n < m).sum()) / m, 3)
        # the chance that a far pair meets, against 2**-p summed over the tables
        rate = float(len(far)) / pairs_uniform
        growth["far_rate_over_uniform"] = round(rate / sum(2.0**-b for b in scheme.key_bits), 1)
        growth["far_per_lookup_at_1e8_if_linear"] = round(rate * 1e8, 1)
    return {
        "blocks": blocks,
        "tables": scheme.tables,
        "key_bits": sorted(set(scheme.key_bits)),
        # None: too many meetings to list the distinct pairs (the layout is useless anyway)
        "candidates_per_doc": None if codes is None else round(len(codes) / n, 3),
        "table_meetings_per_doc": round(meetings / n, 3),
        "uniform_candidates_per_doc": round(
            sum(pairs_uniform * 2.0**-b for b in scheme.key_bits) / n, 3
        ),
        "uniform_per_lookup_at_1e8": round(scheme.expected_random_candidates(1e8), 2),
        "uniform_per_lookup_at_1e9": round(scheme.expected_random_candidates(1e9), 2),
        "bytes_per_doc": scheme.bytes_per_document(),
        # candidates beyond the farthest distance studied, a document, among the first m
        "far_candidates_per_doc_by_docs": growth,
    }


def verifier_study(
    corpus: Corpus,
    scores: PairScores,
    truth: list[list[int]],
    close: tuple[I64, I64, I64],
    distances: list[int],
) -> list[dict[str, object]]:
    """The pairs within k, checked again by a bottom-s sample's estimate of resemblance: a
    pair estimated under the floor is dropped (all pairs within k, or only those at
    distance k - 1 or k, near the bound)."""
    n = len(corpus.sets)
    same_i, same_j = _identical_sets(scores)
    out: list[dict[str, object]] = []
    for s in VERIFIER_SAMPLES:
        settings = corpus.settings.replace(sample_size=s, short_limit=min(100, s))
        sketches = [Sketch.from_shingles(x, settings) for x in corpus.sets]
        for k in distances:
            within = close[2] <= k
            ci, cj, cd = close[0][within], close[1][within], close[2][within]
            started = time.perf_counter()
            r, _, _, _ = estimate_columns(
                [sketches[a].values for a in ci.tolist()],
                [sketches[a].shingle_count for a in ci.tolist()],
                [sketches[b].values for b in cj.tolist()],
                [sketches[b].shingle_count for b in cj.tolist()],
                s,
            )
            per_pair_us = (time.perf_counter() - started) / max(len(ci), 1) * 1e6
            for floor in VERIFIER_FLOORS:
                for near in (None, k - 1):
                    checked = np.ones(len(ci), np.bool_) if near is None else cd >= near
                    keep = ~checked | (r >= floor)
                    edges_i = np.concatenate([ci[keep], same_i])
                    edges_j = np.concatenate([cj[keep], same_j])
                    clustered = _labels(n, edges_i, edges_j)
                    joined = clustered[scores.i] == clustered[scores.j]
                    precision, recall, f1 = pairwise_scores(components(n, edges_i, edges_j), truth)
                    out.append(
                        {
                            "k": k,
                            "sample": s,
                            "floor": floor,
                            "checked": "all within k" if near is None else f"d >= {near}",
                            "estimates_per_doc": round(float(checked.sum()) / n, 3),
                            "pairs_dropped": int((~keep).sum()),
                            "cluster_recall": _recalls(scores, joined),
                            "precision": round(precision, 4),
                            "recall": round(recall, 4),
                            "f1": round(f1, 4),
                            "bytes_per_doc_more": 4 * s + 4,
                            "us_per_pair_estimated": round(per_pair_us, 2),
                        }
                    )
    return out


def gaoya_study(
    corpus: Corpus, scores: PairScores, truth: list[list[int]]
) -> list[dict[str, object]]:
    """gaoya's SimHash index, streaming (query, then insert), on the same canonical tokens."""
    try:
        from gaoya.simhash import SimHashStringIndex  # type: ignore[import-untyped]
    except ImportError:
        return [{"note": "gaoya is not installed (pip install '.[bench]')"}]
    from .peers._common import canonical_tokens, shingles

    words = [canonical_tokens(p.content, p.content_type) for p in corpus.pages]
    n = len(words)
    same_i, same_j = _identical_sets(scores)
    out: list[dict[str, object]] = []
    for features in ("words (its analyzer: unigram counts)", "shingles-5"):
        inputs = words if features.startswith("words") else [shingles(w, 5) for w in words]
        # gaoya 0.2.2 returns the pairs at distance < hamming_distance (its docstring says
        # <=; checked by brute force on its own signatures): (6, 5), its defaults, is k = 4
        for blocks, k in ((6, 5), (6, 4)):
            index = SimHashStringIndex(num_blocks=blocks, hamming_distance=k).index
            pairs_i, pairs_j = [], []
            candidates = 0
            started = time.perf_counter()
            for doc, tokens in enumerate(inputs):
                if not tokens:
                    continue
                for other, _distance in index.query_tokens_return_distance(tokens):
                    candidates += 1
                    pairs_i.append(other)
                    pairs_j.append(doc)
                index.insert_tokens(doc, tokens)
            seconds = time.perf_counter() - started
            ei = np.concatenate([np.asarray(pairs_i, np.int64), same_i])
            ej = np.concatenate([np.asarray(pairs_j, np.int64), same_j])
            label = _labels(n, ei, ej)
            clustered = label[scores.i] == label[scores.j]
            precision, recall, f1 = pairwise_scores(components(n, ei, ej), truth)
            out.append(
                {
                    "features": features,
                    "num_blocks": blocks,
                    "hamming_distance": k,
                    "k": k - 1,
                    "cluster_recall": _recalls(scores, clustered),
                    "precision": round(precision, 4),
                    "recall": round(recall, 4),
                    "f1": round(f1, 4),
                    "pairs_within_k": len(pairs_i),
                    "index_docs_per_s": round(n / seconds, 1),
                }
            )
    return out


def minhash_mode(corpus: Corpus, scores: PairScores, truth: list[list[int]]) -> dict[str, object]:
    """The default (min-hash) mode on the same pages, end to end (``neardup run``, one
    process, default settings), scored as the SimHash pairs are."""
    import subprocess
    import tempfile

    from .corpus import write_jsonl

    n = len(corpus.pages)
    with tempfile.TemporaryDirectory(prefix="simhash-study-") as tmp:
        pages, out = Path(tmp) / "pages.jsonl", Path(tmp) / "clusters.jsonl"
        write_jsonl(corpus.pages, str(pages))
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "neardup.streams", "run", "--prepare", "thread", "--state",
             str(Path(tmp) / "state"), "--quiet", "--clusters", str(out), str(pages)],
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        index = {p.url: i for i, p in enumerate(corpus.pages)}
        predicted = [
            [index[url] for url in json.loads(line)["members"]]
            for line in out.read_text().splitlines()
            if line
        ]
    label = np.arange(n, dtype=np.int64)
    for number, members in enumerate(predicted):
        label[members] = n + number
    precision, recall, f1 = pairwise_scores(predicted, truth)
    return {
        "cluster_recall": _recalls(scores, label[scores.i] == label[scores.j]),
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "run_seconds_rough": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.simhash_study", description=__doc__)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--short-share", type=float, default=0.15)
    parser.add_argument("--features", default=",".join(FEATURES))
    parser.add_argument("--distances", default=",".join(map(str, DISTANCES)))
    parser.add_argument(
        "--verify-k", default="", help="k (comma-separated) of the second-verifier study"
    )
    parser.add_argument("--verify-features", default="words-log-tf")
    parser.add_argument("--no-gaoya", action="store_true")
    parser.add_argument(
        "--minhash", action="store_true", help="also score the default mode on the same pages"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--markdown", type=Path, help="print the tables of a report written by --out, and stop"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown(json.loads(args.markdown.read_text())))
        return 0
    names = [f for f in args.features.split(",") if f]
    distances = [int(k) for k in args.distances.split(",") if k]
    verify_k = [int(k) for k in args.verify_k.split(",") if k]
    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        parser.error(f"unknown features {unknown}: choose from {', '.join(FEATURES)}")

    started = time.perf_counter()
    corpus = build_corpus(args.docs, args.seed, args.short_share)
    scores = pair_scores(corpus.sets)
    truth = true_clusters(scores, 0.5)
    print(f"corpus and truth: {time.perf_counter() - started:.1f} s, {len(scores.i):,} pairs")
    report: dict[str, object] = {
        "command": "python -m bench.simhash_study " + " ".join(argv),
        "docs": args.docs,
        "seed": args.seed,
        "short_share": args.short_share,
        "pairs": {f"r>={b}": int((scores.jaccard >= b).sum()) for b in BANDS},
        "minhash_sketch_and_super_shingles_us_per_doc": round(minhash_cost(corpus), 1),
    }
    results = []
    for name in names:
        hashes, us = simhashes(corpus, name)
        result = evaluate(name, hashes, corpus, scores, truth, distances)
        result["simhash_us_per_doc"] = round(us, 1)
        close = result.pop("close")
        if verify_k and name in args.verify_features.split(","):
            result["verifier"] = verifier_study(corpus, scores, truth, close, verify_k)  # type: ignore[arg-type]
        results.append(result)
        _print_result(result)
    report["results"] = results
    if args.minhash:
        report["minhash_mode"] = minhash_mode(corpus, scores, truth)
        print("minhash mode", json.dumps(report["minhash_mode"]))
    if not args.no_gaoya:
        report["gaoya"] = gaoya_study(corpus, scores, truth)
        for row in report["gaoya"]:  # type: ignore[attr-defined]
            print("gaoya", json.dumps(row))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def markdown(report: dict[str, Any]) -> str:
    """The report's tables in Markdown, as docs/simhash.md quotes them."""
    lines = [
        f"{report['docs']:,} documents, seed {report['seed']}, short share "
        f"{report['short_share']}; pairs at r >= 0.9 / 0.8 / 0.5: "
        + " / ".join(f"{v:,}" for v in report["pairs"].values()),
        "",
        "| features | k | cluster recall r>=0.9 / 0.8 / 0.5 | pair recall r>=0.9 | precision "
        "| pairs within k a doc | candidates a doc (tables: candidates) | µs a doc |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in report["results"]:
        for row in result["by_k"]:
            recall = " / ".join(f"{v:.3f}" for v in row["cluster_recall"].values())
            candidates = ", ".join(
                f"{t['tables']}: {t['candidates_per_doc'] or '-'}" for t in row["tables"]
            )
            lines.append(
                f"| {result['features']} | {row['k']} | {recall} "
                f"| {row['pair_recall']['r>=0.9']:.3f} | {row['precision']:.4f} "
                f"| {row['pairs_within_k'] / report['docs']:.2f} | {candidates} "
                f"| {result['simhash_us_per_doc']} |"
            )
    lines += [
        "",
        "Candidates beyond distance 6 a document, among the first n/4, n/2 and n documents: "
        "a flat column is pairs within families; one that doubles with n is fingerprints that "
        "are not uniform. The growth from n/2 to n gives the chance that two unrelated "
        "documents meet, and so the far candidates of a lookup among 1e8 documents (beside what "
        "uniform fingerprints would meet):",
        "",
        "| features | k | blocks | tables | key bits | far candidates a doc "
        "| a lookup at 1e8 (uniform) |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in report["results"]:
        for row in result["by_k"]:
            if row["k"] != 3:
                continue
            for t in row["tables"]:
                growth = t["far_candidates_per_doc_by_docs"]
                counts = [v for k, v in growth.items() if k.isdigit()]
                far = " / ".join(f"{v:.3f}" for v in counts) or "-"
                at_1e8 = "-"
                if len(counts) == 3:  # far(m) ~ a + rate * m / 2: the rate from n/2 to n
                    rate = max(0.0, 2 * (counts[2] - counts[1]) / (report["docs"] / 2))
                    at_1e8 = f"{rate * 1e8:,.0f}"
                lines.append(
                    f"| {result['features']} | 3 | {t['blocks']} | {t['tables']} "
                    f"| {'-'.join(map(str, t['key_bits']))} | {far} "
                    f"| {at_1e8} ({t['uniform_per_lookup_at_1e8']}) |"
                )
    verifiers = [(r["features"], v) for r in report["results"] for v in r.get("verifier", [])]
    if verifiers:
        lines += [
            "",
            "| features | k | sample | floor | checked | estimates a doc "
            "| cluster recall r>=0.9 / 0.8 / 0.5 | precision | bytes a doc more |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, v in verifiers:
            recall = " / ".join(f"{x:.3f}" for x in v["cluster_recall"].values())
            lines.append(
                f"| {name} | {v['k']} | {v['sample']} | {v['floor']} | {v['checked']} "
                f"| {v['estimates_per_doc']:.2f} | {recall} | {v['precision']:.4f} "
                f"| {v['bytes_per_doc_more']} |"
            )
    gaoya = [g for g in report.get("gaoya", []) if "k" in g]
    if gaoya:
        lines += [
            "",
            "| gaoya SimHashStringIndex | blocks | hamming_distance (k) "
            "| cluster recall r>=0.9 / 0.8 / 0.5 | precision | pairs returned | docs/s |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in gaoya:
            recall = " / ".join(f"{x:.3f}" for x in g["cluster_recall"].values())
            lines.append(
                f"| {g['features']} | {g['num_blocks']} | {g['hamming_distance']} ({g['k']}) "
                f"| {recall} | {g['precision']:.4f} | {g['pairs_within_k']:,} "
                f"| {g['index_docs_per_s']:,} |"
            )
    minhash = report.get("minhash_mode")
    if minhash:
        recall = " / ".join(f"{x:.3f}" for x in minhash["cluster_recall"].values())
        lines += [
            "",
            f"min-hash mode (neardup run, defaults): cluster recall r>=0.9 / 0.8 / 0.5 {recall}, "
            f"precision {minhash['precision']:.4f}, {minhash['run_seconds_rough']} s",
        ]
    return "\n".join(lines) + "\n"


def _print_result(result: dict[str, object]) -> None:
    print(f"== {result['features']}: {result['simhash_us_per_doc']} µs/doc")
    for row in result["by_k"]:  # type: ignore[attr-defined]
        tables = "; ".join(
            f"b={t['blocks']}: {t['tables']}T {t['candidates_per_doc']} cand/doc "
            f"{t['bytes_per_doc']} B"
            for t in row["tables"]
        )
        print(
            f"k={row['k']} pair {row['pair_recall']} cluster {row['cluster_recall']} "
            f"P={row['precision']} R={row['recall']} within={row['pairs_within_k']} "
            f"(<0.5: {row['pairs_within_k_under_0.5']}) | {tables}"
        )
    for row in result.get("verifier", []):  # type: ignore[attr-defined]
        print("verifier", json.dumps(row))


if __name__ == "__main__":
    raise SystemExit(main())
