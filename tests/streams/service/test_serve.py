"""`neardup serve` reads a state directory that `neardup run` is writing (a RocksDB
secondary instance), and never creates one."""

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
