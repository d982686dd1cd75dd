"""The two sketch modes through neardup itself, on the same corpus in the same session:
``python -m bench.sketch_modes``.

The corpus (bench/corpus.py) is written once; the truth is computed once by brute force
(bench/truth.py): exact resemblance of every pair sharing a 5-shingle. Then each mode runs
end to end in its own process, ``neardup run --prepare thread --state DIR --quiet --clusters
OUT --sketch minhash|simhash FILE`` (``--prepare process`` with that option), in rounds that
alternate the modes (a shared machine's speed drifts: the median of each mode's rounds is
reported, beside every round).

Per mode: wall seconds and documents/s, peak RSS, bytes of state a document (as the run
left it, and compacted), the candidates and pairs estimated a document (the state's
counters), pairwise precision/recall/F1 of co-membership against the connected components
of "exact resemblance >= 0.5" (as ``python -m bench`` scores), and the share of the pairs of
exact resemblance >= 0.9, 0.8 and 0.5 that end in one cluster. The report ends with the
ratios the SimHash mode is asked to meet: its documents/s over the default's (per round and
the median) and its compacted bytes a document over the default's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from neardup.state import State

from .corpus import generate, write_jsonl
from .run import _compacted_bytes, _disk_bytes, _read_clusters, _run, _truth
from .truth import PairScores, pairwise_scores

__all__ = ["MODES", "ModeResult", "main"]

MODES = ("minhash", "simhash")
#: the exact resemblances whose pairs' cluster recall is reported
BANDS = (0.9, 0.8, 0.5)


@dataclass(slots=True)
class ModeResult:
    sketch: str
    seconds: float = 0.0
    docs_per_second: float = 0.0
    peak_rss_mb: float = 0.0
    state_bytes_per_doc: float = 0.0
    compacted_bytes_per_doc: float = 0.0
    candidates_per_doc: float = 0.0
    pairs_estimated_per_doc: float = 0.0
    duplicates_by_method: dict[str, int] = field(default_factory=dict)
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    #: share of the pairs of exact resemblance >= band that end in one cluster
    cluster_recall: dict[str, float] = field(default_factory=dict)
    #: wall seconds of each round (``seconds`` is their median)
    rounds: list[float] = field(default_factory=list)


def _run_mode(
    sketch: str, corpus: Path, work: Path, prepare: str
) -> tuple[float, float, Path, Path]:
    state, out = work / f"{sketch}-state", work / f"{sketch}-clusters.jsonl"
    shutil.rmtree(state, ignore_errors=True)  # every round starts from nothing
    seconds, rss = _run(
        [sys.executable, "-m", "neardup.streams", "run", "--prepare", prepare, "--sketch",
         sketch, "--state", str(state), "--quiet", "--clusters", str(out), str(corpus)]
    )  # fmt: skip
    return seconds, rss, state, out


def _cluster_recall(
    predicted: list[list[str]], scores: PairScores, urls: list[str]
) -> dict[str, float]:
    label = {url: index for index, cluster in enumerate(predicted) for url in cluster}
    # a page alone in its cluster is in none of the printed ones: a label of its own
    labels = np.array([label.get(url, -1 - n) for n, url in enumerate(urls)], np.int64)
    together = labels[scores.i] == labels[scores.j]
    return {
        f"r>={band}": round(float(together[scores.jaccard >= band].mean()), 4) for band in BANDS
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sketch_modes", description=__doc__)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--short-share", type=float, default=0.15)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of both modes")
    parser.add_argument(
        "--prepare",
        choices=("thread", "process"),
        default="thread",
        help="where neardup run prepares pages (thread: one process, as python -m bench)",
    )
    parser.add_argument("--out", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: use 1 or more rounds")
    with tempfile.TemporaryDirectory(prefix="neardup-sketches-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus.jsonl"
        pages = generate(args.docs, seed=args.seed, short_share=args.short_share)
        write_jsonl(pages, str(corpus))
        truth, scores = _truth(pages, 0.5)
        urls = [p.url for p in pages]
        del pages
        runs: dict[str, list[tuple[float, float, Path, Path]]] = {m: [] for m in MODES}
        for round_number in range(args.repeat):
            # alternate which mode goes first: neither always runs on a warmer machine
            for sketch in MODES if round_number % 2 == 0 else MODES[::-1]:
                runs[sketch].append(_run_mode(sketch, corpus, work, args.prepare))
        results = []
        for sketch in MODES:
            rounds = [seconds for seconds, _, _, _ in runs[sketch]]
            seconds = statistics.median(rounds)
            _, _, state, out = runs[sketch][-1]
            disk = _disk_bytes(state)
            with State.open(state) as opened:
                counters = opened.view().counters
                documents = counters.get("documents")
                candidates, estimated = counters.get("candidates"), counters.get("pairs_estimated")
                methods = counters.with_prefix("duplicates:")
            compacted = _compacted_bytes(state)
            predicted = _read_clusters(out)
            precision, recall, f1 = pairwise_scores(predicted, truth)
            results.append(
                ModeResult(
                    sketch,
                    seconds=round(seconds, 2),
                    docs_per_second=round(args.docs / seconds, 1),
                    peak_rss_mb=round(max(r for _, r, _, _ in runs[sketch]), 1),
                    state_bytes_per_doc=round(disk / args.docs, 1),
                    compacted_bytes_per_doc=round(compacted / args.docs, 1),
                    candidates_per_doc=round(candidates / documents, 3),
                    pairs_estimated_per_doc=round(estimated / documents, 3),
                    duplicates_by_method={k.partition(":")[2]: v for k, v in methods.items() if v},
                    precision=round(precision, 4),
                    recall=round(recall, 4),
                    f1=round(f1, 4),
                    cluster_recall=_cluster_recall(predicted, scores, urls),
                    rounds=[round(r, 2) for r in rounds],
                )
            )
    by_mode = {r.sketch: r for r in results}
    minhash, simhash = by_mode["minhash"], by_mode["simhash"]
    speedups = [m / s for m, s in zip(minhash.rounds, simhash.rounds, strict=True)]
    report = {
        "docs": args.docs,
        "seed": args.seed,
        "short_share": args.short_share,
        "prepare": args.prepare,
        "rounds": args.repeat,
        "pairs": {f"r>={band}": int((scores.jaccard >= band).sum()) for band in BANDS},
        "results": [asdict(r) for r in results],
        "simhash_over_minhash": {
            "docs_per_second": round(statistics.median(speedups), 2),
            "docs_per_second_rounds": [round(s, 2) for s in speedups],
            "compacted_bytes_per_doc": round(
                simhash.compacted_bytes_per_doc / minhash.compacted_bytes_per_doc, 3
            ),
        },
    }
    _print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _print(report: dict[str, object]) -> None:
    head = (
        "sketch   docs/s    rounds (s)          B/doc   compacted  cand/doc  est/doc  "
        "P       R       F1      r>=0.9  r>=0.8  r>=0.5"
    )
    print(
        f"{report['docs']:,} documents, seed {report['seed']}, short share "
        f"{report['short_share']}, --prepare {report['prepare']}, {report['rounds']} rounds; "
        f"pairs {report['pairs']}"
    )
    print(head)
    for r in report["results"]:  # type: ignore[attr-defined]
        recall = r["cluster_recall"]
        print(
            f"{r['sketch']:<8} {r['docs_per_second']:<9} {','.join(map(str, r['rounds'])):<19} "
            f"{r['state_bytes_per_doc']:<7} {r['compacted_bytes_per_doc']:<10} "
            f"{r['candidates_per_doc']:<9} {r['pairs_estimated_per_doc']:<8} "
            f"{r['precision']:<7} {r['recall']:<7} {r['f1']:<7} {recall['r>=0.9']:<7} "
            f"{recall['r>=0.8']:<7} {recall['r>=0.5']}"
        )
    print(f"simhash / minhash: {report['simhash_over_minhash']}")


if __name__ == "__main__":
    sys.exit(main())
