"""The JSON API end to end, over HTTP, on a real RocksDB state built in two sweeps: every
endpoint gives the CLI's answer, and every bad request a JSON 4xx."""

from __future__ import annotations

import gc
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from neardup.core import Page, Settings
from neardup.state import Sample, State
from neardup.streams import Detector
from neardup.streams.running import queries, reports
from neardup.streams.running.embedded import run as embedded_run
from neardup.streams.service import HttpServer, LiveState, query_app

from tests.helpers import at_second, family_pages, random_text, two_sweeps
from tests.support.browser import chromium

from .conftest import call, serving

API = "/api/v1"


def _get(service: HttpServer, path: str) -> Any:
    answer = call(service.url + API + path)
    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    return answer.json()


def _post(service: HttpServer, path: str, body: Any) -> Any:
    answer = call(service.url + API + path, "POST", body)
    assert answer.status == 200, answer.body
    return answer.json()


def test_lost_and_found_history_and_cluster_answers_are_the_cli_answers(
    service: HttpServer, swept_state: State
) -> None:
    moved = "https://site.example/archive/2"
    found = _get(service, f"/lost-and-found?url={quote(moved)}")
    assert found == queries.lost_and_found(swept_state, moved, 10)
    assert [f["url"] for f in found["found"]] == ["https://site.example/news/2"]
    assert found["found"][0]["fetched_at"].startswith("2026-01-01")

    changed = "https://site.example/news/1"
    history = _get(service, f"/history?url={quote(changed)}")
    assert history == queries.history(swept_state, changed)
    versions = history["versions"]
    assert [v["fetched_at"][:7] for v in versions] == ["2026-01", "2026-02"]
    assert versions[0]["resemblance_to_previous"] is None
    assert 0.3 < versions[1]["resemblance_to_previous"] < 1.0  # 5 % of its words changed

    of = _get(service, f"/cluster-of?url={quote(moved)}")
    assert of == queries.cluster_of_url(swept_state, moved)
    assert of["size"] == 2


def test_a_cluster_pages_through_its_members(service: HttpServer, swept_state: State) -> None:
    largest = _get(service, "/clusters/largest?limit=3")
    assert largest == {"clusters": queries.largest_clusters(swept_state, 3)}
    top = largest["clusters"][0]
    paged: list[str] = []
    answer = _get(service, f"/clusters/{top['cluster']}?limit=2")
    while True:
        assert len(answer["members"]) <= 2
        paged += [m["url"] for m in answer["members"]]
        if answer["next"] is None:
            break
        answer = _get(service, f"/clusters/{top['cluster']}?limit=2&after={answer['next']}")
    whole = queries.cluster_by_id(swept_state, int(top["cluster"], 16), limit=1000)
    assert paged == [m["url"] for m in whole["members"]]
    assert len(paged) == top["size"]


def test_similar_documents_to_posted_content_and_to_a_stored_url(
    service: HttpServer, swept_state: State
) -> None:
    _, _, texts = two_sweeps()
    content = " ".join(texts["three"])
    matches = _post(service, "/similar", {"content": content, "limit": 5})["matches"]
    page = Page(url="query:", content=content, content_type="text/html")
    assert matches == reports.similar_to_content(swept_state, page, 5, 0.0)
    # the first stored copy (the exact copy stored after it shares its record)
    assert matches[0]["url"] == "https://site.example/blog/3"
    assert matches[0]["resemblance"] == 1.0 and matches[0]["method"] == "exact"
    before = swept_state.view().counters.get("documents")
    stored = _get(service, f"/similar?url={quote('https://mirror.example/3')}")
    assert [(m["url"], m["resemblance"]) for m in stored["matches"]] == [
        ("https://site.example/blog/3", 1.0)
    ]
    assert swept_state.view().counters.get("documents") == before  # queries change nothing


def test_similar_on_a_simhash_state_gives_the_distance_as_the_cli(tmp_path: Path) -> None:
    pages = family_pages(3)
    with State.open(tmp_path / "sim", Settings(sketch="simhash")) as state:
        Detector(state).process(pages)
        with serving(state) as service:
            words = pages[0].content.split()
            edited = " ".join([*words[:-1], "changed"])  # one word: a near-exact copy
            matches = _post(service, "/similar", {"content": edited})["matches"]
        query = Page(url="query:", content=edited, content_type="text/html")
        assert matches == reports.similar_to_content(state, query, 10, 0.0)
    near = [match for match in matches if match["method"] == "near"]
    assert near and all(0 <= match["distance"] <= 3 for match in near)


def test_similar_with_containment_finds_the_sources_of_an_excerpt(
    service: HttpServer, swept_state: State
) -> None:
    _, _, texts = two_sweeps()
    words = texts["three"]
    excerpt = " ".join(words[len(words) // 3 : len(words) // 3 + 40])
    body = {"content": excerpt, "containment": 0.6, "limit": 5}
    matches = _post(service, "/similar", body)["matches"]
    page = Page(url="query:", content=excerpt, content_type="text/html")
    assert matches == reports.similar_to_content(swept_state, page, 5, 0.0, 0.6)
    assert matches and all(m["containment"] >= 0.6 for m in matches)
    assert "https://site.example/blog/3" in {m["url"] for m in matches}
    assert [m["containment"] for m in matches] == sorted(
        (m["containment"] for m in matches), reverse=True
    )


def test_similar_with_excerpts_answers_as_the_cli(service: HttpServer, swept_state: State) -> None:
    _, _, texts = two_sweeps()
    digest = " ".join(texts["three"] + texts["other"] + texts["fresh"])
    matches = _post(service, "/similar", {"content": digest, "excerpts": True})["matches"]
    page = Page(url="query:", content=digest, content_type="text/html")
    assert matches == reports.similar_to_content(swept_state, page, 10, 0.0, None, True)
    assert {"https://site.example/blog/3", "https://other.example/x"} <= {
        m["url"] for m in matches if m["contains"] >= 0.9
    }


def test_folding_a_result_page_keeps_the_heads_in_order(
    service: HttpServer, swept_state: State
) -> None:
    _, _, texts = two_sweeps()
    items: list[Any] = [
        "https://site.example/blog/3",
        "https://other.example/x",
        "https://mirror.example/3",  # exact copy of the first: folded under it
        {"url": "inline:copy", "content": " ".join(texts["other"])},  # near: under the second
        "https://nowhere.example/",  # unknown: a group of its own
        "https://site.example/archive/2",
        "https://site.example/news/2",  # its latest version is a new page: unrelated
    ]
    groups = _post(service, "/fold", {"items": items})["groups"]
    as_pages: list[str | Page] = [
        i if isinstance(i, str) else Page(url=i["url"], content=i["content"]) for i in items
    ]
    threshold = swept_state.settings.threshold
    assert groups == queries.fold(swept_state, as_pages, threshold)
    heads = [g["head"]["url"] for g in groups]
    assert heads == [
        "https://site.example/blog/3",
        "https://other.example/x",
        "https://nowhere.example/",
        "https://site.example/archive/2",
        "https://site.example/news/2",
    ]
    assert [f["url"] for f in groups[0]["folded"]] == ["https://mirror.example/3"]
    assert [f["url"] for f in groups[1]["folded"]] == ["inline:copy"]


def test_stats_and_dashboard_read_the_state_counters(
    service: HttpServer, swept_state: State
) -> None:
    stats = _get(service, "/stats")
    expected = reports.statistics(swept_state, flush=False)
    assert {k: v for k, v in stats.items() if k != "disk_bytes"} == {
        k: v for k, v in expected.items() if k not in ("disk_bytes", "disk_bytes_per_document")
    } | {"disk_bytes_per_document": stats["disk_bytes_per_document"]}
    groups = swept_state.view().clusters.members()
    assert stats["clusters"] == len(groups)
    assert stats["documents_in_clusters"] == sum(map(len, groups.values()))
    board = _get(service, "/dashboard")
    assert sum(d["clusters"] for d in board["size_distribution"]) == len(groups)
    # the fixture's state was built without its history: the state as it is now, alone
    assert [s["documents"] for s in board["samples"]] == [stats["documents"]]
    assert board["largest"] == queries.largest_clusters(swept_state, 10)


def test_the_dashboard_samples_count_the_pages_changed_and_removed(tmp_path: Path) -> None:
    """With versions = latest, the samples the writer records carry the state's counts of
    re-fetched pages whose content changed and of deleted pages (the page draws them a
    minute); a sample stored before they were sampled reads them as 0."""
    rng = np.random.default_rng(11)
    urls = [f"https://crawl.example/{n}" for n in range(5)]
    crawls = [
        [
            {"url": url, "content": " ".join(random_text(rng, 80)), "fetched_at": at_second(1)}
            for url in urls
        ],
        [
            # two changes, one deletion, one fetch of the same content, one older fetch
            {"url": urls[0], "content": " ".join(random_text(rng, 80)), "fetched_at": at_second(2)},
            {"url": urls[1], "content": " ".join(random_text(rng, 80)), "fetched_at": at_second(2)},
            {"url": urls[2], "deleted": True, "fetched_at": at_second(2)},
            {"url": urls[3], "unchanged": True, "fetched_at": at_second(2)},
            {"url": urls[4], "content": "older", "fetched_at": at_second(0)},
        ],
    ]
    with State.open(tmp_path / "state", Settings(versions="latest")) as state:
        old = state.view()
        old.timeline.append(Sample(1.0, {"documents": 1, "cluster_merges": 2}))
        old.commit()
        for number, records in enumerate(crawls):
            path = tmp_path / f"crawl{number}.jsonl"
            path.write_text("".join(json.dumps(record) + "\n" for record in records))
            embedded_run(state, [str(path)], batch_size=2, history_every=0.0)
        counters = state.view().counters
        changed, removed = counters.get("pages_changed"), counters.get("pages_removed")
        assert (changed, removed) == (2, 1)
        with serving(state) as service:
            samples = _get(service, "/dashboard")["samples"]
    counts = [(sample["changed"], sample["removed"]) for sample in samples]
    # the old sample, the first crawl's (a sample a batch), the second's, and the state now
    assert samples[0]["time"] == 1.0 and samples[0]["merges"] == 2
    assert counts[0] == (0, 0) and counts[1:4] == [(0, 0)] * 3
    assert counts[-2] == counts[-1] == (changed, removed)
    assert counts == sorted(counts) and len(set(counts)) > 2


def test_the_page_draws_changes_and_removals_a_minute_for_pages(service: HttpServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    with chromium() as browser:
        browser.get(service.url + "/")
        legend = WebDriverWait(browser, 10).until(
            lambda b: [span.text for span in b.find_elements(By.CSS_SELECTOR, "#rate-legend span")]
        )
    methods = ["exact", "canonical", "shingle", "near", "item"]
    assert legend == [
        "merges",
        "splits",
        *(f"{m} duplicates" for m in methods),
        "changed",
        "removed",
    ]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "says"),
    [
        ("POST", "/similar", b"{not json", 400, "JSON is malformed"),
        ("POST", "/similar", b"[1, 2]", 400, "Expected `object`, got `array`"),
        (
            "POST",
            "/similar",
            {"content_type": "text/html"},
            400,
            "missing required field `content`",
        ),
        ("POST", "/similar", {"content": 42}, 400, "Expected `str`, got `int` - at `$.content`"),
        ("POST", "/similar", {"content": "x", "limit": True}, 400, "got `bool` - at `$.limit`"),
        ("POST", "/similar", {"content": "x", "colour": "red"}, 400, "unknown field `colour`"),
        ("POST", "/similar", {"content": "x", "limit": 1001}, 400, "<= 1000.0 - at `$.limit`"),
        ("POST", "/similar", {"content": "x", "limit": 2.5}, 400, "multiple of 1"),
        ("POST", "/similar", {"content": "x", "min_resemblance": 2}, 400, "<= 1.0"),
        ("POST", "/similar", {"content": "x", "containment": 0}, 400, "> 0.0"),
        ("POST", "/similar", {"content": "x", "excerpts": 1}, 400, "Expected `bool`"),
        ("POST", "/similar", b"x" * (5 << 20), 413, "over the limit of 4194304 bytes"),
        ("POST", "/fold", {"items": ["u"] * 201}, 400, "length <= 200 - at `$.items`"),
        ("POST", "/fold", {"items": [3]}, 400, "got `int` - at `$.items[0]`"),
        ("POST", "/fold", {"items": [{"url": "u"}]}, 400, "field `content` - at `$.items[0]`"),
        ("POST", "/fold", {"items": "u"}, 400, "Expected `array`, got `str`"),
        ("GET", "/history", None, 400, "url is required"),
        ("GET", "/history?url=https://nowhere.example/", None, 404, "not in the state"),
        ("GET", "/lost-and-found?url=x&limit=0", None, 400, "from 1 to"),
        ("GET", "/lost-and-found?url=x&limit=ten", None, 400, "not an integer"),
        ("GET", "/cluster-of?url=a&url=b", None, 400, "given 2 times"),
        ("GET", "/clusters/zz", None, 400, "16 hex digits"),
        ("GET", "/clusters/00000000000000ff", None, 404, "not in the state"),
        ("GET", "/dashboard?since=nan", None, 400, "finite"),
        ("DELETE", "/stats", None, 405, "use GET"),
        ("GET", "/fold", None, 405, "use POST"),
        ("GET", "/nothing", None, 404, "no endpoint"),
    ],
)
def test_bad_requests_get_a_json_4xx_and_the_server_goes_on(
    service: HttpServer, method: str, path: str, body: Any, status: int, says: str
) -> None:
    answer = call(service.url + API + path, method, body)
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    error = answer.json()["error"]
    assert error["status"] == status and says in error["message"]
    if status == 405:
        assert answer.headers["Allow"] in ("GET", "POST")
    assert call(service.url + API + "/stats").status == 200


def test_a_deep_json_body_is_a_400(service: HttpServer) -> None:
    for deep in (
        b"[" * 1000 + b"]" * 1000,
        b'{"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ):
        answer = call(service.url + API + "/similar", "POST", deep)
        assert answer.status == 400 and answer.json()["error"]["code"] == "bad_request"
    unknown = {"items": [{"url": "u", "content": "x", "x": [[[[[]]]]]}]}
    assert call(service.url + API + "/fold", "POST", unknown).status == 400


def test_a_page_past_the_markup_bound_is_refused_at_once(service: HttpServer) -> None:
    deep = {"content": "<html><body>" + "<div>" * 100_000}
    answer = call(service.url + API + "/similar", "POST", deep)
    assert answer.status == 400 and "markup_too_deep" not in answer.json()["error"]["code"]
    assert "512" in answer.json()["error"]["message"]
    folded = call(service.url + API + "/fold", "POST", {"items": [{"url": "u", **deep}]})
    assert folded.status == 400


def test_a_bearer_token_guards_everything_but_liveness(swept_state: State) -> None:
    with serving(swept_state, token="s3cret") as running:
        assert call(running.url + "/healthz").status == 200
        for path in ("/", "/metrics", API + "/stats", API + "/openapi.json"):
            refused = call(running.url + path)
            assert refused.status == 401 and refused.json()["error"]["code"] == "unauthorized"
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
            wrong = call(running.url + path, headers={"Authorization": "Bearer nope"})
            assert wrong.status == 401
            for scheme in ("Bearer", "bearer", "BEARER"):
                right = call(running.url + path, headers={"Authorization": f"{scheme} s3cret"})
                assert right.status == 200, scheme
        assert call(running.url + "/?access_token=s3cret").status == 200  # a browser's way
        spec = call(running.url + API + "/openapi.json?access_token=s3cret").json()
        assert spec["security"] == [{"bearer": []}]


def test_no_state_yet_is_a_503_and_a_lent_state_answers(swept_state: State) -> None:
    source = LiveState(why_none="the run has not started")
    with serving(source) as running:
        waiting = call(running.url + API + "/stats")
        assert waiting.status == 503 and "has not started" in waiting.json()["error"]["message"]
        assert waiting.headers["Retry-After"] == "1"
        source.attach(swept_state)
        assert call(running.url + API + "/stats").status == 200
        source.detach("the run has ended")
        assert call(running.url + API + "/stats").status == 503


def test_a_silent_client_does_not_hold_up_the_others(service: HttpServer) -> None:
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as silent:
        silent.sendall(b"POST /api/v1/similar HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        assert call(service.url + API + "/stats").status == 200


def test_two_hundred_clients_at_once_are_all_answered(service: HttpServer) -> None:
    """Half stats, half similar queries, all at once: no connection is reset."""
    _, _, texts = two_sweeps()
    body = {"content": " ".join(texts["three"]), "limit": 3}

    def ask(number: int) -> int:
        if number % 2:
            return call(service.url + API + "/similar", "POST", body).status
        return call(service.url + API + "/stats").status

    with ThreadPoolExecutor(200) as pool:
        statuses = list(pool.map(ask, range(200)))
    assert statuses == [200] * 200


class _Slow(LiveState):
    """A live state whose similar queries take a second each (a query on a large page)."""

    @contextmanager
    def reading(self) -> Iterator[State]:
        with super().reading() as state:
            if threading.current_thread().name.startswith("neardup-query") and _SLOW.is_set():
                time.sleep(1.0)
            yield state


_SLOW = threading.Event()


def test_a_slow_query_does_not_hold_the_others(swept_state: State) -> None:
    with serving(_Slow(swept_state)) as running, ThreadPoolExecutor(2) as pool:
        _SLOW.set()
        try:
            slow = pool.submit(call, running.url + API + "/similar", "POST", {"content": "x"})
            time.sleep(0.2)
            _SLOW.clear()
            started = time.monotonic()
            assert call(running.url + API + "/stats").status == 200
            assert time.monotonic() - started < 0.5  # answered while the slow one reads
            assert slow.result().status == 200
        finally:
            _SLOW.clear()


def _raw(service: HttpServer, request: bytes) -> bytes:
    """What the server sends back to one raw request, up to when it closes the connection."""
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        return answer


def test_the_protocol_is_read_strictly_and_every_refusal_is_json(service: HttpServer) -> None:
    """What a proxy would refuse is refused (two lengths, a signed or odd length, a body
    encoding the server cannot read, a version it does not speak, a line too long): with a
    status line and a JSON body."""
    stats = b"GET /api/v1/stats HTTP/1.1\r\nHost: x\r\n"
    answer = _raw(service, stats + b"CONNECTION:  close \r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b'"documents"' in answer
    body = b'{"content": "a few words"}'
    post = b"POST /api/v1/similar HTTP/1.1\r\nHost: x\r\n"
    for bad in [
        post + b"Content-Length: %d\r\nContent-Length: 0\r\n\r\n%s" % (len(body), body),
        post + b"Content-Length: +%d\r\n\r\n%s" % (len(body), body),
        post + b"Content-Length: 2_6\r\n\r\n%s" % body,
        post + b"Transfer-Encoding: gzip, chunked\r\n\r\n1a\r\n%s\r\n0\r\n\r\n" % body,
        stats + b"X-Folded: a\r\n  b\r\n\r\n",
        stats + b"X-Bad : a\r\n\r\n",
        stats + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n",
        b"GET /api/v1/stats HTTP/2.0\r\n\r\n",
        b"GET /api/v1/stats\r\n\r\n",
        b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
    ]:
        answer = _raw(service, bad)
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert re.match(rb"HTTP/\d\.\d (4\d\d|501|505) ", head), (bad[:60], head[:60])
        assert b"application/json" in head.lower(), (bad[:60], head)
        assert json.loads(payload)["error"]["status"] >= 400
    assert call(service.url + API + "/stats").status == 200  # and the server goes on


def test_a_service_serves_an_ipv6_loopback_address(swept_state: State) -> None:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    with serving(swept_state, address=("::1", 0)) as running:
        assert running.url.startswith("http://[::1]:")
        assert call(running.url + "/api/v1/stats").json()["documents"] > 0


def test_a_taken_address_is_refused_and_leaves_nothing_open(swept_state: State) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        with pytest.raises(OSError, match="in use"):
            HttpServer(query_app(LiveState(swept_state)), taken.getsockname()).start()
        gc.collect()  # an unclosed socket would warn here, and warnings fail the suite
    finally:
        taken.close()
