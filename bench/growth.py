"""How time and memory grow with the state, within one run: ``python -m bench.growth``.

Runs neardup as the targets speak of it (``neardup run --prepare thread``: one process) on the
corpus ``python -m bench --no-truth`` writes, with ``--stats`` logging every ``--every``
documents (``neardup.streams.running.progress.StatsLog``). Per stretch: documents so far, µs per
document in the stretch, the candidates and pairs estimated per document in it (the work the
corpus asks for), RSS, and state bytes per document; then the growth of time per document,
last stretch over first and whole run over first, that of pairs estimated per document, and
k in "total time grows as N^k" (1 for linear).
Measured within one run, the growth is free of the drift between runs of a shared machine
(its speed changes between hours: docs/benchmarks.md), which comparing separate runs of each
size is not.

Whole-run figures (wall seconds, peak RSS by ``wait4``, state size after close) are measured
as ``python -m bench`` measures them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from neardup.core import Settings

from .corpus import iter_pages, write_jsonl
from .report import emit
from .run import _disk_bytes, _run

__all__ = ["growth_report", "main"]


def growth_report(
    stats: list[dict[str, Any]], seconds: float, peak_rss_mb: float, disk_bytes: int
) -> dict[str, Any]:
    """The report from a run's statistics lines (``StatsLog``) and its whole-run figures."""
    stretches = [
        {
            "documents": line["records"],
            "seconds": line["window_seconds"],
            "us_per_doc": round(1e6 * line["window_seconds"] / line["window_records"], 1),
            # the work each document of the stretch cost, from the difference of the totals
            **{
                f"{work}_per_doc": round(
                    (line[work] - (before[work] if before else 0)) / line["window_records"], 2
                )
                for work in ("candidates", "pairs_estimated")
            },
            "rss_mb": line["rss_mb"],
            "state_bytes_per_doc": round(line["state_bytes"] / line["records"], 1),
        }
        for before, line in zip([None, *stats], stats, strict=False)
        if line["window_records"] > 0
    ]
    if not stretches:
        raise ValueError("the run logged no documents: nothing to report")
    documents = stats[-1]["records"]
    first, last = stretches[0]["us_per_doc"], stretches[-1]["us_per_doc"]
    whole = 1e6 * stats[-1]["seconds"] / documents
    first_pairs = stretches[0]["pairs_estimated_per_doc"]
    whole_pairs = stats[-1]["pairs_estimated"] / documents
    # k in "total time grows as N^k", from the end of the first stretch to the end of the run:
    # 1 when each document costs the same however many came before it
    first_line = next(line for line in stats if line["window_records"] > 0)
    span = documents / first_line["records"]
    exponent = (
        round(math.log(stats[-1]["seconds"] / first_line["seconds"]) / math.log(span), 2)
        if span > 1 and first_line["seconds"] > 0
        else None
    )
    return {
        "documents": documents,
        "seconds": round(seconds, 2),
        "docs_per_second": round(documents / seconds, 1),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "state_bytes_per_doc": round(disk_bytes / documents, 1),
        "stretches": stretches,
        "last_over_first": round(last / first, 2),
        "whole_over_first": round(whole / first, 2),
        # the same for the pairs estimated per document: how much of the growth is more work
        "pairs_whole_over_first": round(whole_pairs / first_pairs, 2) if first_pairs else None,
        "time_exponent": exponent,
    }


def _print(report: dict[str, Any]) -> None:
    print("documents  stretch s  us/doc  candidates/doc  pairs/doc  RSS MB  state B/doc")
    for s in report["stretches"]:
        print(
            f"{s['documents']:>9,}  {s['seconds']:>9.1f}  {s['us_per_doc']:>6.0f}  "
            f"{s['candidates_per_doc']:>14.2f}  {s['pairs_estimated_per_doc']:>9.2f}  "
            f"{s['rss_mb']:>6.0f}  {s['state_bytes_per_doc']:>11.0f}"
        )
    print(
        f"{report['documents']:,} documents in {report['seconds']} s "
        f"({report['docs_per_second']:,} docs/s), peak RSS {report['peak_rss_mb']} MB, "
        f"state {report['state_bytes_per_doc']} B/doc after close"
    )
    print(
        f"time per document: last stretch / first = {report['last_over_first']}x, "
        f"whole run / first stretch = {report['whole_over_first']}x; pairs estimated per "
        f"document: whole run / first stretch = {report['pairs_whole_over_first']}x; total "
        f"time grows as N^{report['time_exponent']} from the first stretch on"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth", description=__doc__)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=50_000, help="documents per stretch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    parser.add_argument(
        "--versions", choices=("all", "latest"), help="the state's setting (default: neardup's)"
    )
    args = parser.parse_args(argv)
    if args.every < 1 or args.docs < args.every:
        parser.error(f"--every {args.every}: use 1 to --docs ({args.docs}) documents")
    with tempfile.TemporaryDirectory(prefix="neardup-growth-") as tmp:
        work = Path(tmp)
        corpus, state, stats = work / "corpus.jsonl", work / "state", work / "stats.jsonl"
        write_jsonl(iter_pages(args.docs, seed=args.seed), str(corpus))
        seconds, rss = _run(
            [sys.executable, "-m", "neardup.streams", "run", "--prepare", "thread",
             "--state", str(state), "--quiet", "--stats", str(stats),
             "--stats-every", str(args.every),
             *(["--versions", args.versions] if args.versions else []), str(corpus)]
        )  # fmt: skip
        lines = [json.loads(line) for line in stats.read_text().splitlines()]
        report = {
            "seed": args.seed,
            "versions": args.versions or Settings().versions,  # a new state's default
            **growth_report(lines, seconds, rss, _disk_bytes(state)),
        }
    _print(report)
    emit(report, args.out, show=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
