"""The SimHash study's pieces on small inputs: table pairs, close pairs, one small run."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from neardup.core.simhash import hamming

from bench import simhash_study


def test_table_pairs_are_the_pairs_sharing_a_key() -> None:
    keys = np.array([[1, 10], [1, 11], [2, 10], [3, 12], [1, 12]], dtype=np.uint64)
    codes, meetings = simhash_study.table_pairs(keys)
    assert codes is not None
    assert simhash_study.table_pairs(keys, cap=4) == (None, 5)
    n = len(keys)
    expected = {
        (i, j)
        for i, j in itertools.combinations(range(n), 2)
        if set(keys[i].tolist()) & set(keys[j].tolist())
    }
    assert {(int(c) // n, int(c) % n) for c in codes} == expected
    assert meetings == 3 + 1 + 1  # key 1: three documents, key 10: two, key 12: two


def test_close_pairs_are_every_pair_within_the_limit() -> None:
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**63, 40, dtype=np.uint64)
    hashes = np.concatenate([base, base ^ np.uint64(0b111), base ^ np.uint64(0b1)])
    usable = np.ones(len(hashes), np.bool_)
    usable[-1] = False
    i, j, d = simhash_study.close_pairs(hashes, usable, 3)
    brute = {
        (a, b)
        for a, b in itertools.combinations(range(len(hashes)), 2)
        if usable[a] and usable[b] and int(hamming(hashes[a], hashes[b])) <= 3
    }
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == brute
    assert d.tolist() == [int(hamming(hashes[a], hashes[b])) for a, b in zip(i, j, strict=True)]


@pytest.mark.slow
def test_a_small_study_runs_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "study.json"
    code = simhash_study.main(
        ["--docs", "400", "--features", "shingles-5,words-log-tf", "--distances", "3",
         "--verify-k", "3", "--no-gaoya", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    assert [r["features"] for r in report["results"]] == ["shingles-5", "words-log-tf"]
    row = report["results"][0]["by_k"][0]
    assert row["k"] == 3 and 0.0 <= row["precision"] <= 1.0
    assert all(t["bytes_per_doc"] == 8 + 16 * t["tables"] for t in row["tables"])
    tables = simhash_study.markdown(report)
    assert "| shingles-5 | 3 |" in tables and "| words-log-tf | 3 | 16 | 0.7 |" in tables
