"""The service under load: ``python -m bench.service_load``.

On a state of ``--docs`` documents (default 100k), a further ``--more`` documents are
ingested at full speed (``neardup run``, ``--prepare process``, or as ``--prepare`` says),
three ways, from copies of the same state, in rounds:

* plain: no service;
* scraped: ``--http``, with /metrics scraped every second (Prometheus scrapes every 15 s by
  default: this is fifteen times that);
* queried: ``--http``, with similar-document queries (POST /api/v1/similar, the posted
  content a page of the corpus with a tenth of its words changed) sent open-loop at
  ``--rate`` per second from four client threads, each latency measured from the query's
  scheduled time (the run's address is served by its front, a ``serve`` child it starts);
* followed: the same queries to a ``neardup serve`` process reading the state the run
  writes (a second process, so no shared interpreter lock), started before the run and
  warmed by 100 queries.

Reported: ingestion seconds of each (median of the rounds) and the slowdowns against
plain; query latency p50/p99 and the share answered (p99 also without the queries due in
their first second, when the run starts its front at the first one; for the follower, its
CPU seconds); and, once ingestion has stopped, the queries per second the service answers
closed-loop (four threads) on the same state.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from neardup.streams.service.wire import EXCHANGE_FAILURES, KeptAlive

from .corpus import iter_pages, write_jsonl
from .cpu import cpu_seconds
from .report import emit

__all__ = ["OpenLoop", "announced_url", "latencies_ms", "main", "percentile", "similar_queries"]

_THREADS = 4
#: queries a follower answers before the run starts: its first ones warm its caches
_WARM_UP = 100
#: seconds from the first query within which queries meet the start of a runtime's front (a
#: ``serve`` child of a run or a worker, started at the first state query: up to 0.8 s on
#: the 100k state): latency is reported with and without them (until 2026-11-26 timed from
#: the run's process start, 0.3-0.4 s before the first query)
_START = 1.0
_KINDS = ("plain", "scraped", "queried", "followed")


def _neardup(*args: str) -> list[str]:
    return [sys.executable, "-m", "neardup.streams", *args]


class _Client:
    """Queries (``post``) over one keep-alive connection per thread, spoken over a raw
    socket (the service's own ``KeptAlive``): the load runs on the cores it measures, and
    ``http.client`` parses each answer's headers through the email package (0.4 ms of the
    client's CPU a query, a tenth of the server's). ``get`` (a scrape a second) opens an
    ``http.client`` connection each time."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self._address = (host, int(port))
        self._connections = KeptAlive(self._address, 30)
        self._headers = f"Host: {host}\r\nContent-Type: application/json\r\n"

    def post(self, path: str, body: bytes) -> int:
        """The status of a POST, its answer read whole."""
        try:
            return self._connections.exchange("POST", path, self._headers, body)[0]
        except EXCHANGE_FAILURES as error:
            raise OSError(str(error)) from error

    def get(self, path: str) -> bytes:
        connection = http.client.HTTPConnection(*self._address, timeout=30)
        try:
            connection.request("GET", path)
            return connection.getresponse().read()
        finally:
            connection.close()


class OpenLoop:
    """Similar queries (``bodies``, in turn) sent open-loop at ``rate`` a second from
    ``_THREADS`` threads, from ``start`` while ``going()``: each latency is measured from when
    the query was due, and kept with when that was (seconds from the first one's)."""

    def __init__(
        self, base: str, bodies: list[bytes], rate: float, going: Callable[[], bool]
    ) -> None:
        self._client = _Client(base)
        self._bodies = bodies
        self._rate = rate
        self._going = going
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._send, args=(n,)) for n in range(_THREADS)]
        self._begin = 0.0
        #: when the first query was due (``time.time()``)
        self.began = 0.0
        self.latencies: list[tuple[float, float]] = []
        #: the queries answered with another status than 200, or none, by status (0: none)
        self.statuses: Counter[int] = Counter()

    @property
    def failures(self) -> int:
        return self.statuses.total()

    def start(self) -> OpenLoop:
        self.began = time.time()
        self._begin = time.perf_counter()
        for thread in self._threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _send(self, offset: int) -> None:
        i = offset
        while self._going():
            due = self._begin + i / self._rate
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            try:
                status = self._client.post("/api/v1/similar", self._bodies[i % len(self._bodies)])
            except OSError:
                status = 0
            spent = time.perf_counter() - due
            with self._lock:
                if status == 200:
                    self.latencies.append((due - self._begin, spent))
                else:
                    self.statuses[status] += 1
            i += _THREADS


def _start(
    state: Path, corpus: Path, http_on: bool, prepare: str
) -> tuple[subprocess.Popen[bytes], str | None]:
    command = _neardup("run", "--quiet", "--prepare", prepare, "--state", str(state), str(corpus))
    if http_on:
        command += ["--http", "127.0.0.1:0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    return process, announced_url(process, "neardup run") if http_on else None


def announced_url(process: subprocess.Popen[bytes], who: str) -> str:
    """The address a neardup process started with ``--http`` says it serves, on the first
    line of its standard error (``neardup: serving URL``)."""
    assert process.stderr is not None
    line = process.stderr.readline().decode(errors="replace")
    found = re.search(r"neardup: serving (http://\S+)", line)
    if found is None:
        raise RuntimeError(f"no service address from {who}: {line!r}")
    return found.group(1)


def _finish(process: subprocess.Popen[bytes], started: float) -> float:
    _, errors = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"neardup run failed: {errors.decode()[-2000:]}")
    return time.perf_counter() - started


def _ingest_plain(state: Path, corpus: Path, prepare: str) -> float:
    started = time.perf_counter()
    process, _ = _start(state, corpus, False, prepare)
    return _finish(process, started)


def _ingest_scraped(state: Path, corpus: Path, prepare: str) -> tuple[float, int]:
    started = time.perf_counter()
    process, base = _start(state, corpus, True, prepare)
    assert base is not None
    client = _Client(base)
    scrapes = [0]
    done = threading.Event()

    def scrape() -> None:
        while not done.is_set():
            try:
                client.get("/metrics")
                scrapes[0] += 1
            except OSError:
                return  # the run ended between the check and the scrape
            done.wait(1.0)

    # the scrapes in a thread of their own: the run's end is timed when it comes, not after
    # the scraper's next second of sleep (which added 0.5 s to a 12 s run on average)
    scraper = threading.Thread(target=scrape)
    scraper.start()
    try:
        seconds = _finish(process, started)
    finally:
        done.set()
        scraper.join()
    return seconds, scrapes[0]


def _ingest_queried(
    state: Path,
    corpus: Path,
    prepare: str,
    bodies: list[bytes],
    rate: float,
    follower: bool = False,
) -> tuple[float, list[tuple[float, float]], int, float | None]:
    """Ingestion while queries go to the run's own service, or (``follower``) to a
    `neardup serve` process reading the same state, already answering (it has answered
    ``_WARM_UP`` queries). Each latency comes with when the query was due, from when the
    first one was; and the follower's CPU seconds over the run."""
    serving = None
    follower_cpu = None
    if follower:
        serving = subprocess.Popen(
            _neardup("serve", "--state", str(state), "--http", "127.0.0.1:0"),
            stderr=subprocess.PIPE,
        )
        base: str | None = announced_url(serving, "neardup serve")
        assert base is not None
        warm = _Client(base)
        for body in bodies[-_WARM_UP:]:  # not among the measured queries' first
            warm.post("/api/v1/similar", body)
        follower_cpu = cpu_seconds(serving.pid)
    started = time.perf_counter()
    process, own = _start(state, corpus, not follower, prepare)
    base = base if follower else own
    assert base is not None
    load = OpenLoop(base, bodies, rate, lambda: process.poll() is None).start()
    seconds = _finish(process, started)
    load.join()
    if serving is not None:
        assert follower_cpu is not None
        follower_cpu = cpu_seconds(serving.pid) - follower_cpu
        serving.terminate()
        serving.communicate()
    return seconds, load.latencies, load.failures, follower_cpu


def _closed_loop(state: Path, bodies: list[bytes], seconds: float) -> float:
    process = subprocess.Popen(
        _neardup("serve", "--state", str(state), "--http", "127.0.0.1:0"), stderr=subprocess.PIPE
    )
    try:
        client = _Client(announced_url(process, "neardup serve"))
        done = [0]
        lock = threading.Lock()
        stop = time.perf_counter() + seconds

        def worker(offset: int) -> None:
            i = offset
            while time.perf_counter() < stop:
                if client.post("/api/v1/similar", bodies[i % len(bodies)]) != 200:
                    raise RuntimeError("a query failed on an idle service")
                with lock:
                    done[0] += 1
                i += _THREADS

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return done[0] / seconds
    finally:
        process.terminate()
        process.communicate()


def similar_queries(lines: list[str], count: int, seed: int) -> list[bytes]:
    """Bodies of similar queries: pages of the corpus (JSON lines), a tenth of each page's
    words changed."""
    rng = np.random.default_rng(seed)
    bodies = []
    for index in rng.choice(len(lines), size=count, replace=False):
        words = json.loads(lines[int(index)])["content"].split(" ")
        for at in rng.choice(len(words), size=len(words) // 10, replace=False):
            words[int(at)] = "edited"
        bodies.append(json.dumps({"content": " ".join(words), "limit": 10}).encode())
    return bodies


def latencies_ms(
    latencies: list[tuple[float, float]], skip_start: bool = False
) -> npt.NDArray[np.float64]:
    """``OpenLoop.latencies`` in milliseconds (an array); with ``skip_start``, only those of
    the queries due once a runtime's front has started (``_START``)."""
    return np.array([spent for due, spent in latencies if not skip_start or due >= _START]) * 1000


def percentile(values: Any, q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if len(values) else None


def _slowdown(seconds: list[float], plain: list[float]) -> float | None:
    return round(statistics.median(seconds) / statistics.median(plain) - 1, 4) if seconds else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--more", type=int, default=30_000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--prepare",
        choices=("process", "thread"),
        default="process",
        help="neardup run's --prepare: process (its default) or thread",
    )
    parser.add_argument(
        "--kinds",
        default=",".join(_KINDS),
        help="the ways to ingest, comma-separated (plain is always run: it is the reference)",
    )
    args = parser.parse_args(argv)
    kinds = [k for k in _KINDS if k == "plain" or k in args.kinds.split(",")]
    with tempfile.TemporaryDirectory(prefix="neardup-service-bench-") as tmp:
        work = Path(tmp)
        pages = iter_pages(args.docs + args.more, args.seed)
        base_corpus, more_corpus = work / "base.jsonl", work / "more.jsonl"
        write_jsonl((next(pages) for _ in range(args.docs)), str(base_corpus))
        write_jsonl(pages, str(more_corpus))
        built = work / "built"
        print(f"building the {args.docs}-document state ...", file=sys.stderr)
        build_seconds = _ingest_plain(built, base_corpus, args.prepare)
        bodies = similar_queries(base_corpus.read_text("utf-8").splitlines(), 2000, args.seed)
        plain: list[float] = []
        scraped: list[float] = []
        queried: list[float] = []
        followed: list[float] = []
        latencies: list[tuple[float, float]] = []
        follower_latencies: list[tuple[float, float]] = []
        follower_cpu: list[float] = []
        failures = follower_failures = 0
        for round_ in range(args.rounds):
            for kind in kinds:
                state = work / f"{kind}-{round_}"
                shutil.copytree(built, state)
                if kind == "plain":
                    plain.append(_ingest_plain(state, more_corpus, args.prepare))
                elif kind == "scraped":
                    scraped.append(_ingest_scraped(state, more_corpus, args.prepare)[0])
                elif kind == "queried":
                    seconds, lat, failed, _ = _ingest_queried(
                        state, more_corpus, args.prepare, bodies, args.rate
                    )
                    queried.append(seconds)
                    latencies += lat
                    failures += failed
                else:
                    seconds, lat, failed, cpu = _ingest_queried(
                        state, more_corpus, args.prepare, bodies, args.rate, follower=True
                    )
                    assert cpu is not None
                    follower_cpu.append(round(cpu, 2))
                    followed.append(seconds)
                    follower_latencies += lat
                    follower_failures += failed
                print(f"round {round_ + 1} {kind}: done", file=sys.stderr)
                if kind != kinds[-1] or round_ < args.rounds - 1:
                    shutil.rmtree(state)
        capacity = _closed_loop(work / f"{kinds[-1]}-{args.rounds - 1}", bodies, 20.0)
    ms = latencies_ms(latencies)
    follower_ms = latencies_ms(follower_latencies)
    steady_ms = latencies_ms(follower_latencies, skip_start=True)
    # the run's own address waits about a second for its front (a `serve` child) to start
    own_steady_ms = latencies_ms(latencies, skip_start=True)
    report: dict[str, Any] = {
        "docs": args.docs,
        "more": args.more,
        "rate": args.rate,
        "rounds": args.rounds,
        "prepare": args.prepare,
        "build_seconds": round(build_seconds, 2),
        "plain_seconds": [round(s, 2) for s in plain],
        "scraped_seconds": [round(s, 2) for s in scraped],
        "queried_seconds": [round(s, 2) for s in queried],
        "metrics_slowdown": _slowdown(scraped, plain),
        "query_slowdown": _slowdown(queried, plain),
        "queries_answered": len(latencies),
        "queries_failed": failures,
        "query_p50_ms": percentile(ms, 50),
        "query_p99_ms": percentile(ms, 99),
        "query_p99_ms_after_start": percentile(own_steady_ms, 99),
        "followed_seconds": [round(s, 2) for s in followed],
        "follower_slowdown": _slowdown(followed, plain),
        "follower_queries_answered": len(follower_latencies),
        "follower_queries_failed": follower_failures,
        "follower_p50_ms": percentile(follower_ms, 50),
        "follower_p99_ms": percentile(follower_ms, 99),
        "follower_p99_ms_after_start": percentile(steady_ms, 99),
        "follower_cpu_seconds": follower_cpu,
        "follower_cpu_ms_per_query": (
            round(1000 * sum(follower_cpu) / len(follower_latencies), 2)
            if follower_latencies
            else None
        ),
        "closed_loop_queries_per_second": round(capacity, 1),
    }
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
