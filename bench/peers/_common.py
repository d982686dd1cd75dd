"""What every peer pipeline shares: input, canonical tokens, shingles and union-find.

What every peer pipeline shares: reading the input contract, canonical tokens, shingles,
union-find, the cluster output and the command line.  Only sketching, LSH and the verification
of candidates differ between peers, so their timings compare like with like.

Two ways to run a peer.  Streaming (the default), as a crawler runs it: one JSON line read,
its canonical tokens and shingles, then the peer sketches that page, queries its LSH index,
verifies the candidates against its stored sketches and inserts it; nothing of the corpus is
held but the URLs for the output, the union-find and the peer's own index and sketches.
``--bulk``: the whole corpus read first and every shingle set held, then sketched with the
library's bulk path (reported as ``<peer>-bulk``).

Canonical form, as neardup's ``core/canonical.py`` defines it: HTML (by declared type, or
sniffed when there is none) parsed with selectolax's Lexbor parser, ``script``, ``style``,
``noscript``, ``template`` and ``svg`` dropped, text of the whole document (title included),
``str.casefold``; tokens are maximal runs of ``[^\\W_]``.  Shingles are ``w`` consecutive tokens
joined by one space; a document with 1 to w-1 tokens has one shingle of all its tokens.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

from selectolax.lexbor import LexborHTMLParser

Pairs = list[tuple[int, int]]
# detect(shingle_sets, threshold, num_perm) -> (verified pairs, phase timings in seconds)
Phases = dict[str, float | int | str]
Detector = Callable[[list[list[str]], float, int], tuple[Pairs, Phases]]
Sketch = TypeVar("Sketch")


class Streamer(Protocol):
    """A peer as a crawler runs it: one page at a time, holding only its index and sketches."""

    def add(self, key: int, shingles: list[str]) -> list[int]:
        """Sketch one page, query the index of the earlier ones, verify the candidates
        (estimated Jaccard >= threshold), insert the page; the keys of the verified ones."""
        ...

    def phases(self) -> Phases:
        """Seconds spent in each phase so far, and counters (candidates, bands, rows)."""
        ...


# make_streamer(threshold, num_perm) -> a fresh streaming pipeline
StreamerFactory = Callable[[float, int], Streamer]


class SketchStreamer(Generic[Sketch]):
    """A ``Streamer`` over a library whose sketches the caller holds: each page sketched,
    the index queried, each candidate verified against its stored sketch, the page
    inserted, each step timed. A peer gives the four library calls and its index's shape."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.sketches: dict[int, Sketch] = {}
        self.sketch_s = self.query_verify_s = self.insert_s = 0.0
        self.candidates = 0

    def sketch(self, shingles: list[str]) -> Sketch:
        raise NotImplementedError

    def query(self, sketch: Sketch) -> Iterable[int]:
        raise NotImplementedError

    def jaccard(self, sketch: Sketch, other: Sketch) -> float:
        raise NotImplementedError

    def insert(self, key: int, sketch: Sketch) -> None:
        raise NotImplementedError

    def shape(self) -> tuple[int, int]:
        """The index's bands and rows."""
        raise NotImplementedError

    def add(self, key: int, shingles: list[str]) -> list[int]:
        t0 = time.perf_counter()
        m = self.sketch(shingles)
        t1 = time.perf_counter()
        found = []
        for j in self.query(m):
            self.candidates += 1
            if self.jaccard(m, self.sketches[j]) >= self.threshold:
                found.append(j)
        t2 = time.perf_counter()
        self.insert(key, m)
        self.sketches[key] = m
        t3 = time.perf_counter()
        self.sketch_s += t1 - t0
        self.query_verify_s += t2 - t1
        self.insert_s += t3 - t2
        return found

    def phases(self) -> Phases:
        bands, rows = self.shape()
        return {
            "sketch_s": self.sketch_s,
            "query_verify_s": self.query_verify_s,
            "insert_s": self.insert_s,
            "candidates": self.candidates,
            "bands": bands,
            "rows": rows,
        }


_TOKEN = re.compile(r"[^\W_]+")
_DROPPED = ["script", "style", "noscript", "template", "svg"]
_HTML_SNIFF = re.compile(
    r"<\s*(?:!doctype\s+html|html|head|body|title|meta|div|p|br|span|a|table|ul|li|h[1-6])\b",
    re.IGNORECASE,
)


def _is_html(content: str, content_type: str) -> bool:
    declared = content_type.lower()
    if "html" in declared or "xml" in declared:
        return True
    if declared and not declared.startswith("application/octet-stream"):
        return False
    head = content[:2048].lstrip()
    return head.startswith("<") and _HTML_SNIFF.search(head) is not None


def canonical_tokens(content: str, content_type: str) -> list[str]:
    if _is_html(content, content_type):
        tree = LexborHTMLParser(content)
        tree.strip_tags(_DROPPED)
        root = tree.root
        content = "" if root is None else str(root.text(separator=" "))
    return _TOKEN.findall(content.casefold())


def shingles(tokens: list[str], w: int) -> list[str]:
    if len(tokens) < w:
        return [" ".join(tokens)] if tokens else []
    return list({" ".join(tokens[i : i + w]) for i in range(len(tokens) - w + 1)})


class UnionFind:
    """Union-find over documents 0..n-1 that grows as documents arrive."""

    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        """Connected components with at least two members, by their first member."""
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return sorted((g for g in out.values() if len(g) > 1), key=lambda g: g[0])


def clusters(n: int, pairs: Pairs) -> list[list[int]]:
    """Connected components with at least two members, by union-find."""
    found = UnionFind()
    for _ in range(n):
        found.add()
    for a, b in pairs:
        found.union(a, b)
    return found.groups()


def _arguments(name: str, argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=f"python -m bench.peers.{name}_peer")
    ap.add_argument("input", help="JSON Lines: url, content, fetched_at, content_type")
    ap.add_argument("output", help="JSON Lines clusters: cluster, size, members")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--shingle-size", type=int, default=5)
    ap.add_argument(
        "--bulk",
        action="store_true",
        help="read the whole corpus first, keep every shingle set, sketch in bulk",
    )
    return ap.parse_args(argv)


def _write_clusters(path: str, urls: list[str], groups: list[list[int]]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for cid, members in enumerate(groups):
            rec_out = {"cluster": cid, "size": len(members), "members": [urls[i] for i in members]}
            out.write(json.dumps(rec_out) + "\n")


def main(
    name: str,
    make_streamer: StreamerFactory,
    detect: Detector,
    argv: Sequence[str] | None = None,
) -> None:
    """``python -m bench.peers.<name> IN OUT``: streaming, one page at a time (the default),
    or ``--bulk``: every shingle set first, then ``detect`` over all of them."""
    args = _arguments(name, argv)
    if args.bulk:
        _main_bulk(f"{name}-bulk", detect, args)
    else:
        _main_streaming(name, make_streamer, args)


def _main_streaming(name: str, make_streamer: StreamerFactory, args: argparse.Namespace) -> None:
    """Read one JSON line, canonical tokens, shingles, then the peer's sketch / query /
    verify / insert for that page; union-find over the verified pairs as they come.  Held
    across pages: the URLs (for the output), the union-find and whatever the peer keeps."""
    t0 = time.perf_counter()
    streamer = make_streamer(args.threshold, args.num_perm)
    found = UnionFind()
    urls: list[str] = []
    read_s = canonical_s = peer_s = 0.0
    verified = 0
    with open(args.input, encoding="utf-8") as fh:
        for line in fh:
            t = time.perf_counter()
            rec = json.loads(line)
            t_read = time.perf_counter()
            tokens = canonical_tokens(rec["content"], rec.get("content_type") or "")
            shs = shingles(tokens, args.shingle_size)
            t_canonical = time.perf_counter()
            key = found.add()
            urls.append(rec["url"])
            if shs:  # an empty set's sketch would match every other empty one
                for earlier in streamer.add(key, shs):
                    found.union(earlier, key)
                    verified += 1
            t_peer = time.perf_counter()
            read_s += t_read - t
            canonical_s += t_canonical - t_read
            peer_s += t_peer - t_canonical
    t1 = time.perf_counter()
    groups = found.groups()
    _write_clusters(args.output, urls, groups)
    t2 = time.perf_counter()
    _report(
        name,
        "streaming",
        len(urls),
        t2 - t0,
        {
            "json_parse_s": read_s,
            "canonicalize_s": canonical_s,
            "peer_s": peer_s,
            **streamer.phases(),
            "cluster_write_s": t2 - t1,
            "verified_pairs": verified,
            "clusters": len(groups),
        },
    )


def _main_bulk(name: str, detect: Detector, args: argparse.Namespace) -> None:
    """The whole corpus read first, every shingle set held, then ``detect`` over all."""
    t0 = time.perf_counter()
    urls: list[str] = []
    sets: list[list[str]] = []
    read_s = 0.0
    with open(args.input, encoding="utf-8") as fh:
        for line in fh:
            t = time.perf_counter()
            rec = json.loads(line)
            read_s += time.perf_counter() - t
            urls.append(rec["url"])
            tokens = canonical_tokens(rec["content"], rec.get("content_type") or "")
            sets.append(shingles(tokens, args.shingle_size))
    t1 = time.perf_counter()
    pairs, phases = detect(sets, args.threshold, args.num_perm)
    t2 = time.perf_counter()
    groups = clusters(len(urls), pairs)
    _write_clusters(args.output, urls, groups)
    t3 = time.perf_counter()
    _report(
        name,
        "bulk",
        len(urls),
        t3 - t0,
        {
            "read_canonicalize_s": t1 - t0,
            "json_parse_s": read_s,
            "detect_s": t2 - t1,
            **phases,
            "cluster_write_s": t3 - t2,
            "verified_pairs": len(pairs),
            "clusters": len(groups),
        },
    )


def _report(name: str, mode: str, n: int, seconds: float, phases: Phases) -> None:
    """One JSON line on stdout: the peer's own timings by phase (``python -m bench`` keeps
    them with its results)."""
    report = {
        "peer": name,
        "mode": mode,
        "docs": n,
        "seconds": round(seconds, 3),
        "docs_per_s": round(n / seconds, 1) if seconds > 0 else None,
        **{k: round(v, 3) if isinstance(v, float) else v for k, v in phases.items()},
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    sys.stdout.write(json.dumps(report) + "\n")
