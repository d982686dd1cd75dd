"""The service and the dashboard of a state of items (item mode): the mode in the answers, each
cluster named by its merged record, the page worded for items, without the parts that only
pages have (checked in a headless Chromium); a state of pages answers as it did."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.state import State
from neardup.state.items import check_or_store_schema, stored_schema
from neardup.streams.running import reports
from neardup.streams.running.embedded import run
from neardup.streams.service import HttpServer

from bench.items import listings
from tests.support.browser import chromium

from .conftest import call, serving

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "bench" / "items" / "schemas" / "listings.toml"
#: equal records of one place under ids of their own: a cluster past the labels' bound
COPIES = 40


def _records() -> list[dict[str, Any]]:
    records = [listing.record for listing in listings.generate(150, seed=3)]
    place = {key: value for key, value in records[0].items() if key not in ("id", "url")}
    return records + [{**place, "id": f"copy{n}"} for n in range(COPIES)]


@pytest.fixture(scope="module")
def items_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, State]]:
    """The service over a state of listings run by the embedded runner, and the state."""
    folder = tmp_path_factory.mktemp("items")
    inputs = folder / "items.jsonl"
    inputs.write_text("".join(json.dumps(record) + "\n" for record in _records()))
    with State.open(folder / "state") as state:
        schema = check_or_store_schema(state.store, ItemSchema.from_toml(SCHEMA.read_text()))
        run(state, [str(inputs)], items=schema)
        with serving(state) as service:
            yield service.url, state


def _get(base: str, path: str) -> Any:
    answer = call(base + "/api/v1" + path)
    assert answer.status == 200, answer.body
    return answer.json()


def _merged_name(base: str, cluster: str) -> str:
    return str(_get(base, f"/items/merged/{cluster}")["record"]["name"])


def test_the_api_says_item_mode_and_names_each_cluster_by_its_merged_record(
    items_served: tuple[str, State],
) -> None:
    base, state = items_served
    names = {str(record["id"]): record["name"] for record in _records()}
    board = _get(base, "/dashboard")
    assert board["mode"] == "items" and board["label_field"] == "name"
    assert _get(base, "/stats")["mode"] == "items"
    largest = board["largest"]
    assert largest[0]["size"] > COPIES > reports.LABEL_MEMBERS
    assert len(largest) == 10 and board["growing"]
    for cluster in largest + board["growing"]:
        assert cluster["label"] == _merged_name(base, cluster["cluster"])
    assert _get(base, "/clusters/largest?limit=3")["clusters"] == largest[:3]
    assert _get(base, "/clusters/growing")["clusters"] == board["growing"]

    for summary in largest[:3]:
        detail = _get(base, f"/clusters/{summary['cluster']}?limit=1000")
        assert detail["label"] == summary["label"]
        assert len(detail["members"]) == detail["size"] == summary["size"]
        assert all(m["label"] == names[m["url"]] for m in detail["members"])

    # a label reads the records of a cluster's first members only
    read: list[int] = []
    view = state.view()
    get_many = view.items.get_many

    def counted(doc_ids: Sequence[int]) -> list[PreparedItem | None]:
        read.append(len(doc_ids))
        return get_many(doc_ids)

    view.items.get_many = counted  # type: ignore[method-assign]
    schema = stored_schema(state.store)
    assert schema is not None
    label = reports.ItemLabels(view, schema).cluster(int(largest[0]["cluster"], 16))
    assert label == largest[0]["label"] and read == [reports.LABEL_MEMBERS]


def test_a_state_of_pages_answers_without_labels(service: HttpServer) -> None:
    board = _get(service.url, "/dashboard")
    assert board["mode"] == "pages" and "label_field" not in board
    assert _get(service.url, "/stats")["mode"] == "pages"
    clusters = board["largest"] + board["growing"]
    assert clusters and not any("label" in cluster for cluster in clusters)
    detail = _get(service.url, f"/clusters/{board['largest'][0]['cluster']}")
    assert "label" not in detail and not any("label" in m for m in detail["members"])


def test_the_dashboard_of_items_speaks_of_items(items_served: tuple[str, State]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    base, state = items_served
    items = state.view().counters.get("documents")
    largest = _get(base, "/dashboard")["largest"]
    with chromium() as browser:
        browser.get(base + "/")
        WebDriverWait(browser, 10).until(
            lambda b: (
                b.find_element(By.ID, "documents").text == f"{items:,}"
                and b.find_elements(By.CSS_SELECTOR, "#largest tbody tr")
            )
        )
        assert browser.title == "neardup — item clusters"
        text = browser.find_element(By.TAG_NAME, "body").text
        assert "items in clusters" in text and "items / s" in text
        assert "document" not in text.lower() and "URL" not in text
        # what only pages have is not shown
        assert not browser.find_element(By.ID, "contained").is_displayed()
        legend = browser.find_elements(By.CSS_SELECTOR, "#rate-legend span")
        assert [span.text for span in legend] == ["merges", "splits", "matched items"]
        headers = browser.find_elements(By.CSS_SELECTOR, "#largest th")
        assert [h.text for h in headers] == ["cluster", "size", "name"]

        rows = browser.find_elements(By.CSS_SELECTOR, "#largest tbody tr")
        shown = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
        assert shown == [[c["cluster"], f"{c['size']:,}", c["label"]] for c in largest]
        assert all(c["label"] for c in largest)

        rows[1].click()
        WebDriverWait(browser, 10).until(
            lambda b: (
                b.find_element(By.ID, "detail-cluster").text == largest[1]["cluster"]
                and b.find_elements(By.CSS_SELECTOR, "#members li")
            )
        )
        assert browser.find_element(By.ID, "detail-label").text == largest[1]["label"]
        assert browser.find_element(By.ID, "detail-size").text == f"{largest[1]['size']} items"
        detail = _get(base, f"/clusters/{largest[1]['cluster']}")
        members = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#members li")]
        assert members == [f"{m['url']} · {m['label']}" for m in detail["members"]]
        # an item has no versions: its members are not links to them
        assert not browser.find_elements(By.CSS_SELECTOR, "#members button")
        assert not browser.find_element(By.ID, "versions-box").is_displayed()
