"""The generator is deterministic, well-formed, and its families really are near-duplicates."""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from bench import corpus
from bench.peers._common import canonical_tokens, shingles
from bench.text_source import MIN_WORDS, paragraphs


def _shingle_set(page: corpus.Page) -> set[str]:
    return set(shingles(canonical_tokens(page.content, page.content_type), 5))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


@pytest.fixture(scope="module")
def pages() -> list[corpus.Page]:
    return corpus.generate(1200, seed=11)


def test_text_source_is_prose() -> None:
    pars = paragraphs()
    assert len(pars) > 3000
    assert all(len(p.split(" ")) >= MIN_WORDS for p in pars)
    assert len(set(pars)) == len(pars)


def test_deterministic_and_prefix_stable(pages: list[corpus.Page]) -> None:
    assert corpus.generate(1200, seed=11) == pages
    assert corpus.generate(300, seed=11) == pages[:300]
    assert corpus.generate(300, seed=12) != pages[:300]


def test_well_formed(pages: list[corpus.Page], tmp_path: Path) -> None:
    stamps = [datetime.fromisoformat(p.fetched_at) for p in pages]
    assert all(a < b for a, b in itertools.pairwise(stamps))
    assert len({p.url for p in pages}) == len(pages)
    assert all(re.fullmatch(r"https://site\d+\.example/path/\d+", p.url) for p in pages)
    path = tmp_path / "c.jsonl"
    assert corpus.write_jsonl(pages[:50], str(path)) == 50
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"url", "content", "fetched_at", "content_type"}


def test_lengths(pages: list[corpus.Page]) -> None:
    n_tokens = np.array([len(canonical_tokens(p.content, p.content_type)) for p in pages])
    long = n_tokens[n_tokens >= 60]
    assert 400 <= np.median(long) <= 900
    assert 0.05 <= np.mean(n_tokens < 60) <= 0.35  # short pages (plus their template words)
    # the cap is 10k words of body; markup-free tokens split "O(n^2)" etc. and add boilerplate
    assert n_tokens.max() <= 13_000


def test_families_are_near_duplicates(pages: list[corpus.Page]) -> None:
    families: dict[int, list[corpus.Page]] = defaultdict(list)
    for p in pages:
        families[p.family].append(p)
    within = [
        _jaccard(_shingle_set(members[0]), _shingle_set(m))
        for members in families.values()
        for m in members[1:]
    ]
    assert len(within) > 100
    assert np.median(within) >= 0.5
    assert any(j == 1.0 for j in within)  # exact copies and format-only changes
    bases = [members[0] for members in families.values()][:200]
    across = [_jaccard(_shingle_set(a), _shingle_set(b)) for a, b in itertools.pairwise(bases)]
    assert np.quantile(across, 0.95) < 0.2


def test_exact_copies_exist(pages: list[corpus.Page]) -> None:
    by_content: dict[str, set[str]] = defaultdict(set)
    for p in pages:
        by_content[p.content].add(p.url)
    assert any(len(urls) > 1 for urls in by_content.values())


@pytest.mark.parametrize("seed", range(8))
def test_reformat_keeps_tokens(seed: int) -> None:
    gen = corpus._Generator(seed, 0.0, 50, 0.0, 20, 600, 0.85, 10_000)
    doc, site = gen.base(short=False), gen.site()
    for plain in (False, True):
        original = corpus._render(doc, site, True, plain)
        changed = gen.reformat(doc, site, True, plain)
        assert changed != original[0]
        assert canonical_tokens(changed, original[1]) == canonical_tokens(*original)


@pytest.mark.parametrize("rate", corpus.EDIT_RATES)
def test_edit_rates(rate: float) -> None:
    gen = corpus._Generator(5, 0.0, 50, 0.0, 20, 3000, 0.1, 10_000)
    doc = gen.base(short=False)
    edited = gen.edit(doc, rate)
    matcher = difflib.SequenceMatcher(None, doc.words, edited.words, autojunk=False)
    # a third each of substitutions, deletions, insertions: 1 - ratio is about 2/3 of the rate
    assert 0.4 * rate <= 1.0 - matcher.ratio() <= rate
