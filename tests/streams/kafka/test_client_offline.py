"""The Kafka client without a broker: messages, errors, and the clusters of the embedded
run's events through the command line."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from neardup.core import Page
from neardup.streams.cli import main
from neardup.streams.kafka import client as kafka_client
from neardup.streams.kafka.client import clusters_from_events, page_message

from tests.helpers import SAMPLE


def test_a_page_travels_as_the_input_contract_keyed_by_url() -> None:
    page = Page("https://a.example/é", "<p>x</p>", "2026-01-02T00:00:00.000000Z", "text/html")
    key, value = page_message(page)
    assert key == "https://a.example/é".encode()
    assert json.loads(value) == {
        "url": page.url,
        "content": page.content,
        "fetched_at": page.fetched_at,
        "content_type": "text/html",
    }
    assert json.loads(page_message(Page("u", "c"))[1]) == {"url": "u", "content": "c"}


def test_clusters_rebuilt_from_the_events_of_neardup_run_equal_neardup_clusters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    state = str(tmp_path / "state")
    assert main(["run", "--quiet", "--state", state, "--events", str(events), str(SAMPLE)]) == 0
    assert main(["clusters", "--state", state]) == 0
    expected = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rebuilt = clusters_from_events(json.loads(line) for line in events.read_text().splitlines())
    assert len(expected) > 10
    assert rebuilt == expected


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_an_unreachable_broker_is_a_clear_error_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(kafka_client, "CONNECT_SECONDS", 1.0)
    broker = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    assert main(["publish", "--broker", broker, str(SAMPLE)]) == 2
    assert main(["events", "--broker", broker]) == 2
    assert time.monotonic() - started < 8
    err = capsys.readouterr().err
    assert err.count(f"neardup: error: the Kafka broker {broker} did not answer within 1 s") == 2


def test_clusters_needs_exactly_one_source(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NEARDUP_BROKER", raising=False)
    assert main(["clusters"]) == 2
    assert "clusters needs --state DIR or --broker HOST:PORT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["clusters", "--state", "x", "--broker", "127.0.0.1:9092"])
    assert "not allowed with argument" in capsys.readouterr().err
    monkeypatch.setenv("NEARDUP_BROKER", "127.0.0.1:9092")
    assert main(["clusters", "--all"]) == 2
    assert "--all needs --state" in capsys.readouterr().err
