"""Clusters against brute force: exact Jaccard on the same canonical shingle sets.

The corpus is real text with injected near-duplicate variants (bench/corpus.py). The truth is
the connected components of "exact resemblance >= T" over every pair sharing a shingle
(bench/truth.py). Scores are pairwise precision/recall/F1 of co-membership, on long and on
short documents separately. Seeds are fixed; the bound (F1 >= 0.97) is the issue's.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from neardup.core import Page, Settings, Tokenizer, shingle_sets, to_canonical_text
from neardup.state import State
from neardup.streams import Detector

from bench.corpus import generate
from bench.truth import pair_scores, pairwise_scores, true_clusters
from tests.helpers import partition

F1_BOUND = 0.97


def _restrict(clusters: Iterable[Iterable[str]], keep: set[str]) -> list[list[str]]:
    return [inside for c in clusters if len(inside := [u for u in c if u in keep]) > 1]


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "threshold"), [(11, 0.5), (12, 0.5), (13, 0.7)])
def test_pairwise_f1_against_exact_components(seed: int, threshold: float) -> None:
    settings = Settings(threshold=threshold)
    corpus = generate(2500, seed=seed, short_share=0.3)
    pages = [Page(p.url, p.content, p.fetched_at, p.content_type) for p in corpus]
    with State.open(None, settings) as state:
        detector = Detector(state)
        for start in range(0, len(pages), 256):
            detector.process(pages[start : start + 256])
        predicted = partition(state)

    tokens = Tokenizer(settings.seed, settings.token_unit).hash_batch(
        [to_canonical_text(p.content, p.content_type) for p in pages]
    )
    sets = shingle_sets(tokens, settings.shingle_size, settings.seed)
    truth = [[pages[i].url for i in c] for c in true_clusters(pair_scores(sets), threshold)]

    short = {p.url for p, s in zip(pages, sets, strict=True) if len(s) < settings.short_limit}
    long = {p.url for p in pages} - short
    report = {}
    for name, part in (("long", long), ("short", short)):
        report[name] = pairwise_scores(_restrict(predicted, part), _restrict(truth, part))
    report["all"] = pairwise_scores(predicted, truth)
    print(
        f"seed {seed} T={threshold}: "
        + ", ".join(f"{k} P={p:.4f} R={r:.4f} F1={f:.4f}" for k, (p, r, f) in report.items())
    )
    assert len(short) > 300 and len(long) > 1000  # both kinds are really exercised
    for name, (_, _, f1) in report.items():
        assert f1 >= F1_BOUND, (name, report)
