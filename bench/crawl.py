"""A crawler's cycles through one state, against a fresh run: ``python -m bench.crawl``.

    python -m bench.crawl --urls 100000 --cycles 5 --seed 1 --out crawl.json
    python -m bench.crawl --two-crawl --out two-crawl.json

What it measures: whether the state of ``neardup run``, fed cycle after cycle of a crawl of
the same URLs (as a crawler feeds a worker), ends with the clusters of a fresh run over each
live URL's latest content (issue 44: pages that change), and what each cycle costs.

The crawl: ``--urls N`` pages of bench/corpus.py (``iter_pages``: real prose, families of
near-duplicates spread over the stream) are fetched in cycle 1. Each later cycle refetches
every live URL in the same order: 20 % with changed content (three in four edited at 1, 3
or 10 % of their words, markup untouched; one in four become a near-duplicate of another
page: that page's content edited at 1 or 3 %), 2 % deleted (``{"url": U, "deleted": true,
"fetched_at": T}``), the rest fetched again with the same content and a later
``fetched_at``; 1 % new URLs (the corpus stream's next pages) arrive at random places.
``--two-crawl`` is the trial of the issue: 2,500 URLs, then one crawl that refetches 30 %
with other content (half of them a near-duplicate of another page, half another page
altogether), 30 % unchanged, deletes 5 % and leaves the rest unfetched. Every choice
follows from ``--seed``.

Each cycle's JSON Lines file goes through ``neardup run --state DIR --events FILE`` in a
child process (``--prepare thread`` by default: one process, whose peak RSS is the
system's) on one state. Per cycle: records, pages/s (records over the child's wall time)
and its ratio to cycle 1's, the child's peak RSS (``wait4``), the state's bytes on disk
after it, its events by type and its dead letters by reason. Then a fresh run over each
live URL's latest record (in fetch order) into a new state, and the two states compared:
``neardup clusters`` (the number of clusters, and whether they are equal as sets of URL
sets), ``neardup stats``'s ``documents`` against the live URLs, and the state's bytes after
a full compaction against its bytes after cycle 1.

The report is one JSON object (stdout, and ``--out FILE``): ``cycles`` (the table) and
``summary``. Every child ends with this process (``tied_command``).
"""

from __future__ import annotations

import argparse
import html
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
from neardup.streams.running.lifetime import tied_command

from .corpus import CORPORA, Page, iter_pages, vocabulary
from .report import emit
from .run import _compacted_bytes, _disk_bytes

__all__ = ["CONTINUOUS", "TWO_CRAWL", "Crawl", "Shape", "compare_clusters", "edit", "main"]


@dataclass(frozen=True, slots=True)
class Shape:
    """What a cycle after the first does, in shares of the live URLs. Of the changed pages,
    ``copy`` become a near-duplicate of another page (one fetched unchanged in the cycle),
    ``replace`` another page altogether, the rest are edited."""

    changed: float
    deleted: float
    new: float
    #: refetched with the same content; None: every live URL neither changed nor deleted
    unchanged: float | None
    copy: float
    replace: float
    #: word edit rates of an edited page and of a copy
    edit_rates: tuple[float, ...] = (0.01, 0.03, 0.10)
    copy_rates: tuple[float, ...] = (0.01, 0.03)


CONTINUOUS = Shape(changed=0.20, deleted=0.02, new=0.01, unchanged=None, copy=0.25, replace=0.0)
TWO_CRAWL = Shape(changed=0.30, deleted=0.05, new=0.0, unchanged=0.30, copy=0.5, replace=0.5)
TWO_CRAWL_URLS = 2_500

#: what a cycle does to a live URL
SKIP, SAME, EDIT, COPY, REPLACE, DELETE = range(6)
_ACTION_NAMES = ("not_fetched", "unchanged", "edited", "copied", "replaced", "deleted")
#: a later cycle starts this long after the previous one's last fetch; its fetches are a
#: second apart
_CYCLE_GAP = timedelta(days=1)
_FETCH_STEP = timedelta(seconds=1)
_Array = npt.NDArray[np.int64]

# --- edits ------------------------------------------------------------------------------------

#: markup that holds no page text: scripts, styles, comments, tags
_MARKUP = re.compile(
    r"(<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>)", re.S | re.I
)


def edit(content: str, is_html: bool, rate: float, rng: np.random.Generator) -> str:
    """``content`` with about ``rate`` of its words of text substituted, deleted or preceded
    by a new word (drawn from the corpus's text), as bench/corpus.py edits a variant; markup,
    scripts and styles are left as they were."""
    parts = _MARKUP.split(content) if is_html else [content]
    spans: list[tuple[int, int]] = []
    flat: list[str] = []
    for text in parts[::2]:
        words = text.split(" ")
        spans.append((len(flat), len(flat) + len(words)))
        flat.extend(words)
    editable = np.flatnonzero(np.fromiter((w.isalpha() for w in flat), bool, len(flat)))
    # a changed page changes: one word at least
    m = min(len(editable), max(int(rate > 0), int(rng.binomial(len(editable), rate))))
    if m == 0:
        return content
    words_array = np.array(flat, dtype=object)
    pos = rng.choice(editable, size=m, replace=False)
    op = rng.integers(0, 3, size=m)
    vocab = vocabulary()
    new = vocab[rng.integers(0, len(vocab), size=m)]
    if is_html:
        new = np.array([html.escape(w, quote=False) for w in new], dtype=object)
    op[(op == 0) & (new == words_array[pos])] = 2  # a word put for itself: inserted instead
    words_array[pos[op == 0]] = new[op == 0]  # substitute
    words_array[pos[op == 1]] = ""  # delete
    words_array[pos[op == 2]] = new[op == 2] + " " + words_array[pos[op == 2]]  # insert
    edited = [" ".join(words_array[start:end].tolist()) for start, end in spans]
    parts[::2] = edited
    return "".join(parts)


# --- the crawl --------------------------------------------------------------------------------


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record(url: str, content: str, content_type: str, fetched_at: str) -> dict[str, Any]:
    return {"url": url, "content": content, "fetched_at": fetched_at, "content_type": content_type}


@dataclass(slots=True)
class CycleCounts:
    """What one cycle's file holds, by what happened to each URL."""

    cycle: int
    records: int = 0
    new: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    live_urls: int = 0


class Crawl:
    """The crawl's URLs, where each one's latest record is, and the corpus stream that new
    URLs and replacement pages come from. Each cycle is written to a file of its own; the
    latest record of a URL is read back from the file that holds it."""

    def __init__(self, urls: int, seed: int, shape: Shape, corpus: str = "default") -> None:
        self.urls, self.seed, self.shape = urls, seed, shape
        # a corpus of n pages is a prefix of a larger one: the stream goes on past ``urls``
        self.stream: Iterator[Page] = iter_pages(2**62, seed=seed, **CORPORA[corpus])
        self.live: list[str] = []
        #: where each live URL's latest record is: (cycle, offset in that cycle's file)
        self.latest: dict[str, tuple[int, int]] = {}
        self.files: dict[int, Path] = {}
        self.last_fetch = datetime.min
        self._readers: dict[int, BinaryIO] = {}

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    def _line(self, cycle: int, offset: int) -> bytes:
        if cycle not in self._readers:
            self._readers[cycle] = self.files[cycle].open("rb")
        reader = self._readers[cycle]
        reader.seek(offset)
        return reader.readline()

    def read(self, url: str) -> dict[str, Any]:
        """The latest record of a live URL."""
        record: dict[str, Any] = json.loads(self._line(*self.latest[url]))
        return record

    def _write(self, out: BinaryIO, cycle: int, record: dict[str, Any]) -> None:
        offset = out.tell()
        out.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
        if record.get("deleted"):
            self.latest.pop(record["url"], None)
        else:
            self.latest[record["url"]] = (cycle, offset)

    def drop_unused(self) -> None:
        """Remove the files of the cycles that hold no live URL's latest record."""
        used = {cycle for cycle, _ in self.latest.values()}
        for cycle in set(self.files) - used:
            reader = self._readers.pop(cycle, None)
            if reader is not None:
                reader.close()
            self.files.pop(cycle).unlink(missing_ok=True)

    def first(self, path: Path) -> CycleCounts:
        """Cycle 1: every URL fetched once, as the corpus stream has them."""
        counts, self.files[1] = CycleCounts(1), path
        with path.open("wb") as out:
            for page in itertools.islice(self.stream, self.urls):
                record = _record(page.url, page.content, page.content_type, page.fetched_at)
                self._write(out, 1, record)
                self.live.append(page.url)
                counts.new += 1
        self.last_fetch = datetime.fromisoformat(page.fetched_at)
        counts.records = counts.live_urls = len(self.live)
        counts.actions["new"] = counts.new
        return counts

    def plan(self, cycle: int) -> tuple[_Array, _Array, _Array]:
        """Each live URL's action in ``cycle``, the page each copy copies (an index into
        ``live``, or -1) and the places in the cycle's fetch order where new URLs come."""
        shape, n = self.shape, len(self.live)
        rng = np.random.default_rng([self.seed, 0xC7C1E, cycle])
        order = rng.permutation(n)
        deleted, changed = round(shape.deleted * n), round(shape.changed * n)
        rest = n - deleted - changed
        same = rest if shape.unchanged is None else min(rest, round(shape.unchanged * n))
        actions = np.full(n, SKIP, dtype=np.int64)
        actions[order[:deleted]] = DELETE
        change = order[deleted : deleted + changed]
        copies, replaced = round(shape.copy * changed), round(shape.replace * changed)
        actions[change] = EDIT
        actions[change[:copies]] = COPY
        actions[change[copies : copies + replaced]] = REPLACE
        unchanged = order[deleted + changed : deleted + changed + same]
        actions[unchanged] = SAME
        sources = np.full(n, -1, dtype=np.int64)
        pool = unchanged if len(unchanged) else order[deleted:]
        if copies and len(pool):
            sources[change[:copies]] = rng.choice(pool, size=copies)
        new = round(shape.new * n)
        slots = np.sort(rng.choice(n + new, size=new, replace=False))
        return actions, sources, slots

    def next(self, path: Path, cycle: int) -> CycleCounts:
        """A later cycle: the live URLs in their order, each as the plan says, new URLs at
        their places, one fetch a second from a day after the previous cycle."""
        actions, sources, slots = self.plan(cycle)
        rng = np.random.default_rng([self.seed, 0xED17, cycle])
        copied = {int(i): self.read(self.live[int(i)]) for i in np.unique(sources[sources >= 0])}
        is_new = np.zeros(len(self.live) + len(slots), dtype=bool)
        is_new[slots] = True
        counts, live, kept = CycleCounts(cycle), iter(enumerate(self.live)), []
        start, self.files[cycle] = self.last_fetch + _CYCLE_GAP, path
        with path.open("wb") as out:
            for position, new in enumerate(is_new.tolist()):
                if new:
                    page = next(self.stream)
                    url, action = page.url, -1
                    record = _record(url, page.content, page.content_type, "")
                else:
                    index, url = next(live)
                    action = int(actions[index])
                    source = copied.get(int(sources[index]))
                    record = self._fetch(url, action, source, rng) if action != SKIP else {}
                counts.actions[_ACTION_NAMES[action] if action >= 0 else "new"] += 1
                if action != DELETE:
                    kept.append(url)
                if record:
                    record["fetched_at"] = _stamp(start + position * _FETCH_STEP)
                    self._write(out, cycle, record)
                    counts.records += 1
        self.live = kept
        self.last_fetch = start + len(is_new) * _FETCH_STEP
        counts.new, counts.live_urls = counts.actions["new"], len(kept)
        return counts

    def _fetch(
        self, url: str, action: int, source: dict[str, Any] | None, rng: np.random.Generator
    ) -> dict[str, Any]:
        """The record of a refetch of ``url`` (its ``fetched_at`` is set by the caller)."""
        if action == DELETE:
            return {"url": url, "deleted": True}
        if action == REPLACE:
            page = next(self.stream)
            return _record(url, page.content, page.content_type, "")
        base = source if action == COPY and source is not None else self.read(url)
        content, content_type = base["content"], base["content_type"]
        if action in (EDIT, COPY):
            rates = self.shape.edit_rates if action == EDIT else self.shape.copy_rates
            rate = float(rates[int(rng.integers(0, len(rates)))])
            content = edit(content, content_type.split(";")[0] != "text/plain", rate, rng)
        return _record(url, content, content_type, "")

    def write_latest(self, path: Path) -> int:
        """Each live URL's latest record, in the order they were fetched: a fresh run's input."""
        order = sorted(self.latest[url] for url in self.live)
        with path.open("wb") as out:
            for cycle, offset in order:
                out.write(self._line(cycle, offset))
        return len(order)


# --- children ---------------------------------------------------------------------------------


def _neardup(*arguments: str) -> list[str]:
    return tied_command([sys.executable, "-m", "neardup.streams", *arguments])


def timed_child(command: list[str], stdout: Path, stderr: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, ``wait4``: the child's own) of a command that must
    succeed. The child ends with this process however it ends (``command`` is tied)."""
    started = time.perf_counter()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err)
    try:
        _, status, usage = os.wait4(child.pid, 0)
    except BaseException:
        child.send_signal(signal.SIGKILL)
        child.wait()
        raise
    seconds = time.perf_counter() - started
    child.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
    if code != 0:
        program = " ".join(command[4:9])  # past tied_command's launcher
        raise RuntimeError(f"{program} failed ({code}): {stderr.read_text()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def _output(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def read_clusters(state: Path) -> list[list[str]]:
    """The members (URLs) of each cluster that ``neardup clusters --state`` prints."""
    lines = _output(_neardup("clusters", "--state", str(state))).splitlines()
    return [json.loads(line)["members"] for line in lines if line]


def read_stats(state: Path) -> dict[str, Any]:
    stats: dict[str, Any] = json.loads(_output(_neardup("stats", "--state", str(state))))
    return stats


def _reasons(path: Path, key: str) -> dict[str, int]:
    """The JSON Lines records of ``path`` counted by their ``key`` (a missing file: none)."""
    if not path.exists():
        return {}
    with path.open("rb") as lines:
        return dict(sorted(Counter(json.loads(line)[key] for line in lines if line).items()))


# --- the report -------------------------------------------------------------------------------


def compare_clusters(state: list[list[str]], fresh: list[list[str]]) -> dict[str, Any]:
    """The two runs' clusters as sets of URL sets: equal or not, how many of each side's the
    other lacks, the state's clusters of one URL's versions alone and its URLs in more than
    one cluster."""
    mine = [frozenset(members) for members in state]
    theirs = {frozenset(members) for members in fresh}
    seen = Counter(url for members in mine for url in members)
    return {
        "clusters_equal_fresh": set(mine) == theirs,
        "clusters": len(state),
        "fresh_clusters": len(fresh),
        "clusters_not_in_fresh": len(set(mine) - theirs),
        "fresh_clusters_not_in_state": len(theirs - set(mine)),
        "clusters_of_one_url": sum(1 for members in mine if len(members) == 1),
        "urls_in_several_clusters": sum(1 for count in seen.values() if count > 1),
    }


def run_cycle(
    crawl: Crawl, cycle: int, work: Path, state: Path, prepare: str, settings: list[str]
) -> dict[str, Any]:
    """Write cycle ``cycle``, run it through ``neardup run`` on ``state``; its table row."""
    path = work / f"cycle-{cycle}.jsonl"
    began = time.perf_counter()
    counts = crawl.first(path) if cycle == 1 else crawl.next(path, cycle)
    written = time.perf_counter() - began
    events, dead = work / f"events-{cycle}.jsonl", work / f"dead-letters-{cycle}.jsonl"
    seconds, rss = timed_child(
        _neardup("run", "--prepare", prepare, "--quiet", "--state", str(state),
                 *settings, "--events", str(events), "--dead-letters", str(dead), str(path)),
        work / f"run-{cycle}.out", work / f"run-{cycle}.err",
    )  # fmt: skip
    row = {
        **{k: v for k, v in asdict(counts).items() if k not in ("actions", "new")},
        **{name: counts.actions.get(name, 0) for name in ("new", *_ACTION_NAMES)},
        "seconds_to_write": round(written, 1),
        "seconds": round(seconds, 2),
        "pages_per_second": round(counts.records / seconds, 1),
        "peak_rss_mb": round(rss, 1),
        "state_bytes": _disk_bytes(state),
        "events": _reasons(events, "type"),
        "dead_letters": _reasons(dead, "reason"),
    }
    events.unlink(missing_ok=True)
    dead.unlink(missing_ok=True)
    crawl.drop_unused()  # the cycles' files that later cycles and the fresh run do not read
    return row


def fresh_run(
    crawl: Crawl, work: Path, prepare: str, settings: list[str]
) -> tuple[Path, dict[str, Any]]:
    """A new state from each live URL's latest record; the state and the run's figures."""
    path, state = work / "latest.jsonl", work / "fresh-state"
    records = crawl.write_latest(path)
    seconds, rss = timed_child(
        _neardup("run", "--prepare", prepare, "--quiet", "--state", str(state), *settings,
                 str(path)),
        work / "fresh.out", work / "fresh.err",
    )  # fmt: skip
    path.unlink()
    return state, {
        "records": records,
        "seconds": round(seconds, 2),
        "pages_per_second": round(records / seconds, 1),
        "peak_rss_mb": round(rss, 1),
        "state_bytes": _disk_bytes(state),
    }


def summarize(
    rows: list[dict[str, Any]], state: Path, fresh: Path, live_urls: int
) -> dict[str, Any]:
    """The state against the fresh run's, and the cycles against the first."""
    stats, fresh_stats = read_stats(state), read_stats(fresh)
    dead: Counter[str] = Counter()
    for row in rows:
        dead.update(row["dead_letters"])
    speeds = [row["pages_per_second"] / rows[0]["pages_per_second"] for row in rows]
    compared = compare_clusters(read_clusters(state), read_clusters(fresh))
    compacted = _compacted_bytes(state)
    return {
        **compared,
        "documents": stats["documents"],
        "fresh_documents": fresh_stats["documents"],
        "live_urls": live_urls,
        "documents_equal_live_urls": stats["documents"] == live_urls,
        "dead_letters": dict(sorted(dead.items())),
        "slowest_cycle_over_first": round(min(speeds), 3),
        "state_bytes_after_first_cycle": rows[0]["state_bytes"],
        "state_bytes_after_last_cycle": rows[-1]["state_bytes"],
        "compacted_bytes_after_last_cycle": compacted,
        "compacted_last_over_first_cycle": round(compacted / rows[0]["state_bytes"], 3),
    }


def _print(report: dict[str, Any]) -> None:
    """The cycles as a table, on standard error (standard output is the JSON report)."""
    columns = ("cycle", "records", "unchanged", "edited", "copied", "replaced", "deleted",
               "new", "pages_per_second", "peak_rss_mb", "state_bytes")  # fmt: skip
    rows = [columns, *[tuple(str(row[c]) for c in columns) for row in report["cycles"]]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        line = "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        print(line, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crawl", description=__doc__)
    parser.add_argument("--urls", type=int, help="URLs of cycle 1 (default 100,000)")
    parser.add_argument("--cycles", type=int, help="crawl cycles (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", default="default", choices=sorted(CORPORA))
    parser.add_argument(
        "--two-crawl", action="store_true", help="issue 44's trial: 2,500 URLs, two crawls"
    )
    parser.add_argument("--prepare", default="thread", choices=("thread", "process"))
    parser.add_argument(
        "--versions", default="latest", choices=("all", "latest"), help="the states' setting"
    )
    parser.add_argument(
        "--keep-versions", type=int, help="departed versions kept a url (default: neardup's)"
    )
    parser.add_argument(
        "--work", type=Path, help="work in this directory (default: a temporary one)"
    )
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    if args.two_crawl and args.cycles not in (None, 2):
        parser.error("--two-crawl is two crawls: leave --cycles out")
    urls = args.urls or (TWO_CRAWL_URLS if args.two_crawl else 100_000)
    cycles = 2 if args.two_crawl else args.cycles or 5
    if urls < 1 or cycles < 1:
        parser.error("--urls and --cycles must be at least 1")
    shape = TWO_CRAWL if args.two_crawl else CONTINUOUS
    with tempfile.TemporaryDirectory(prefix="neardup-crawl-") as tmp:
        work = args.work or Path(tmp)
        shutil.rmtree(work / "state", ignore_errors=True)
        shutil.rmtree(work / "fresh-state", ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        crawl = Crawl(urls, args.seed, shape, args.corpus)
        try:
            settings = ["--versions", args.versions]
            if args.keep_versions is not None:
                settings += ["--keep-versions", str(args.keep_versions)]
            rows = [run_cycle(crawl, c, work, work / "state", args.prepare, settings)
                    for c in range(1, cycles + 1)]  # fmt: skip
            for row in rows:
                row["pages_per_second_over_first"] = round(
                    row["pages_per_second"] / rows[0]["pages_per_second"], 3
                )
            fresh, fresh_row = fresh_run(crawl, work, args.prepare, settings)
        finally:
            crawl.close()
        summary = summarize(rows, work / "state", fresh, len(crawl.live))
    report = {
        "urls": urls,
        "cycles_run": cycles,
        "seed": args.seed,
        "corpus": args.corpus,
        "preset": "two-crawl" if args.two_crawl else "continuous",
        "shape": asdict(shape),
        "prepare": args.prepare,
        "versions": args.versions,
        "keep_versions": args.keep_versions,
        "cycles": rows,
        "fresh_run": fresh_row,
        "summary": summary,
    }
    _print(report)
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
