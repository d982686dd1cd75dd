"""/metrics: the state's numbers equal the state, every name is documented, and every metric
the Grafana dashboard queries exists."""

from __future__ import annotations

import json
import re

from neardup.state import State
from neardup.streams.service import HttpServer
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import REPO

from .conftest import call


def _scrape(service: HttpServer) -> dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]]:
    """Exposed name -> (type, labels -> value) of one scrape."""
    answer = call(service.url + "/metrics")
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("text/plain")
    found: dict[str, tuple[str, dict[tuple[tuple[str, str], ...], float]]] = {}
    for family in text_string_to_metric_families(answer.body.decode()):
        name = family.name + ("_total" if family.type == "counter" else "")
        values = {
            tuple(sorted(s.labels.items())): s.value
            for s in family.samples
            if s.name in (name, family.name)
        }
        found[name] = (family.type, values)
    return found


def _documented() -> dict[str, str]:
    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    table = text.split("<!-- metrics: start -->")[1].split("<!-- metrics: end -->")[0]
    return dict(re.findall(r"^\| `(neardup_[a-z_]+)` \| (\w+) \|", table, re.MULTILINE))


def test_the_state_numbers_are_the_state(service: HttpServer, swept_state: State) -> None:
    scraped = _scrape(service)
    view = swept_state.view()
    groups = view.clusters.members()

    def value(name: str, **labels: str) -> float:
        return scraped[name][1][tuple(sorted(labels.items()))]

    assert value("neardup_documents_total") == view.counters.get("documents") == 38
    assert value("neardup_clusters") == len(groups)
    assert value("neardup_documents_in_clusters") == sum(map(len, groups.values()))
    assert value("neardup_largest_cluster_documents") == max(map(len, groups.values()))
    duplicates = sum(value("neardup_duplicates_total", method=m) for m in ("exact", "near"))
    assert duplicates <= view.counters.get("duplicates")
    assert value("neardup_duplicates_total", method="exact") >= 1  # the mirrored page
    keys = sum(1 for _ in swept_state.store.keys("supershingles"))
    assert value("neardup_index_keys", index="supershingles") == keys
    assert value("neardup_state_bytes") > 0
    for what in ("pages_changed", "pages_removed", "versions_ignored"):
        assert value("neardup_versions_total", what=what) == view.counters.get(what)


def test_every_metric_is_documented_with_its_type(service: HttpServer) -> None:
    scraped = {name: kind for name, (kind, _) in _scrape(service).items()}
    assert scraped == _documented()


def test_every_metric_the_grafana_dashboard_queries_exists(service: HttpServer) -> None:
    dashboard = json.loads((REPO / "deploy/grafana/dashboards/neardup.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert len(exprs) >= 10
    exposed = set(_scrape(service))
    histograms = {name for name, kind in _documented().items() if kind == "histogram"}
    for expr in exprs:
        for name in re.findall(r"neardup_[a-z_]+", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            assert name in exposed or base in histograms, f"{name} in {expr!r} is not exposed"


def test_what_re_fetches_did_is_counted_by_what() -> None:
    """``neardup_versions_total``: each of the state's version counters under its label
    (the dashboard's changes and removals a minute are its rate)."""
    from neardup.streams.service.metrics import _totals

    families = {family.name: family for family in _totals({"pages_changed": 3, "pages_removed": 2})}
    samples = {s.labels["what"]: s.value for s in families["neardup_versions"].samples}
    assert samples["pages_changed"] == 3 and samples["pages_removed"] == 2
    assert samples["stale_versions"] == 0 and len(samples) == 6
    # the state counts live urls; the documents taken in never go down as versions depart
    assert families["neardup_documents"].samples[0].value == 0 + 3 + 2
