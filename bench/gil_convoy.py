"""Why a prepare thread gains little: ``python -m bench.gil_convoy [--pages N]``.

Times neardup's HTML-to-text step (selectolax/Lexbor) on the benchmark corpus's HTML pages,
alone and beside a thread that runs Python without pause (as the detector does), at the
default switch interval and at shorter ones. Lexbor releases the GIL while it parses; taking
it back waits until the busy thread is made to drop it, after a switch interval.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence

from neardup.core import html_to_text

from .corpus import iter_pages


def _busy(stop: threading.Event) -> None:
    count = 0
    while not stop.is_set():
        for _ in range(1000):
            count += 1


def _parse_each(pages: list[bytes], beside_busy_thread: bool) -> float:
    """Microseconds per page."""
    stop = threading.Event()
    busy = threading.Thread(target=_busy, args=(stop,))
    if beside_busy_thread:
        busy.start()
    started = time.perf_counter()
    for page in pages:
        html_to_text(page)
    seconds = time.perf_counter() - started
    if beside_busy_thread:
        stop.set()
        busy.join()
    return seconds / len(pages) * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gil_convoy", description=__doc__)
    parser.add_argument("--pages", type=int, default=1000, help="HTML pages parsed per row")
    args = parser.parse_args(argv)
    pages = [
        page.content.encode()
        for page in iter_pages(args.pages * 2, seed=1)
        if "html" in page.content_type
    ][: args.pages]
    default = sys.getswitchinterval()
    print(f"{len(pages)} HTML pages; per page: alone, and beside a busy Python thread")
    try:
        for interval in (default, 1e-3, 1e-4, 2e-5):
            sys.setswitchinterval(interval)
            alone = _parse_each(pages, beside_busy_thread=False)
            shared = _parse_each(pages, beside_busy_thread=True)
            print(
                f"switch interval {interval * 1e3:6.2f} ms: {alone:7.1f} us alone, "
                f"{shared:8.1f} us beside the busy thread"
            )
    finally:
        sys.setswitchinterval(default)
    return 0


if __name__ == "__main__":
    sys.exit(main())
