"""The service under load: ``python -m bench.service_load``.

On a state of ``--docs`` documents (default 100k), a further ``--more`` documents are
ingested at full speed (``neardup run``, ``--prepare process``, or as ``--prepare`` says),
three ways, from copies of the same state, in rounds:

* plain: no service;
* scraped: ``run --http``, its /metrics scraped every second (Prometheus scrapes every 15 s
  by default: this is fifteen times that);
* followed: similar-document queries (POST /api/v1/similar, the posted content a page of the
  corpus with a tenth of its words changed) sent open-loop at ``--rate`` a second to a
  ``neardup serve`` reading the state the run writes, started before the run and warmed by
  100 queries; each latency is measured from the query's scheduled time.

Reported: ingestion seconds of each (median of the rounds) and the slowdowns against
plain; query latency p50/p99, the share answered and ``serve``'s CPU seconds; and, once
ingestion has stopped, the queries per second ``serve`` answers closed-loop (four at a
time) on the same state. The client is aiohttp's, in this process, on the same cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import numpy.typing as npt
from neardup.streams.running.lifetime import tied_command

from .corpus import iter_pages, write_jsonl
from .cpu import cpu_seconds
from .report import emit

__all__ = ["OpenLoop", "announced_url", "latencies_ms", "main", "percentile", "similar_queries"]

#: queries a closed loop keeps in flight
_CONCURRENT = 4
#: queries a follower answers before the run starts: its first ones warm its caches
_WARM_UP = 100
_KINDS = ("plain", "scraped", "followed")
_SIMILAR = "/api/v1/similar"


def _neardup(*args: str) -> list[str]:
    return tied_command([sys.executable, "-m", "neardup.streams", *args])


class OpenLoop:
    """Similar queries (``bodies``, in turn) sent open-loop at ``rate`` a second while
    ``going()``: each is sent when it is due, whatever the ones before it are doing, and its
    latency is measured from then, kept with when that was (seconds from the first one's)."""

    def __init__(
        self, base: str, bodies: list[bytes], rate: float, going: Callable[[], bool]
    ) -> None:
        self._base = base
        self._bodies = bodies
        self._rate = rate
        self._going = going
        self._thread = threading.Thread(target=lambda: asyncio.run(self._send()))
        #: when the first query was due (``time.time()``)
        self.began = 0.0
        self.latencies: list[tuple[float, float]] = []
        #: the queries answered with another status than 200, or none, by status (0: none)
        self.statuses: Counter[int] = Counter()

    @property
    def failures(self) -> int:
        return self.statuses.total()

    def start(self) -> OpenLoop:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join()

    async def _send(self) -> None:
        async with aiohttp.ClientSession(self._base, connector=_connector()) as session:
            self.began = time.time()
            begin = time.perf_counter()
            pending: set[asyncio.Task[None]] = set()
            number = 0
            while self._going():
                due = begin + number / self._rate
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                body = self._bodies[number % len(self._bodies)]
                task = asyncio.create_task(self._one(session, body, due, begin))
                pending.add(task)
                task.add_done_callback(pending.discard)
                number += 1
            await asyncio.gather(*pending)

    async def _one(
        self, session: aiohttp.ClientSession, body: bytes, due: float, begin: float
    ) -> None:
        status = await _post(session, body)
        if status == 200:
            self.latencies.append((due - begin, time.perf_counter() - due))
        else:
            self.statuses[status] += 1


def _connector() -> aiohttp.TCPConnector:
    return aiohttp.TCPConnector(limit=256, force_close=False)


async def _post(session: aiohttp.ClientSession, body: bytes) -> int:
    """A similar query's status (0: no answer), its answer read whole."""
    try:
        async with session.post(_SIMILAR, data=body, headers=_JSON) as answer:
            await answer.read()
            return answer.status
    except (aiohttp.ClientError, OSError):
        return 0


_JSON = {"Content-Type": "application/json"}


def _get(base: str, path: str) -> bytes:
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        body: bytes = answer.read()
        return body


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
    scrapes = [0]
    done = threading.Event()

    def scrape() -> None:
        while not done.is_set():
            try:
                _get(base, "/metrics")
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


def _ingest_followed(
    state: Path, corpus: Path, prepare: str, bodies: list[bytes], rate: float
) -> tuple[float, list[tuple[float, float]], int, float]:
    """Ingestion while queries go to a `neardup serve` process reading the same state,
    already answering (it has answered ``_WARM_UP`` queries); each latency with when the
    query was due, and the follower's CPU seconds over the run."""
    serving = subprocess.Popen(
        _neardup("serve", "--state", str(state), "--http", "127.0.0.1:0"),
        stderr=subprocess.PIPE,
    )
    try:
        base = announced_url(serving, "neardup serve")
        asyncio.run(_closed(base, bodies[-_WARM_UP:], _WARM_UP))  # not the measured first ones
        before = cpu_seconds(serving.pid)
        started = time.perf_counter()
        process, _ = _start(state, corpus, False, prepare)
        load = OpenLoop(base, bodies, rate, lambda: process.poll() is None).start()
        seconds = _finish(process, started)
        load.join()
        return seconds, load.latencies, load.failures, cpu_seconds(serving.pid) - before
    finally:
        serving.terminate()
        serving.communicate()


async def _closed(base: str, bodies: list[bytes], count: int) -> int:
    """``count`` queries, ``_CONCURRENT`` at a time; how many were answered."""
    answered = 0

    async def worker(offset: int, session: aiohttp.ClientSession) -> None:
        nonlocal answered
        for number in range(offset, count, _CONCURRENT):
            if await _post(session, bodies[number % len(bodies)]) != 200:
                raise RuntimeError("a query failed on an idle service")
            answered += 1

    async with aiohttp.ClientSession(base, connector=_connector()) as session:
        await asyncio.gather(*(worker(n, session) for n in range(_CONCURRENT)))
    return answered


def _closed_loop(state: Path, bodies: list[bytes], count: int = 4000) -> float:
    """Queries a second an idle `serve` answers, ``_CONCURRENT`` at a time."""
    process = subprocess.Popen(
        _neardup("serve", "--state", str(state), "--http", "127.0.0.1:0"), stderr=subprocess.PIPE
    )
    try:
        base = announced_url(process, "neardup serve")
        started = time.perf_counter()
        answered = asyncio.run(_closed(base, bodies, count))
        return answered / (time.perf_counter() - started)
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


def latencies_ms(latencies: list[tuple[float, float]]) -> npt.NDArray[np.float64]:
    """``OpenLoop.latencies`` in milliseconds (an array)."""
    return np.array([spent for _, spent in latencies]) * 1000


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
        followed: list[float] = []
        latencies: list[tuple[float, float]] = []
        follower_cpu: list[float] = []
        failures = 0
        for round_ in range(args.rounds):
            for kind in kinds:
                state = work / f"{kind}-{round_}"
                shutil.copytree(built, state)
                if kind == "plain":
                    plain.append(_ingest_plain(state, more_corpus, args.prepare))
                elif kind == "scraped":
                    scraped.append(_ingest_scraped(state, more_corpus, args.prepare)[0])
                else:
                    seconds, lat, failed, cpu = _ingest_followed(
                        state, more_corpus, args.prepare, bodies, args.rate
                    )
                    follower_cpu.append(round(cpu, 2))
                    followed.append(seconds)
                    latencies += lat
                    failures += failed
                print(f"round {round_ + 1} {kind}: done", file=sys.stderr)
                if kind != kinds[-1] or round_ < args.rounds - 1:
                    shutil.rmtree(state)
        capacity = _closed_loop(work / f"{kinds[-1]}-{args.rounds - 1}", bodies)
    ms = latencies_ms(latencies)
    report: dict[str, Any] = {
        "docs": args.docs,
        "more": args.more,
        "rate": args.rate,
        "rounds": args.rounds,
        "prepare": args.prepare,
        "build_seconds": round(build_seconds, 2),
        "plain_seconds": [round(s, 2) for s in plain],
        "scraped_seconds": [round(s, 2) for s in scraped],
        "metrics_slowdown": _slowdown(scraped, plain),
        "followed_seconds": [round(s, 2) for s in followed],
        "follower_slowdown": _slowdown(followed, plain),
        "follower_queries_answered": len(latencies),
        "follower_queries_failed": failures,
        "follower_p50_ms": percentile(ms, 50),
        "follower_p99_ms": percentile(ms, 99),
        "follower_cpu_seconds": follower_cpu,
        "follower_cpu_ms_per_query": (
            round(1000 * sum(follower_cpu) / len(latencies), 2) if latencies else None
        ),
        "closed_loop_queries_per_second": round(capacity, 1),
    }
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
