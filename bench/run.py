"""One command, every system, the same input, the same run: ``python -m bench``.

The corpus (bench/corpus.py) is written once as JSON Lines; the ground truth is computed
once by brute force (bench/truth.py) on neardup's canonical shingle sets; then each system
runs in its own process, end to end from reading the file to writing its clusters:

* neardup: ``neardup run --prepare thread --state DIR --quiet --clusters OUT FILE``, one
  process: the system the targets speak of;
* neardup-process: the same with ``--prepare process`` (the default of ``neardup run``):
  pages are prepared in a child process, on a second core;
* the peers: ``python -m bench.peers.<peer>_peer FILE OUT`` (bench/peers/: the same canonical
  tokens and w-shingles, each peer's own MinHash, its own LSH index and verification of
  candidates at the threshold, union-find over the verified pairs), streaming one page at a
  time as a crawler runs them (``datasketch``, ``rensa``, ``gaoya``), and with ``--bulk``:
  the whole corpus read first and sketched with the library's bulk path
  (``datasketch-bulk``, ``rensa-bulk``, ``gaoya-bulk``).

The corpus is one of bench/corpus.py's named kinds (``--corpus``: ``default``, ``dense``);
the report gives its measured density: the share of pages in true clusters and the pairs at
exact J >= T a page.

Per system: wall seconds, documents/s, MB/s of input, peak RSS (``wait4``; for a system of
several processes, the peak of their sum, sampled every 20 ms), bytes of state on disk per
document, pairwise precision/recall/F1 of co-membership against the connected components of
"exact Jaccard >= T", and recall of the pairs whose exact Jaccard is at least 0.8.

A shared machine's speed drifts, so ``--repeat N`` runs every system N times, in rounds (each
round runs them all, one after the other): the table shows the median time of each, and the
report the ratio of neardup's documents/s to the fastest streaming peer's (and to the fastest
bulk peer's), per round and its median.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from neardup.state import State

from .containment_queries import containment_query_latency
from .corpus import CORPORA, generate, iter_pages, write_jsonl
from .truth import PairScores, pair_scores, pairwise_scores, true_clusters

__all__ = ["Result", "main"]

#: peer system -> (the package it needs, its module in bench/peers/, its arguments)
PEERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "datasketch": ("datasketch", "datasketch_peer", ()),
    "rensa": ("rensa", "rensa_peer", ()),
    "gaoya": ("gaoya", "gaoya_peer", ()),
    "datasketch-bulk": ("datasketch", "datasketch_peer", ("--bulk",)),
    "rensa-bulk": ("rensa", "rensa_peer", ("--bulk",)),
    "gaoya-bulk": ("gaoya", "gaoya_peer", ("--bulk",)),
}
#: the peers as a crawler runs them, one page at a time: the ratios' reference
STREAMING_PEERS = tuple(p for p, (_, _, args) in PEERS.items() if "--bulk" not in args)
BULK_PEERS = tuple(p for p in PEERS if p not in STREAMING_PEERS)
#: neardup in one process, with a prepare process, and in one process without the
#: containment index (what that index costs)
NEARDUP = {
    "neardup": "thread",
    "neardup-process": "process",
    "neardup-no-containment": "thread",
    "neardup-all": "thread",
}
#: the settings a variant of neardup runs with beside the defaults
_FLAGS = {
    "neardup-no-containment": ["--containment-sample", "0"],
    # every fetch a document (an archive), against the default: a url's latest fetch counts
    "neardup-all": ["--versions", "all"],
}
#: run only when named (``--systems neardup,neardup-all``): what a setting costs
ON_REQUEST = ("neardup-all",)
SYSTEMS = tuple(name for name in (*NEARDUP, *PEERS) if name not in ON_REQUEST)


@dataclass(slots=True)
class Result:
    system: str
    seconds: float | None = None
    docs_per_second: float | None = None
    megabytes_per_second: float | None = None
    peak_rss_mb: float | None = None
    state_bytes_per_doc: float | None = None
    #: the same state after a full compaction: without the replaced versions of rewritten
    #: posting lists, which RocksDB's own compactions drop as the state grows
    compacted_bytes_per_doc: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    recall_at_08: float | None = None
    note: str = ""
    #: wall seconds of each round (``seconds`` is their median)
    rounds: list[float] = field(default_factory=list)
    #: a peer's own report of its last round: seconds by phase, candidates, bands
    phases: dict[str, object] = field(default_factory=dict)


# A child's ru_maxrss counts the image it was forked from, so every system is started from
# this small, fresh interpreter, which reports its own child's peak: wait4 gives the peak of
# the largest process, so the sum of the process tree is sampled too, for systems of several.
_MEASURE = """
import os, resource, subprocess, sys, time
def tree_kb(root):
    # walks down from the root through each thread's children list: reading every process's
    # stat to find them cost more CPU per sample, on the cores being measured
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/status") as fh:
                total += sum(int(l.split()[1]) for l in fh if l.startswith("VmRSS:"))
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:  # it ended
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    todo.extend(map(int, fh.read().split()))
            except OSError:
                pass
    return total
out = sys.argv[1]
with open(out if out != "-" else "/dev/null", "w") as stdout:
    child = subprocess.Popen(sys.argv[2:], stdout=stdout)
    summed = 0
    while child.poll() is None:
        summed = max(summed, tree_kb(child.pid))
        time.sleep(0.02)
print(max(summed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(child.returncode)
"""


def _run(command: list[str], stdout: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command, which must succeed."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(stdout or "-"), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[:4]} failed: {done.stderr[-2000:]}")
    return seconds, int(done.stdout.split()[-1]) / 1024


def _read_clusters(path: Path) -> list[list[str]]:
    return [json.loads(line)["members"] for line in path.read_text().splitlines() if line]


#: the files RocksDB writes anew each time a state is opened: its diagnostic LOG, its
#: OPTIONS (the last two kept) and its MANIFEST (rewritten whole)
_WRITTEN_ON_OPEN = ("LOG", "OPTIONS-", "MANIFEST-")


def _disk_bytes(path: Path, skipped: tuple[str, ...] = ()) -> int:
    """The bytes of the files under ``path``, but those whose names start with ``skipped``."""
    return sum(
        f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.name.startswith(skipped)
    )


def _compacted_bytes(state: Path) -> int:
    """The state's bytes after the run with its data compacted. Opening it again to compact
    writes RocksDB's own files anew (a new LOG, a second OPTIONS file, a new
    MANIFEST): only the data's change counts, or compacting a small state whose background
    compactions had already run would seem to grow it."""
    whole, data = _disk_bytes(state), _disk_bytes(state, _WRITTEN_ON_OPEN)
    with State.open(state) as opened:
        opened.store.compact()
    return whole - data + _disk_bytes(state, _WRITTEN_ON_OPEN)


Run = tuple[float, float, Path, int, dict[str, object]]


def _neardup(system: str, corpus: Path, work: Path, threshold: float) -> Run:
    state, out = work / f"{system}-state", work / f"{system}-clusters.jsonl"
    shutil.rmtree(state, ignore_errors=True)  # every round starts from nothing
    # (the last round's state stays, for the containment queries)
    seconds, rss = _run(
        [sys.executable, "-m", "neardup.streams", "run", "--prepare", NEARDUP[system],
         "--state", str(state), "--quiet", "--threshold", str(threshold), "--clusters",
         str(out), *_FLAGS.get(system, []), str(corpus)]
    )  # fmt: skip
    return seconds, rss, out, _disk_bytes(state), {}


def _peer(name: str, corpus: Path, work: Path, threshold: float) -> Run:
    out, report = work / f"{name}-clusters.jsonl", work / f"{name}-report.json"
    _, module, extra = PEERS[name]
    seconds, rss = _run(
        [sys.executable, "-m", f"bench.peers.{module}", str(corpus), str(out),
         "--threshold", str(threshold), *extra],
        stdout=report,
    )  # fmt: skip
    lines = report.read_text().splitlines()
    return seconds, rss, out, 0, json.loads(lines[-1]) if lines else {}


def density(scores: PairScores, clusters: list[list[str]], threshold: float) -> dict[str, object]:
    """How dense a corpus's near-duplicates are, by brute force on its shingle sets: the
    share of pages in a true cluster (a component of "exact Jaccard >= T" with two members
    or more) and the pairs at exact J >= T a page."""
    pages = len(scores.sizes)
    in_clusters = sum(len(c) for c in clusters)
    pairs = int(np.count_nonzero(scores.jaccard >= threshold))
    return {
        "pages": pages,
        "pages_in_clusters": in_clusters,
        "share_in_clusters": round(in_clusters / pages, 4) if pages else 0.0,
        "pairs_at_threshold": pairs,
        "pairs_at_threshold_per_page": round(pairs / pages, 4) if pages else 0.0,
        "clusters": len(clusters),
        "largest_cluster": max((len(c) for c in clusters), default=0),
    }


def _truth(pages: list[object], threshold: float) -> tuple[list[list[str]], PairScores]:
    from neardup.core import Settings, Tokenizer, shingle_sets, to_canonical_text

    settings = Settings(threshold=threshold)
    tokens = Tokenizer(settings.seed, settings.token_unit).hash_batch(
        [to_canonical_text(p.content, p.content_type) for p in pages]  # type: ignore[attr-defined]
    )
    scores = pair_scores(shingle_sets(tokens, settings.shingle_size, settings.seed))
    urls = [p.url for p in pages]  # type: ignore[attr-defined]
    return [[urls[i] for i in c] for c in true_clusters(scores, threshold)], scores


def _recall_of_close_pairs(
    predicted: list[list[str]], scores: PairScores, urls: list[str], floor: float = 0.8
) -> float:
    label = {url: index for index, cluster in enumerate(predicted) for url in cluster}
    close = np.flatnonzero(scores.jaccard >= floor)
    if not len(close):
        return 1.0
    found = sum(
        1
        for i, j in zip(scores.i[close].tolist(), scores.j[close].tolist(), strict=True)
        if urls[i] in label and label.get(urls[i]) == label.get(urls[j])
    )
    return found / len(close)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--corpus", default="default", choices=sorted(CORPORA), help="bench/corpus.py's kind"
    )
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--no-truth", action="store_true", help="skip accuracy (scale runs)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every system (median time reported)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: use 1 or more rounds")
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - {*SYSTEMS, *ON_REQUEST})
    if unknown:
        known = ", ".join((*SYSTEMS, *ON_REQUEST))
        parser.error(f"unknown systems {unknown}: choose from {known}")

    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus.jsonl"
        truth: list[list[str]] | None = None
        scores: PairScores | None = None
        urls: list[str] = []
        kind = CORPORA[args.corpus]
        dense: dict[str, object] | None = None
        if args.no_truth:  # scale runs: stream the corpus to disk, never all in memory
            write_jsonl(iter_pages(args.docs, seed=args.seed, **kind), str(corpus))
        else:
            pages = generate(args.docs, seed=args.seed, **kind)
            write_jsonl(pages, str(corpus))
            truth, scores = _truth(pages, args.threshold)
            dense = density(scores, truth, args.threshold)
            urls = [p.url for p in pages]
            del pages
        megabytes = corpus.stat().st_size / 1e6
        installed = [
            system
            for system in systems
            if system in NEARDUP or importlib.util.find_spec(PEERS[system][0]) is not None
        ]
        runs: dict[str, list[Run]] = {s: [] for s in installed}
        for _ in range(args.repeat):
            for system in installed:
                if system in NEARDUP:
                    runs[system].append(_neardup(system, corpus, work, args.threshold))
                else:
                    runs[system].append(_peer(system, corpus, work, args.threshold))
        for system in systems:
            if system not in runs:
                results.append(Result(system, note="not installed (pip install '.[bench]')"))
                continue
            rounds = [seconds for seconds, _, _, _, _ in runs[system]]
            seconds = statistics.median(rounds)
            _, _, out, disk, phases = runs[system][-1]
            compacted = _compacted_bytes(work / f"{system}-state") if system in NEARDUP else 0
            result = Result(
                system,
                seconds=round(seconds, 2),
                docs_per_second=round(args.docs / seconds, 1),
                megabytes_per_second=round(megabytes / seconds, 2),
                peak_rss_mb=round(max(r for _, r, _, _, _ in runs[system]), 1),
                state_bytes_per_doc=round(disk / args.docs, 1) if disk else None,
                compacted_bytes_per_doc=round(compacted / args.docs, 1) if compacted else None,
                rounds=[round(r, 2) for r in rounds],
                phases=phases,
            )
            if truth is not None and scores is not None:
                predicted = _read_clusters(out)
                result.precision, result.recall, result.f1 = (
                    round(v, 4) for v in pairwise_scores(predicted, truth)
                )
                result.recall_at_08 = round(_recall_of_close_pairs(predicted, scores, urls), 4)
            results.append(result)
        queries = (
            containment_query_latency(work / "neardup-state", corpus)
            if "neardup" in installed
            else None
        )
    report = {
        "docs": args.docs,
        "seed": args.seed,
        "corpus": args.corpus,
        "corpus_arguments": kind,
        "density": dense,
        "threshold": args.threshold,
        "megabytes": round(megabytes, 2),
        "rounds": args.repeat,
        "results": [asdict(r) for r in results],
        **{_ratio_key(system): _ratios(results, system, STREAMING_PEERS) for system in NEARDUP},
        **{_ratio_key(system, "bulk_"): _ratios(results, system, BULK_PEERS) for system in NEARDUP},
        "containment_cost": _containment_cost(results),
        "containment_queries": queries,
    }
    _print_table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _containment_cost(results: list[Result]) -> dict[str, float] | None:
    """What the containment index costs neardup (one process): time and bytes per document
    on disk, against the same run without it."""
    by_name = {r.system: r for r in results}
    with_it, without = by_name.get("neardup"), by_name.get("neardup-no-containment")
    if not (with_it and without and with_it.seconds and without.seconds):
        return None
    return {
        "slowdown": round(with_it.seconds / without.seconds - 1, 4),
        "bytes_per_doc_more": round(
            (with_it.state_bytes_per_doc or 0) - (without.state_bytes_per_doc or 0), 1
        ),
        "compacted_bytes_per_doc_more": round(
            (with_it.compacted_bytes_per_doc or 0) - (without.compacted_bytes_per_doc or 0), 1
        ),
    }


def _ratio_key(system: str, kind: str = "") -> str:
    """Where the report keeps a neardup system's ratio: ``neardup_over_fastest_peer`` (the
    streaming peers), ``neardup_over_fastest_bulk_peer``, ..."""
    return system.replace("-", "_") + f"_over_fastest_{kind}peer"


def _ratios(results: list[Result], system: str, among: tuple[str, ...]) -> dict[str, object] | None:
    """A neardup system's documents/s over the fastest of the peers ``among``: in each
    round, and their median."""
    timed = {r.system: r.rounds for r in results if r.rounds}
    peers = [name for name in timed if name in among]
    if system not in timed or not peers:
        return None
    per_round = [
        min(timed[peer][i] for peer in peers) / mine for i, mine in enumerate(timed[system])
    ]
    return {
        "median": round(statistics.median(per_round), 2),
        "rounds": [round(ratio, 2) for ratio in per_round],
    }


def _print_table(report: dict[str, object]) -> None:
    columns = [
        ("system", "system"),
        ("seconds", "s"),
        ("docs_per_second", "docs/s"),
        ("megabytes_per_second", "MB/s"),
        ("peak_rss_mb", "peak MB"),
        ("state_bytes_per_doc", "disk B/doc"),
        ("compacted_bytes_per_doc", "compacted"),
        ("precision", "P"),
        ("recall", "R"),
        ("f1", "F1"),
        ("recall_at_08", "R@J>=0.8"),
        ("note", ""),
    ]
    rows = [[title for _, title in columns]]
    for result in report["results"]:  # type: ignore[attr-defined]
        rows.append(["" if result[k] is None else str(result[k]) for k, _ in columns])
    widths = [max(len(row[c]) for row in rows) for c in range(len(columns))]
    print(
        f"{report['docs']:,} documents ({report['megabytes']} MB), corpus {report['corpus']}, "
        f"seed {report['seed']}, T = {report['threshold']}"
    )
    dense = report.get("density")
    if isinstance(dense, dict):
        print(
            f"density: {dense['share_in_clusters']:.1%} of pages in {dense['clusters']:,} true "
            f"clusters (largest {dense['largest_cluster']}), "
            f"{dense['pairs_at_threshold_per_page']} pairs at J >= {report['threshold']} a page"
        )
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for kind, label in (("", "fastest streaming peer"), ("bulk_", "fastest bulk peer")):
        for system in NEARDUP:
            ratio = report.get(_ratio_key(system, kind))
            if isinstance(ratio, dict):
                print(
                    f"{system} / {label}, documents/s: {ratio['median']}x (median of "
                    f"{report['rounds']} rounds: {', '.join(map(str, ratio['rounds']))})"
                )
    cost = report.get("containment_cost")
    if isinstance(cost, dict):
        print(
            f"containment index: {cost['slowdown']:+.1%} time, "
            f"{cost['bytes_per_doc_more']:+} B/doc on disk "
            f"({cost['compacted_bytes_per_doc_more']:+} B/doc compacted)"
        )
    queries = report.get("containment_queries")
    if isinstance(queries, dict):
        print(
            f"containment queries ({queries['queries']} excerpts): p50 {queries['p50_ms']} ms, "
            f"p99 {queries['p99_ms']} ms, source (or a copy) returned "
            f"{queries['source_returned']:.1%}, first {queries['source_first']:.1%}"
        )
