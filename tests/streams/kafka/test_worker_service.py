"""The service of a Kafka deployment: two `neardup worker --http` processes on the test
broker, a corpus streamed in two sweeps; /metrics and the dashboard (in a real headless
Chromium) change as documents arrive; the worker that does not hold the detector redirects
to the one that does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from neardup.core import BadRecordError, Page, page_from_json
from neardup.state import State
from neardup.streams import Detector

from tests.helpers import SAMPLE, family_pages, two_sweeps
from tests.streams.service.conftest import call
from tests.support.deployment import Deployment, metric, service_url, until
from tests.support.processes import fronts_of, gone

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
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
    with State.open(None) as state:
        Detector(state).process(pages)
        return state.view().counters.get("documents")


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1300",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_two_workers_serve_metrics_a_live_dashboard_and_queries(
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
            run.start_worker(name, "--http", "127.0.0.1:0")
        urls = [
            until(f"worker {n}'s service", lambda n=n: service_url(tmp_path / f"{n}.log"))
            for n in ("a", "b")
        ]
        run.publish(sweep_one)

        def owner_and_other() -> tuple[str, str] | None:
            answers = [call(u + "/api/v1/stats") for u in urls]
            statuses = [a.status for a in answers]
            if sorted(statuses) != [200, 307]:
                return None
            owner = urls[statuses.index(200)]
            other = urls[statuses.index(307)]
            assert answers[statuses.index(307)].headers["Location"] == owner + "/api/v1/stats"
            return owner, other

        owner, other = until("one worker answering, the other redirecting", owner_and_other)
        documents = _documents(sweep_one)
        until(
            "the first sweep in /metrics",
            lambda: metric(owner, "neardup_documents_total") == documents or None,
        )
        metrics = call(owner + "/metrics").body.decode()
        assert re.search(r'neardup_stage_seconds_count\{stage="verify"\} [1-9]', metrics)
        assert re.search(r"neardup_publish_to_event_seconds_count [1-9]", metrics)
        assert 'neardup_consumer_lag_messages{partition="0",topic="' in metrics
        # each worker measures its own preparing; only the owner has the state's numbers
        assert metric(other, "neardup_documents_total") is None

        # the dashboard, opened on the worker that does not hold the detector
        browser.get(other + "/")
        assert browser.current_url.startswith(owner)  # followed the redirect
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
        assert metric(owner, "neardup_documents_total") == total
        growing = browser.find_elements(By.CSS_SELECTOR, "#growing tbody tr")
        assert growing, "no cluster grew in the last window"
        screenshot = tmp_path / "dashboard.png"
        assert browser.save_screenshot(str(screenshot))
        if SCREENSHOT:
            shutil.copy(screenshot, SCREENSHOT)

        # queries through the other worker: followed redirects, the owner's answers
        moved = quote("https://site.example/archive/2")
        with urllib.request.urlopen(
            f"{other}/api/v1/lost-and-found?url={moved}", timeout=30
        ) as answer:
            found = json.load(answer)["found"]
        assert [f["url"] for f in found] == ["https://site.example/news/2"]
        # a 307 keeps the method and body (urllib follows it for GET only: sent again here)
        fold = {"items": ["https://site.example/blog/3", "https://mirror.example/3"]}
        redirected = call(other + "/api/v1/fold", "POST", fold)
        assert redirected.status == 307
        assert redirected.headers["Location"] == owner + "/api/v1/fold"
        groups = call(redirected.headers["Location"], "POST", fold).json()["groups"]
        assert [[f["url"] for f in g["folded"]] for g in groups] == [["https://mirror.example/3"]]

        # the owner answers state queries from a front (a follower child), the other none
        worker = dict(zip(urls, run.workers, strict=True))
        owner_fronts = fronts_of(worker[owner].pid)
        assert len(owner_fronts) == 1
        assert not fronts_of(worker[other].pid), "a front on a worker that redirects"
        # the owner stops: the other worker takes the detector over and hands its address
        # to a front of its own
        worker[owner].send_signal(signal.SIGTERM)
        assert worker[owner].wait(timeout=60) == 0
        assert gone(owner_fronts[0]), "the front outlived its worker"

        def answered_by_the_other() -> bool | None:
            answer = call(other + "/api/v1/stats")
            return (answer.status == 200 and answer.json()["documents"] == total) or None

        until("the other worker answering from the detector", answered_by_the_other)
        assert len(fronts_of(worker[other].pid)) == 1
        run.check_alive()
    finally:
        run.stop()
