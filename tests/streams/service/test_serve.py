"""`neardup serve` reads a state directory that `neardup run` is writing (a RocksDB
secondary instance), never creates one, and draws the dashboard from the history the writer
keeps in the state; a writer's own --http serves its metrics only."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pytest
from neardup.core import Page
from neardup.state import State
from neardup.streams.running.embedded import run as embedded_run
from neardup.streams.running.lifetime import tied_command

from tests.helpers import family_pages, two_sweeps

from .conftest import call

pytestmark = pytest.mark.slow

NEARDUP = [sys.executable, "-m", "neardup.streams"]


def _lines(pages: list[Page]) -> bytes:
    return b"".join(
        json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}).encode()
        + b"\n"
        for p in pages
    )


@contextmanager
def _serving(state: Path) -> Iterator[str]:
    process = subprocess.Popen(
        tied_command([*NEARDUP, "serve", "--state", str(state), "--http", "127.0.0.1:0"]),
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline().decode()
        assert line.startswith("neardup: serving http://"), line
        yield line.split()[-1]
    finally:
        process.terminate()
        code = process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()
        assert code == 0


def _wait(url: str, check: Any, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        answer = call(url)
        if answer.status == 200 and check(answer.json()):
            return answer.json()
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} never passed the check: {answer.status} {answer.body!r}")
        time.sleep(0.2)


def test_serve_refuses_a_directory_without_a_state_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    result = subprocess.run(
        [*NEARDUP, "serve", "--state", str(missing), "--http", "127.0.0.1:0"],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert b"there is no state in" in result.stderr
    assert not missing.exists()


def test_serve_answers_from_a_state_that_run_is_writing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first, second, _ = two_sweeps()
    before = family_pages(5)
    subprocess.run(
        # an archive: every fetch a document, history and lost and found see each
        [*NEARDUP, "run", "--quiet", "--versions", "all", "--state", str(state), "-"],
        input=_lines(before + first),
        check=True,
        timeout=120,
    )
    known = len(before) + len(first)
    later = family_pages(6, families=10, size=6)
    with _serving(state) as base:
        stats = _wait(base + "/api/v1/stats", lambda s: s["documents"] == known)
        history = call(base + "/api/v1/history?url=" + quote("https://site.example/news/1"))
        assert len(history.json()["versions"]) == 1
        run = subprocess.Popen(
            [*NEARDUP, "run", "--quiet", "--batch-size", "16", "--state", str(state), "-"],
            stdin=subprocess.PIPE,
        )
        stdin: IO[bytes] = run.stdin  # type: ignore[assignment]
        try:
            # two batches: the runner ingests the first once the second has arrived
            stdin.write(_lines(second + later[:28]))
            stdin.flush()
            stats = _wait(base + "/api/v1/stats", lambda s: s["documents"] >= known + 16)
            assert run.poll() is None, "the run is still writing while serve answers"
            versions = _wait(
                base + "/api/v1/history?url=" + quote("https://site.example/news/1"),
                lambda h: len(h["versions"]) == 2,
            )["versions"]
            assert versions[1]["resemblance_to_previous"] > 0.3
            moved = call(
                base + "/api/v1/lost-and-found?url=" + quote("https://site.example/archive/2")
            )
            assert [f["url"] for f in moved.json()["found"]] == ["https://site.example/news/2"]
            stdin.write(_lines(later[28:]))
        finally:
            stdin.close()
            assert run.wait(timeout=120) == 0
        total = known + len(second) + len(later)
        stats = _wait(base + "/api/v1/stats", lambda s: s["documents"] == total)
        metrics = call(base + "/metrics").body.decode()
        assert f"neardup_documents_total {float(total)}" in metrics
        assert stats["clusters"] >= 10


def _announced(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    for line in process.stderr:
        text = line.decode()
        if text.startswith("neardup: serving http://"):
            return text.split()[-1]
    raise AssertionError("the process ended without serving")


def test_a_writer_serves_its_metrics_and_sends_queries_to_serve(tmp_path: Path) -> None:
    run = subprocess.Popen(
        tied_command(
            [
                *NEARDUP,
                "run",
                "--quiet",
                *("--http", "127.0.0.1:0", "--api-token", "t0k"),
                *("--state", str(tmp_path / "state"), "-"),
            ]
        ),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert run.stdin is not None
    try:
        run.stdin.write(_lines(family_pages(3)))
        run.stdin.flush()
        base = _announced(run)
        token = {"Authorization": "bearer t0k"}
        assert call(base + "/healthz").json() == {"status": "ok"}
        assert call(base + "/metrics").status == 401
        metrics = call(base + "/metrics", headers=token)
        assert metrics.status == 200 and b"neardup_stage_seconds" in metrics.body
        elsewhere = call(base + "/api/v1/stats", headers=token)
        assert elsewhere.status == 404 and "neardup serve" in elsewhere.json()["error"]["message"]
    finally:
        run.stdin.close()
        assert run.wait(timeout=120) == 0
        assert run.stderr is not None
        run.stderr.close()


def test_serve_started_after_a_run_draws_the_run_s_growth(tmp_path: Path) -> None:
    """The history is in the state: a `serve` started after the run (and after a restart of
    it) draws the growth of every run since the state began."""
    first, second, _ = two_sweeps()
    with State.open(tmp_path / "state") as state:
        for pages in (family_pages(7, families=6, size=5), first, second):
            path = tmp_path / "pages.jsonl"
            path.write_bytes(_lines(pages))
            embedded_run(state, [str(path)], batch_size=8, history_every=0.0)
        documents = state.view().counters.get("documents")
    with _serving(tmp_path / "state") as base:
        board = call(base + "/api/v1/dashboard").json()
        samples = board["samples"][:-1]  # those recorded; the last is the state now
        assert board["samples"][-1]["documents"] == documents
        assert len(samples) >= 6  # a sample a batch here
        counts = [s["documents"] for s in samples]
        assert counts == sorted(counts) and counts[-1] == documents and counts[0] < documents
        assert samples[-1]["largest_cluster"] == board["largest"][0]["size"]
        assert board["growing"] and board["growing"][0]["joined"] >= 2
        growing = call(base + "/api/v1/clusters/growing?limit=3").json()
        assert growing["clusters"] == board["growing"][:3]
        later = call(base + f"/api/v1/dashboard?since={samples[-2]['time']}").json()
        assert later["samples"][:-1] == samples[-1:]
