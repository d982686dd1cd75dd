"""The JSON API end to end, over HTTP, on a real RocksDB state built in two sweeps: every
endpoint gives the CLI's answer, and every bad request a JSON 4xx."""

from __future__ import annotations

import gc
import socket
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import pytest
from neardup.core import Page
from neardup.state import State
from neardup.streams.running import queries, reports
from neardup.streams.service import LiveState, Service
from neardup.streams.service.api import Limits

from tests.helpers import two_sweeps

from .conftest import call

API = "/api/v1"


def _get(service: Service, path: str) -> Any:
    answer = call(service.url + API + path)
    assert answer.status == 200, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    return answer.json()


def _post(service: Service, path: str, body: Any) -> Any:
    answer = call(service.url + API + path, "POST", body)
    assert answer.status == 200, answer.body
    return answer.json()


def test_lost_and_found_history_and_cluster_answers_are_the_cli_answers(
    service: Service, swept_state: State
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


def test_a_cluster_pages_through_its_members(service: Service, swept_state: State) -> None:
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
    service: Service, swept_state: State
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


def test_similar_with_containment_finds_the_sources_of_an_excerpt(
    service: Service, swept_state: State
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


def test_similar_with_excerpts_answers_as_the_cli(service: Service, swept_state: State) -> None:
    _, _, texts = two_sweeps()
    digest = " ".join(texts["three"] + texts["other"] + texts["fresh"])
    matches = _post(service, "/similar", {"content": digest, "excerpts": True})["matches"]
    page = Page(url="query:", content=digest, content_type="text/html")
    assert matches == reports.similar_to_content(swept_state, page, 10, 0.0, None, True)
    assert {"https://site.example/blog/3", "https://other.example/x"} <= {
        m["url"] for m in matches if m["contains"] >= 0.9
    }


def test_folding_a_result_page_keeps_the_heads_in_order(
    service: Service, swept_state: State
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


def test_stats_and_dashboard_read_the_state_counters(service: Service, swept_state: State) -> None:
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
    assert board["samples"] and board["samples"][-1]["documents"] == stats["documents"]
    assert board["largest"] == queries.largest_clusters(swept_state, 10)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "says"),
    [
        ("POST", "/similar", b"{not json", 400, "not JSON"),
        ("POST", "/similar", b"[1, 2]", 400, "JSON object"),
        ("POST", "/similar", {"content_type": "text/html"}, 400, "'content' is required"),
        ("POST", "/similar", {"content": 42}, 400, "must be a string"),
        ("POST", "/similar", {"content": "x", "limit": True}, 400, "must be an integer"),
        ("POST", "/similar", {"content": "x", "colour": "red"}, 400, "unknown fields: colour"),
        ("POST", "/similar", {"content": "x", "min_resemblance": 2}, 400, "from 0 to 1"),
        ("POST", "/similar", {"content": "x", "containment": 0}, 400, "above 0 and at most 1"),
        ("POST", "/similar", {"content": "x", "excerpts": 1}, 400, "must be true or false"),
        ("POST", "/similar", b"x" * 5000, 413, "over the limit"),
        ("POST", "/fold", {"items": ["u"] * 11}, 400, "over the limit of 10"),
        ("POST", "/fold", {"items": [3]}, 400, "items[0] must be a URL"),
        ("POST", "/fold", {"items": [{"url": "u"}]}, 400, "items[0]: the field 'content'"),
        ("POST", "/fold", {"items": "u"}, 400, "must be a list"),
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
    swept_state: State, method: str, path: str, body: Any, status: int, says: str
) -> None:
    limits = Limits(max_body_bytes=4096, max_fold_items=10)
    service = Service(LiveState(swept_state), limits=limits).start()
    try:
        answer = call(service.url + API + path, method, body)
        assert answer.status == status, answer.body
        error = answer.json()["error"]
        assert error["status"] == status and says in error["message"]
        if status == 405:
            assert answer.headers["Allow"] in ("GET", "POST")
        assert call(service.url + API + "/stats").status == 200
    finally:
        service.stop()


def test_a_bearer_token_guards_everything_but_liveness(swept_state: State) -> None:
    service = Service(LiveState(swept_state), token="s3cret").start()
    try:
        assert call(service.url + "/healthz").status == 200
        for path in ("/", "/metrics", API + "/stats", API + "/openapi.json"):
            refused = call(service.url + path)
            assert refused.status == 401 and refused.json()["error"]["code"] == "unauthorized"
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
            wrong = call(service.url + path, headers={"Authorization": "Bearer nope"})
            assert wrong.status == 401
            right = call(service.url + path, headers={"Authorization": "Bearer s3cret"})
            assert right.status == 200
        assert call(service.url + "/?access_token=s3cret").status == 200  # how a browser opens it
        spec = call(service.url + API + "/openapi.json?access_token=s3cret").json()
        assert spec["security"] == [{"bearer": []}]
    finally:
        service.stop()


def test_no_state_yet_is_a_503_and_a_lent_state_answers(swept_state: State) -> None:
    source = LiveState(why_none="the run has not started")
    service = Service(source).start()
    try:
        waiting = call(service.url + API + "/stats")
        assert waiting.status == 503 and "has not started" in waiting.json()["error"]["message"]
        assert waiting.headers["Retry-After"] == "1"
        source.attach(swept_state)
        assert call(service.url + API + "/stats").status == 200
        source.detach("the run has ended")
        assert call(service.url + API + "/stats").status == 503
    finally:
        service.stop()


def test_a_silent_client_does_not_hold_up_the_others(service: Service) -> None:
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as silent:
        silent.sendall(b"POST /api/v1/similar HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        assert call(service.url + API + "/stats").status == 200


class _Watched(LiveState):
    """A live state that notes the interpreter's switch interval whenever it is read."""

    def __init__(self, state: State) -> None:
        super().__init__(state)
        self.intervals: list[float] = []

    @contextmanager
    def reading(self) -> Iterator[State]:
        self.intervals.append(sys.getswitchinterval())
        with super().reading() as state:
            yield state


def test_the_switch_interval_is_short_only_while_a_query_is_answered(swept_state: State) -> None:
    """A runtime's service lowers the switch interval for its queries (they wait for the
    detector's lock at each read) and gives it back after; a scrape does not lower it."""
    before = sys.getswitchinterval()
    source = _Watched(swept_state)
    running = Service(source, interval=60.0, query_switch_interval=before / 8).start()
    try:
        assert call(running.url + "/metrics").status == 200
        assert source.intervals and set(source.intervals) == {before}
        source.intervals.clear()
        assert _post(running, "/similar", {"content": "a few words"})["matches"] == []
        assert source.intervals == [before / 8]
        assert sys.getswitchinterval() == before
    finally:
        running.stop()


class _Crowded(LiveState):
    """A live state that notes how many requests read it at once; each read lasts a while, so
    that requests answered side by side would overlap."""

    def __init__(self, state: State) -> None:
        super().__init__(state)
        self._lock = threading.Lock()
        self._now = 0
        self.most = 0

    @contextmanager
    def reading(self) -> Iterator[State]:
        with self._lock:
            self._now += 1
            self.most = max(self.most, self._now)
        try:
            time.sleep(0.05)
            with super().reading() as state:
                yield state
        finally:
            with self._lock:
                self._now -= 1


def test_api_requests_are_answered_one_at_a_time(swept_state: State) -> None:
    """Answers are Python holding the interpreter lock: side by side they would only trade it,
    so the service answers one at a time (and gives the switch interval back after)."""
    before = sys.getswitchinterval()
    source = _Crowded(swept_state)
    running = Service(source, interval=60.0, query_switch_interval=before / 8).start()
    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(
                    lambda i: call(
                        running.url + API + "/similar", "POST", {"content": f"{i} words"}
                    ),
                    range(4),
                )
            )
        assert [a.status for a in answers] == [200] * 4
        assert source.most == 1
        assert sys.getswitchinterval() == before
    finally:
        running.stop()


def _raw(service: Service, request: bytes) -> bytes:
    """What the server sends back to one raw request, up to when it closes the connection."""
    host, port = service.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        return answer


def test_header_lines_are_read_as_the_protocol_says(service: Service) -> None:
    """Names in any case, a repeated field's first value, keep-alive until ``close``; a
    folded line, a name with white space, too many fields or too long a line are refused,
    and so are a version other than HTTP/1.x and an HTTP/0.9 line (no version)."""
    stats = b"GET /api/v1/stats HTTP/1.1\r\nhost: x\r\n"
    answer = _raw(service, stats + b"CONNECTION:  close \r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b'"documents"' in answer
    two = _raw(service, stats + b"\r\n" + stats + b"Connection: close\r\n\r\n")
    assert two.count(b"HTTP/1.1 200") == 2  # kept alive between them
    body = b'{"content": "a few words"}'
    posted = _raw(
        service,
        b"POST /api/v1/similar HTTP/1.1\r\ncontent-length: %d\r\nContent-Length: 0\r\n"
        b"Connection: close\r\n\r\n%s" % (len(body), body),
    )
    assert posted.startswith(b"HTTP/1.1 200") and b'"matches"' in posted
    for bad, status in [
        (stats + b"X-Folded: a\r\n  b\r\n\r\n", b"400"),
        (stats + b"X-Bad : a\r\n\r\n", b"400"),
        (stats + b"no colon\r\n\r\n", b"400"),
        (stats + b"".join(b"X-%d: 1\r\n" % n for n in range(101)) + b"\r\n", b"431"),
        (stats + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n", b"431"),
        (b"GET /api/v1/stats HTTP/2.0\r\n\r\n", b"505"),
        (b"GET /api/v1/stats HTTP/x\r\n\r\n", b"400"),
    ]:
        assert _raw(service, bad).startswith(b"HTTP/1.1 " + status), bad[:60]
    # HTTP/0.9 has no status line: the standard library answers with the body alone
    assert b"Bad request syntax" in _raw(service, b"GET /api/v1/stats\r\n")
    assert call(service.url + API + "/stats").status == 200  # and the server goes on


def test_a_service_stops_when_asked_and_serves_again_after_a_handover(
    swept_state: State,
) -> None:
    """A state query hands the address over when ``on_state_query`` says it did (a worker's
    only while it holds the detector); an address handed over is taken back on request, to
    be handed over again or for good. Stopping does not wait out a polling interval (the
    standard library's loop looked for a stop every half second)."""
    listening = socket.create_server(("127.0.0.1", 0))
    asked: list[bool] = []
    holds = False

    def hand_over() -> bool:
        asked.append(holds)
        return holds

    running = Service(LiveState(swept_state), listening=listening, on_state_query=hand_over)
    running.start()
    base = running.url
    assert call(base + "/api/v1/stats").status == 200
    assert asked == [False] and not running.handed_over, "answered here: nothing to hand over"
    holds = True
    assert call(base + "/api/v1/stats").status == 200
    assert asked == [False, True] and running.handed_over
    _until_not_accepting(listening)
    running.take_back(for_good=False)
    assert call(base + "/api/v1/stats").status == 200
    assert asked == [False, True, True] and running.handed_over, "handed over again"
    _until_not_accepting(listening)
    running.take_back()
    assert call(base + "/api/v1/stats").status == 200
    assert len(asked) == 3 and not running.handed_over, "taken back for good"
    time.sleep(0.1)  # the loop waits in its select (the old loop's would end 0.4 s later)
    started = time.monotonic()
    running.stop()
    assert time.monotonic() - started < 0.3


def _until_not_accepting(listening: socket.socket) -> None:
    """Until the service's accept loop has stopped (a front would accept on the socket)."""
    deadline = time.monotonic() + 5
    while True:
        probe = socket.create_connection(listening.getsockname(), timeout=0.3)
        probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answered = probe.recv(1)
        except TimeoutError:
            answered = b""
        probe.close()
        if not answered:
            return
        assert time.monotonic() < deadline, "the handed-over address is still served"


def test_a_service_serves_an_ipv6_loopback_address(swept_state: State) -> None:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    running = Service(LiveState(swept_state), ("::1", 0)).start()
    try:
        assert running.url.startswith("http://[::1]:")
        assert running.advertised_url == running.url
        assert call(running.url + "/api/v1/stats").json()["documents"] > 0
    finally:
        running.stop()


def test_a_taken_address_is_refused_and_leaves_nothing_open(swept_state: State) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    try:
        with pytest.raises(OSError, match="in use"):
            Service(LiveState(swept_state), taken.getsockname())
        gc.collect()  # an unclosed socket would warn here, and warnings fail the suite
    finally:
        taken.close()
