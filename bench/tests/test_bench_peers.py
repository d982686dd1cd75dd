"""The peers streaming one page at a time find what their bulk variants find, and what the
brute-force truth says, on a tiny corpus; a peer whose library is missing fails to start."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import corpus
from bench.run import _truth, density
from bench.truth import pairwise_scores

PEERS = ("datasketch", "rensa", "gaoya")


@pytest.fixture(scope="module")
def pages() -> list[corpus.Page]:
    return corpus.generate(400, seed=5, **corpus.CORPORA["dense"])  # type: ignore[arg-type]


def _run(
    peer: str, path: Path, out: Path, bulk: bool, capsys: pytest.CaptureFixture[str]
) -> tuple[list[list[str]], dict[str, object]]:
    module = importlib.import_module(f"bench.peers.{peer}_peer")
    module.main(peer, module.Streaming, module.detect, [str(path), str(out)] + ["--bulk"] * bulk)
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    found = [json.loads(line)["members"] for line in out.read_text().splitlines()]
    return found, report


@pytest.mark.parametrize("peer", PEERS)
def test_streaming_peer_finds_the_bulk_clusters_and_the_truth(
    peer: str, pages: list[corpus.Page], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "corpus.jsonl"
    corpus.write_jsonl(pages, str(path))
    if importlib.util.find_spec(peer) is None:  # `python -m bench` reports it not installed
        done = subprocess.run(
            [sys.executable, "-m", f"bench.peers.{peer}_peer", str(path), str(tmp_path / "o")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0 and "No module named" in done.stderr
        return
    streamed, report = _run(peer, path, tmp_path / "streamed.jsonl", False, capsys)
    bulk, bulk_report = _run(peer, path, tmp_path / "bulk.jsonl", True, capsys)
    assert (report["peer"], report["mode"]) == (peer, "streaming")
    assert (bulk_report["peer"], bulk_report["mode"]) == (f"{peer}-bulk", "bulk")
    assert report["docs"] == bulk_report["docs"] == len(pages)
    assert isinstance(report["candidates"], int) and report["candidates"] > 0
    # the same sketches and the same index, fed one page at a time: the same clusters
    assert streamed == bulk
    truth, _ = _truth(pages, 0.5)
    assert len(truth) > 20
    assert pairwise_scores(streamed, truth)[2] >= 0.9


def test_density_of_the_corpus_kinds() -> None:
    share = {}
    for kind in ("default", "dense"):
        pages = corpus.generate(1500, seed=2, **corpus.CORPORA[kind])  # type: ignore[arg-type]
        clusters, scores = _truth(pages, 0.5)
        measured = density(scores, clusters, 0.5)
        assert measured["pages"] == 1500
        assert measured["pages_in_clusters"] == sum(len(c) for c in clusters)
        assert measured["pairs_at_threshold"] == int((scores.jaccard >= 0.5).sum())
        share[kind] = measured["share_in_clusters"]
    assert share["default"] >= 1 / 3
    assert share["dense"] > share["default"]
