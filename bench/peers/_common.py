"""What every peer pipeline shares: input, canonical tokens, shingles and union-find.

What every peer pipeline shares: reading the input contract, canonical tokens, shingles,
union-find, the cluster output and the command line.  Only sketching, LSH and the verification
of candidates differ between peers, so their timings compare like with like.

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
from collections.abc import Callable, Sequence

from selectolax.lexbor import LexborHTMLParser

Pairs = list[tuple[int, int]]
# detect(shingle_sets, threshold, num_perm) -> (verified pairs, phase timings in seconds)
Phases = dict[str, float | int | str]
Detector = Callable[[list[list[str]], float, int], tuple[Pairs, Phases]]

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


def clusters(n: int, pairs: Pairs) -> list[list[int]]:
    """Connected components with at least two members, by union-find."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]  # path halving
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def main(name: str, detect: Detector, argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog=f"python -m bench.peers.{name}")
    ap.add_argument("input", help="JSON Lines: url, content, fetched_at, content_type")
    ap.add_argument("output", help="JSON Lines clusters: cluster, size, members")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--shingle-size", type=int, default=5)
    args = ap.parse_args(argv)

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
    with open(args.output, "w", encoding="utf-8") as out:
        for cid, members in enumerate(groups):
            rec_out = {"cluster": cid, "size": len(members), "members": [urls[i] for i in members]}
            out.write(json.dumps(rec_out) + "\n")
    t3 = time.perf_counter()
    n = len(urls)
    report = {
        "peer": name,
        "docs": n,
        "seconds": round(t3 - t0, 3),
        "docs_per_s": round(n / (t3 - t0), 1) if t3 > t0 else None,
        "read_canonicalize_s": round(t1 - t0, 3),
        "json_parse_s": round(read_s, 3),
        "detect_s": round(t2 - t1, 3),
        **{k: round(v, 3) if isinstance(v, float) else v for k, v in phases.items()},
        "cluster_write_s": round(t3 - t2, 3),
        "verified_pairs": len(pairs),
        "clusters": len(groups),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    sys.stdout.write(json.dumps(report) + "\n")
