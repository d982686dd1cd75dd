"""A service over a real RocksDB state built in two sweeps, and a small HTTP client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from neardup.core import Settings
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.service import HttpServer, LiveState, StateSource, query_app

from tests.helpers import family_pages, two_sweeps


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    url: str,
    method: str = "GET",
    body: bytes | dict[str, Any] | list[Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request, any status: redirects are not followed (the tests look at them)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return Answer(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, dict(error.headers), error.read())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def build_state(path: Path) -> State:
    """Families of near-duplicates, then the two sweeps (moved and changed pages), in an
    archive (every fetch a document: history and lost and found see each)."""
    first, second, _ = two_sweeps()
    state = State.open(path, Settings(versions="all"))
    detector = Detector(state)
    detector.process(family_pages(11))
    detector.process(first)
    detector.process(second)
    return state


@pytest.fixture
def swept_state(tmp_path: Path) -> Iterator[State]:
    with build_state(tmp_path / "state") as state:
        yield state


@contextmanager
def serving(
    state: State | StateSource,
    token: str | None = None,
    address: tuple[str, int] = ("127.0.0.1", 0),
) -> Iterator[HttpServer]:
    """``neardup serve``'s service over a state (lent by this process) or a source."""
    source = LiveState(state) if isinstance(state, State) else state
    server = HttpServer(query_app(source, token), address).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def service(swept_state: State) -> Iterator[HttpServer]:
    with serving(swept_state) as running:
        yield running
