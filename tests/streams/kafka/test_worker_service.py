"""The service of a Kafka deployment: two `neardup worker --http` processes on the test
broker, a corpus streamed in two sweeps; the workers' /metrics, and the dashboard and the
queries of a `neardup serve` beside the worker holding the detector (in a real headless
Chromium), change as documents arrive.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from neardup.core import BadRecordError, Page, Settings, page_from_json
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.running.lifetime import tied_command

from tests.helpers import SAMPLE, family_pages, two_sweeps
from tests.streams.service.conftest import call
from tests.support.browser import chromium
from tests.support.deployment import Deployment, metric, service_url, until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

#: where the test keeps its screenshot (the README shows one made by this test)
SCREENSHOT = os.environ.get("NEARDUP_SCREENSHOT")


def _lines(pages: list[Page]) -> list[bytes]:
    return [
        json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}).encode()
        for p in pages
    ]


def _documents(lines: list[bytes]) -> int:
    """Documents the embedded run counts in these lines (bad ones are dead letters)."""
    pages = []
    for line in lines:
        try:
            pages.append(page_from_json(line))
        except BadRecordError:
            continue
    with State.open(None, Settings(versions="all")) as state:  # the workers keep every fetch
        Detector(state).process(pages)
        return state.view().counters.get("documents")


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@contextmanager
def _serve(state: Path) -> Iterator[str]:
    """`neardup serve` beside a worker: the worker's directory (its detector's state)."""
    process = subprocess.Popen(
        tied_command(
            [
                *(sys.executable, "-m", "neardup.streams", "serve"),
                *("--state", str(state), "--http", "127.0.0.1:0"),
            ]
        ),
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        line = process.stderr.readline().decode()
        assert line.startswith("neardup: serving http://"), line
        yield line.split()[-1]
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
        process.stderr.close()


def test_two_workers_serve_metrics_and_serve_a_live_dashboard_and_queries(
    broker: str, tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    first, second, _ = two_sweeps()
    sample = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    sweep_one = sample + _lines(first + family_pages(21))
    sweep_two = _lines(second + family_pages(22, families=4))
    run = Deployment(broker, tmp_path)
    try:
        for name in ("a", "b"):
            run.start_worker(name, "--http", "127.0.0.1:0", "--versions", "all")  # an archive
        urls = {
            n: until(f"worker {n}'s service", lambda n=n: service_url(tmp_path / f"{n}.log"))
            for n in ("a", "b")
        }
        run.publish(sweep_one)
        documents = _documents(sweep_one)

        def owner() -> str | None:
            held = [n for n, u in urls.items() if metric(u, "neardup_documents_total")]
            return held[0] if len(held) == 1 else None

        holder = until("one worker reporting the detector's state", owner)
        other = "b" if holder == "a" else "a"
        until(
            "the first sweep in /metrics",
            lambda: metric(urls[holder], "neardup_documents_total") == documents or None,
        )
        metrics = call(urls[holder] + "/metrics").body.decode()
        assert re.search(r'neardup_stage_seconds_count\{stage="verify"\} [1-9]', metrics)
        assert re.search(r"neardup_publish_to_event_seconds_count [1-9]", metrics)
        assert 'neardup_consumer_lag_messages{partition="0",topic="' in metrics
        # each worker measures its own preparing; only the holder has the state's numbers
        assert metric(urls[other], "neardup_documents_total") is None
        assert call(urls[holder] + "/api/v1/stats").status == 404  # serve's, not a writer's

        with _serve(tmp_path / holder) as served:
            browser.get(served + "/")
            shown = f"{documents:,}"
            until(
                "the dashboard's count",
                lambda: browser.find_element(By.ID, "documents").text == shown or None,
                30,
            )
            rows = browser.find_elements(By.CSS_SELECTOR, "#largest tbody tr")
            assert rows, "the largest clusters table is empty"
            cluster_id, size = (
                rows[0].find_elements(By.TAG_NAME, "td")[0].text,
                rows[0].find_elements(By.TAG_NAME, "td")[1].text,
            )
            rows[0].click()
            members = until(
                "the member list",
                lambda: browser.find_elements(By.CSS_SELECTOR, "#members li button") or None,
                30,
            )
            assert (
                len(members) == int(size)
                and browser.find_element(By.ID, "detail-cluster").text == cluster_id
            )
            members[0].click()
            until(
                "a member's versions",
                lambda: browser.find_elements(By.CSS_SELECTOR, "#versions tbody tr") or None,
                30,
            )

            # the second sweep: the page updates without a reload
            run.publish(sweep_two)
            total = _documents(sweep_one + sweep_two)
            shown = f"{total:,}"
            until(
                "the dashboard's new count",
                lambda: browser.find_element(By.ID, "documents").text == shown or None,
            )
            assert metric(urls[holder], "neardup_documents_total") == total
            growing = browser.find_elements(By.CSS_SELECTOR, "#growing tbody tr")
            assert growing, "no cluster grew in the last window"
            screenshot = tmp_path / "dashboard.png"
            assert browser.save_screenshot(str(screenshot))
            if SCREENSHOT:
                shutil.copy(screenshot, SCREENSHOT)

            moved = quote("https://site.example/archive/2")
            found = call(f"{served}/api/v1/lost-and-found?url={moved}").json()["found"]
            assert [f["url"] for f in found] == ["https://site.example/news/2"]
            fold = {"items": ["https://site.example/blog/3", "https://mirror.example/3"]}
            groups = call(served + "/api/v1/fold", "POST", fold).json()["groups"]
            assert [[f["url"] for f in g["folded"]] for g in groups] == [
                ["https://mirror.example/3"]
            ]

        # the holder stops: the other worker takes the detector over, and its metrics say so
        run.workers[list(urls).index(holder)].send_signal(signal.SIGTERM)
        assert run.workers[list(urls).index(holder)].wait(timeout=60) == 0
        until(
            "the other worker reporting the detector's state",
            lambda: metric(urls[other], "neardup_documents_total") == total or None,
        )
        run.check_alive()
    finally:
        run.stop()
