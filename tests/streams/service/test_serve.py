"""`neardup serve` reads a state directory that `neardup run` is writing (a RocksDB
secondary instance), and never creates one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pytest
from neardup.core import Page
from neardup.streams.service import Fronted, LiveState

from tests.helpers import family_pages, two_sweeps
from tests.support.processes import HAS_PROC, fronts_of, gone

from .conftest import build_state, call

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
        [*NEARDUP, "serve", "--state", str(state), "--http", "127.0.0.1:0"],
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
        [*NEARDUP, "run", "--quiet", "--state", str(state), "-"],
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


@contextmanager
def _running_with_http(state: Path, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    run = subprocess.Popen(
        [
            *NEARDUP,
            "run",
            "--quiet",
            "--batch-size",
            "16",
            "--state",
            str(state),
            "--http",
            "127.0.0.1:0",
            *options,
            "-",
        ],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert run.stderr is not None
        line = run.stderr.readline().decode()
        assert line.startswith("neardup: serving http://"), line
        yield run, line.split()[-1]
    finally:
        if run.poll() is None:
            run.kill()
        run.wait(timeout=60)
        assert run.stderr is not None and run.stdin is not None
        run.stderr.close()
        run.stdin.close()


@pytest.mark.skipif(not HAS_PROC, reason="reads the process tree in /proc")
def test_run_serves_queries_from_a_follower_front_and_its_own_metrics(tmp_path: Path) -> None:
    """`run --http`: from the first state query on, a `serve` child answers at the run's
    address while the run writes, and relays to the run what the state does not say (its
    metrics, the dashboard's timeline); it ends with the run."""
    first, second, _ = two_sweeps()
    before = family_pages(5)
    with _running_with_http(tmp_path / "state") as (run, base):
        assert call(base + "/metrics").status == 200
        assert not fronts_of(run.pid), "no front for a client that only scrapes the metrics"
        stdin: IO[bytes] = run.stdin  # type: ignore[assignment]
        later = family_pages(6, families=10, size=6)
        stdin.write(_lines(before + first + later[:30]))
        stdin.flush()
        # batches of 16: each is ingested once the next has come (the last at the end)
        _wait(base + "/api/v1/stats", lambda s: s["documents"] >= 48)
        fronts = fronts_of(run.pid)
        assert len(fronts) == 1, "one front, since the first state query"
        versions = _wait(
            base + "/api/v1/history?url=" + quote("https://site.example/news/1"),
            lambda h: len(h["versions"]) >= 1,
        )["versions"]
        assert versions[0]["fetched_at"].startswith("2026-01-01T00:00:00")
        similar = call(
            base + "/api/v1/similar", "POST", {"content": first[0].content, "limit": 3}
        ).json()
        assert similar["matches"][0]["url"] == "https://site.example/news/1"
        # the metrics are the run's: only it times its batches' stages
        metrics = call(base + "/metrics").body.decode()
        assert 'neardup_stage_seconds_count{stage="prepare"}' in metrics
        assert run.poll() is None, "the run is still writing"
        stdin.write(_lines(second + later[30:]))
        stdin.close()
        assert run.wait(timeout=120) == 0
        assert gone(fronts[0]), "the front ends with the run"
    with pytest.raises(urllib.error.URLError, match="refused"):
        call(base + "/healthz")


@pytest.mark.skipif(not HAS_PROC, reason="reads the process tree in /proc")
def test_a_killed_run_takes_its_front_along_and_a_token_guards_it(tmp_path: Path) -> None:
    with _running_with_http(tmp_path / "state", "--api-token", "sesame") as (run, base):
        stdin: IO[bytes] = run.stdin  # type: ignore[assignment]
        stdin.write(_lines(family_pages(3) + family_pages(4)))  # 60: two batches ingested
        stdin.flush()
        assert call(base + "/healthz").status == 200
        assert call(base + "/api/v1/stats").status == 401
        assert call(base + "/metrics").status == 401
        bearer = {"Authorization": "Bearer sesame"}
        _wait_with(base + "/api/v1/stats", bearer, lambda s: s["documents"] >= 16)
        relayed = call(base + "/metrics", headers=bearer)
        assert relayed.status == 200 and b"neardup_documents_total" in relayed.body
        refused = call(base + "/metrics", "POST", b"", headers=bearer)  # the run's answer
        assert refused.status == 405 and refused.headers["Allow"] == "GET, HEAD"
        front = fronts_of(run.pid)[0]
        run.kill()  # no clean-up: the front sees its standard input close
        run.wait(timeout=30)
        assert gone(front), "the front outlived a killed run"


def _wait_with(url: str, headers: dict[str, str], check: Any, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        answer = call(url, headers=headers)
        if answer.status == 200 and check(answer.json()):
            return answer.json()
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} never passed the check: {answer.status} {answer.body!r}")
        time.sleep(0.2)


@pytest.mark.skipif(not HAS_PROC, reason="reads the process tree in /proc")
def test_a_front_that_dies_is_started_again_at_the_same_address(tmp_path: Path) -> None:
    with _running_with_http(tmp_path / "state") as (run, base):
        stdin: IO[bytes] = run.stdin  # type: ignore[assignment]
        stdin.write(_lines(family_pages(3) + family_pages(4)))
        stdin.flush()
        _wait(base + "/api/v1/stats", lambda s: s["documents"] >= 16)
        first = fronts_of(run.pid)[0]
        os.kill(first, signal.SIGKILL)
        assert gone(first)
        # the run holds the socket: the next request waits for the next front
        _wait(base + "/api/v1/stats", lambda s: s["documents"] >= 16)
        fronts = fronts_of(run.pid)
        assert len(fronts) == 1 and fronts[0] != first
        stdin.close()
        assert run.wait(timeout=120) == 0
        assert gone(fronts[0])


@pytest.mark.skipif(not HAS_PROC, reason="reads the process tree in /proc")
def test_a_run_whose_front_keeps_dying_answers_at_its_address_itself(tmp_path: Path) -> None:
    """Past five starts of its front in a minute, the run serves its address again rather
    than leave requests in the socket's backlog."""
    with _running_with_http(tmp_path / "state") as (run, base):
        stdin: IO[bytes] = run.stdin  # type: ignore[assignment]
        stdin.write(_lines(family_pages(3) + family_pages(4)))
        stdin.flush()
        _wait(base + "/api/v1/stats", lambda s: s["documents"] >= 16)
        killed: set[int] = set()
        deadline = time.monotonic() + 60
        while len(killed) < 5:  # each as soon as it is started
            assert time.monotonic() < deadline, f"only {len(killed)} fronts started"
            for pid in fronts_of(run.pid):
                if pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.05)
        stats = _wait(base + "/api/v1/stats", lambda s: s["documents"] >= 16, seconds=10)
        assert stats["documents"] >= 16
        similar = call(base + "/api/v1/similar", "POST", {"content": "a b c d e f g h"})
        assert similar.status == 200
        time.sleep(0.5)
        assert not fronts_of(run.pid), "no sixth front"
        assert run.poll() is None
        stdin.close()
        assert run.wait(timeout=120) == 0
        assert run.stderr is not None
        assert b"answers at its address itself" in run.stderr.read()


@pytest.mark.skipif(not HAS_PROC, reason="reads the process tree in /proc")
def test_a_service_hands_its_address_to_a_front_only_while_it_holds_the_state(
    tmp_path: Path,
) -> None:
    """A worker's service (``Fronted``): a state query starts a front only while the worker
    holds the detector; when it lets go, the front stops and the worker serves its address
    again, and holding the state again starts another front on the same address."""
    with build_state(tmp_path / "state") as state:
        documents = state.view().counters.get("documents")
        source = LiveState(why_none="not held here")
        fronted = Fronted.start(source, tmp_path / "state", ("127.0.0.1", 0), None)
        base = fronted.public.url
        try:
            refused = call(base + "/api/v1/stats")
            assert refused.status == 503 and "not held here" in refused.json()["error"]["message"]
            assert not fronts_of(os.getpid()), "no front for a state this process does not hold"

            source.attach(state)
            _wait(base + "/api/v1/stats", lambda s: s["documents"] == documents)
            first = fronts_of(os.getpid())
            assert len(first) == 1, "one front, since the first state query it held"

            source.detach("let go")
            fronted.withdrawn()
            assert gone(first[0]), "the front stopped when the state was let go"
            # answered in this process again (a front would answer from the directory)
            let_go = call(base + "/api/v1/stats")
            assert let_go.status == 503 and "let go" in let_go.json()["error"]["message"]
            assert not fronts_of(os.getpid())

            source.attach(state)
            _wait(base + "/api/v1/stats", lambda s: s["documents"] == documents)
            second = fronts_of(os.getpid())
            assert len(second) == 1 and second != first, "another front, at the same address"
            metrics = call(base + "/metrics")  # relayed to this process's own service
            assert metrics.status == 200 and b"neardup_documents_total" in metrics.body
        finally:
            source.detach("the test ends")
            fronted.stop()
        assert all(gone(pid) for pid in second)
    with pytest.raises(urllib.error.URLError, match="refused"):
        call(base + "/healthz")
