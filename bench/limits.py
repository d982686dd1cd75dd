"""What the input bounds cost: the markup scan and the parser on hostile shapes at and past
the bounds, and a run's peak memory on records of the largest size.

    python -m bench.limits [--records 10] [--record-mb 8]

Prints one JSON line per measurement (docs/limits.md keeps today's figures).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from neardup.core import BadRecordError
from neardup.core.canonical import html_to_text
from neardup.core.markup import MAX_ELEMENTS, MAX_MARKUP_DEPTH, check_markup

#: hostile and large shapes: (name, markup)
_SHAPES = [
    ("100k nested div", "<div>" * 100_000),
    ("40k nested ul/li", "<ul><li>x" * 40_000),
    ("20k nested blockquote", "<blockquote>" * 20_000),
    (
        f"{MAX_MARKUP_DEPTH - 1} spans, then li to the element bound",
        "<span>" * (MAX_MARKUP_DEPTH - 1) + "<li>x" * (MAX_ELEMENTS - MAX_MARKUP_DEPTH - 2),
    ),
    (
        f"{MAX_MARKUP_DEPTH - 1} spans, then div pairs to the element bound",
        "<span>" * (MAX_MARKUP_DEPTH - 1) + "<div></div>" * (MAX_ELEMENTS - MAX_MARKUP_DEPTH - 2),
    ),
    ("a table of 100k rows, ends left out", "<table>" + "<tr><td>a<td>b" * 100_000),
    ("200k flat div", "<div>x</div>" * 200_000),
]


def _markup(name: str, html: str) -> dict[str, object]:
    page = "<html><body>" + html
    started = time.perf_counter()
    try:
        check_markup(page, "text/html")
    except BadRecordError as error:
        refused = error.reason
    else:
        refused = None
    checked = time.perf_counter() - started
    parsed = None
    if refused is None:
        started = time.perf_counter()
        html_to_text(page)
        parsed = round(time.perf_counter() - started, 3)
    return {
        "shape": name,
        "bytes": len(page),
        "refused": refused,
        "check_s": round(checked, 4),
        "parse_s": parsed,
    }


def _peak_memory(records: int, megabytes: int, prepare: str) -> dict[str, object]:
    """Peak RSS of a run (its largest process) on ``records`` records of ``megabytes``."""
    rng = random.Random(2)
    words = [f"w{n:x}" for n in range(20_000)]
    with tempfile.TemporaryDirectory() as scratch:
        inputs = Path(scratch) / "big.jsonl"
        with inputs.open("w") as out:
            for number in range(records):
                text = " ".join(rng.choices(words, k=megabytes * 170_000))[: megabytes * 1_000_000]
                out.write(json.dumps({"url": f"https://big/{number}", "content": text}) + "\n")
        command = [sys.executable, "-m", "neardup.streams", "run", "--quiet"]
        command += ["--prepare", prepare, "--state", f"{scratch}/state", str(inputs)]
        script = (
            "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", script, *command], capture_output=True, text=True, check=True
        )
        seconds = time.perf_counter() - started
    return {
        "records": records,
        "record_mb": megabytes,
        "prepare": prepare,
        "largest_process_peak_mb": round(int(done.stdout) / 1024),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--record-mb", type=int, default=8)
    args = parser.parse_args()
    for name, html in _SHAPES:
        print(json.dumps(_markup(name, html)), flush=True)
    for prepare in ("thread", "process"):
        print(json.dumps(_peak_memory(args.records, args.record_mb, prepare)), flush=True)


if __name__ == "__main__":
    main()
