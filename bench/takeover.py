"""Takeover time of a detection shard, with and without a checkpoint:
``python -m bench.takeover``.

    python -m bench.takeover [--docs 100000] [--behind 20]

A shard (one of one: every document its own) applies the prepared log of ``--docs``
documents on a RocksDB state, writing a checkpoint ``--behind`` messages before the end
(256 documents a message). Then a new owner with no state takes the shard over, twice:

* replaying the whole log from offset 0 (what a new owner does without checkpoints);
* restoring the newest checkpoint (a copy, as from another machine) and applying the log
  after it.

Both in process, through ``ShardLog`` as the shard agent applies messages (8 a
transaction); fetching the log from the broker is not included, and would add to the replay
in proportion to the messages read. Reported: seconds of each, the checkpoint's bytes and
the seconds it took to write.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from .report import emit
from .shard_scaling import _du, _prepared


def _apply(fold: Any, messages: list[bytes], start: int) -> None:
    for at in range(start, len(messages), 8):
        staged = fold.stage([(o, messages[o]) for o in range(at, min(at + 8, len(messages)))])
        fold.commit(staged)


def main(argv: list[str] | None = None) -> int:
    from neardup.core import Settings
    from neardup.state import Checkpoints, State
    from neardup.streams.detection.shard import Ownership
    from neardup.streams.kafka.shard_log import ShardLog

    parser = argparse.ArgumentParser(prog="python -m bench.takeover", description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--behind", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    messages, _, _ = _prepared(args.docs, args.seed)
    settings = Settings()
    at = max(0, len(messages) - args.behind)
    with tempfile.TemporaryDirectory(prefix="neardup-takeover-") as tmp:
        root = Path(tmp)
        checkpoints = Checkpoints(root / "checkpoints", "shard-0-of-1")
        with State.open(root / "owner", settings) as state:
            fold = ShardLog(state, Ownership(0, 1), "log")
            _apply(fold, messages[:at], 0)
            started = time.perf_counter()
            checkpoints.write(state, fold.next_offset)
            written = time.perf_counter() - started
            _apply(fold, messages, at)
        newest = checkpoints.newest()
        assert newest is not None
        started = time.perf_counter()
        with State.open(root / "replayed", settings) as state:
            _apply(ShardLog(state, Ownership(0, 1), "log"), messages, 0)
        replay = time.perf_counter() - started
        started = time.perf_counter()
        offset = checkpoints.restore(root / "restored")
        assert offset is not None
        with State.open(root / "restored", settings) as state:
            fold = ShardLog(state, Ownership(0, 1), "log")
            _apply(fold, messages, fold.next_offset)
        restored = time.perf_counter() - started
        report = {
            "docs": args.docs,
            "messages": len(messages),
            "checkpoint_at_message": at,
            "checkpoint_bytes": _du(newest[1]),
            "checkpoint_write_seconds": round(written, 2),
            "takeover_replaying_the_log_seconds": round(replay, 2),
            "takeover_from_checkpoint_seconds": round(restored, 2),
        }
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
