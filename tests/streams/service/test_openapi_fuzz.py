"""Schema-driven fuzzing (schemathesis) of the JSON API from its own OpenAPI description: no
5xx, every answer in the schema, every invalid request refused with a 4xx. Bounded: a fixed
number of examples per operation, derandomized."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from neardup.streams.service import API_PREFIX
from neardup.streams.service.openapi import openapi

from .conftest import build_state, serving

pytestmark = pytest.mark.slow

schema = schemathesis.openapi.from_dict(openapi())


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "state"
    with build_state(path) as state, serving(state) as service:
        yield service.url + API_PREFIX


@schema.parametrize()
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_keeps_to_its_description(case: schemathesis.Case, fuzzed: str) -> None:
    case.call_and_validate(base_url=fuzzed)


def test_the_description_is_served(fuzzed: str) -> None:
    import json
    import urllib.request

    with urllib.request.urlopen(fuzzed + "/openapi.json", timeout=10) as answer:
        assert json.load(answer) == openapi()
