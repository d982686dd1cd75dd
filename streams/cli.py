"""The ``neardup`` command line."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from neardup.core import DEFAULT_MAX_RECORD_BYTES, NeardupError, Page, Settings
from neardup.state import State

from .running import embedded, reports
from .running.prepare_work import PREPARE_MODES
from .running.progress import Progress, RunObserver, StatsLog

__all__ = ["main"]

_SETTING_OPTIONS = {
    "shingle_size": "shingle_size",
    "threshold": "threshold",
    "sample_size": "sample_size",
    "num_bins": "num_bins",
    "token_unit": "token_unit",
    "short_limit": "short_limit",
    "posting_cap": "posting_cap",
}


def _add_state(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state",
        required=True,
        metavar="DIR",
        help="state directory (RocksDB); created if missing",
    )


def _add_settings(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (stored with the state; a new state only)")
    group.add_argument(
        "--shingle-size", type=int, metavar="W", help="tokens per shingle (default 5)"
    )
    group.add_argument(
        "--threshold", type=float, metavar="T", help="resemblance that joins clusters (default 0.5)"
    )
    group.add_argument(
        "--sample-size", type=int, metavar="S", help="bottom-s sample per document (default 256)"
    )
    group.add_argument(
        "--num-bins", type=int, metavar="K", help="min-hash bins for super-shingles (default 128)"
    )
    group.add_argument(
        "--token-unit", choices=["word", "character"], help="token unit (default word)"
    )
    group.add_argument(
        "--short-limit",
        type=int,
        metavar="N",
        help="fewer shingles than this: short document (default 100)",
    )
    group.add_argument(
        "--posting-cap",
        type=int,
        metavar="N",
        help="documents per posting list before it becomes a stop key (default 1000)",
    )


def _settings(args: argparse.Namespace) -> Settings | None:
    given = {
        field: getattr(args, option)
        for option, field in _SETTING_OPTIONS.items()
        if getattr(args, option, None) is not None
    }
    if not given:
        return None
    stored = _stored_settings(args.state)
    return (stored or Settings()).replace(**given)


def _stored_settings(path: str) -> Settings | None:
    if not Path(path).exists():
        return None
    with State.open(path) as state:
        return state.settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neardup",
        description="Streaming near-duplicate detection for crawled web pages.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run", help="process JSON Lines or WARC files into the state (embedded mode)"
    )
    _add_state(run)
    _add_settings(run)
    run.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSON Lines file, - for stdin, or a .warc[.gz] file",
    )
    run.add_argument(
        "--events", metavar="FILE", help="append events as JSON Lines here (- for stdout)"
    )
    run.add_argument(
        "--dead-letters",
        metavar="FILE",
        help="append refused records here (default: DIR/dead-letters.jsonl)",
    )
    run.add_argument(
        "--batch-size", type=int, default=256, metavar="N", help="pages per batch (default 256)"
    )
    run.add_argument(
        "--max-record-bytes",
        type=int,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="N",
        help=f"larger records are dead letters (default {DEFAULT_MAX_RECORD_BYTES})",
    )
    run.add_argument(
        "--prepare",
        choices=PREPARE_MODES,
        default="process",
        help="prepare pages in a child process (default: a second core) or in a thread "
        "(one process)",
    )
    run.add_argument(
        "--clusters",
        metavar="FILE",
        help="when done, write the clusters here as `neardup clusters` prints them (- for stdout)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress and no summary")
    run.add_argument(
        "--stats",
        metavar="FILE",
        help="append a JSON line of statistics here every --stats-every records and at the end: "
        "totals, the stretch's docs/s, memory, state size (- for stdout)",
    )
    run.add_argument(
        "--stats-every",
        type=int,
        default=10_000,
        metavar="N",
        help="records between two lines of --stats (default 10000)",
    )

    clusters = commands.add_parser(
        "clusters",
        help="print clusters as JSON Lines, largest first",
        description="From a state directory (--state), or rebuilt from the events topic of a "
        "Kafka deployment (--broker, or $NEARDUP_BROKER; --topic, or $NEARDUP_EVENTS_TOPIC).",
    )
    source = clusters.add_mutually_exclusive_group()
    source.add_argument("--state", metavar="DIR", help="state directory (RocksDB)")
    source.add_argument(
        "--broker", metavar="HOST:PORT", help="Kafka bootstrap server (env NEARDUP_BROKER)"
    )
    clusters.add_argument("--all", action="store_true", help="include single documents")
    _add_events_topic(clusters, idle_default=3.0)

    query = commands.add_parser(
        "query", help="documents similar to a file, stdin, or a known URL (lost and found)"
    )
    _add_state(query)
    query.add_argument("target", metavar="FILE|-|URL")
    query.add_argument("--limit", type=int, default=10, metavar="N")
    query.add_argument(
        "--min-resemblance",
        type=float,
        default=0.0,
        metavar="F",
        help="hide matches below this resemblance and containment (default 0)",
    )
    query.add_argument(
        "--content-type", default="", help="content type of the file (default: sniffed)"
    )

    stats = commands.add_parser("stats", help="documents, clusters, largest clusters, stop keys")
    _add_state(stats)
    _add_worker(commands)
    _add_kafka_client(commands)
    return parser


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name) or default


def _add_topic(parser: argparse.ArgumentParser, what: str, env: str, default: str) -> None:
    parser.add_argument(
        "--topic",
        default=_env(env, default),
        metavar="NAME",
        help=f"{what} topic (env {env}; default {default})",
    )


def _add_events_topic(parser: argparse.ArgumentParser, idle_default: float | None) -> None:
    from .kafka.client import DEFAULT_EVENTS_TOPIC

    _add_topic(parser, "events", "NEARDUP_EVENTS_TOPIC", DEFAULT_EVENTS_TOPIC)
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=idle_default,
        metavar="S",
        help="stop when no event arrived for S seconds (default "
        + ("never" if idle_default is None else f"{idle_default:g}")
        + ")",
    )


def _add_kafka_client(commands: Any) -> None:
    from .kafka.client import DEFAULT_DEAD_LETTER_TOPIC, DEFAULT_PAGES_TOPIC

    broker_help = "Kafka bootstrap server (env NEARDUP_BROKER)"
    publish = commands.add_parser(
        "publish",
        help="send pages to the pages topic (the crawler side of Kafka mode)",
        description="Valid pages are sent as the input contract, keyed by url; JSON Lines "
        "lines that fail validation are sent unchanged, so that the worker puts them in its "
        "dead-letter topic; what cannot be sent (oversized records, WARC records that are not "
        "text) is listed on stderr. Prints a summary as JSON.",
    )
    publish.add_argument("--broker", metavar="HOST:PORT", help=broker_help)
    _add_topic(publish, "pages", "NEARDUP_PAGES_TOPIC", DEFAULT_PAGES_TOPIC)
    publish.add_argument(
        "--max-record-bytes",
        type=int,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="N",
        help=f"larger records are not sent (default {DEFAULT_MAX_RECORD_BYTES})",
    )
    publish.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="JSON Lines file, - for stdin, or a .warc[.gz] file",
    )
    events = commands.add_parser(
        "events",
        help="print the events of a Kafka deployment as JSON Lines",
        description="Reads without a consumer group (it never moves a deployment's offsets).",
    )
    events.add_argument("--broker", metavar="HOST:PORT", help=broker_help)
    _add_events_topic(events, idle_default=None)
    events.add_argument(
        "--from-beginning", action="store_true", help="from the oldest event (default: new ones)"
    )
    events.add_argument(
        "--dead-letters",
        action="store_true",
        help="follow the dead-letter topic instead (--dead-letter-topic, env "
        f"NEARDUP_DEAD_LETTER_TOPIC; default {DEFAULT_DEAD_LETTER_TOPIC})",
    )
    events.add_argument(
        "--dead-letter-topic",
        default=_env("NEARDUP_DEAD_LETTER_TOPIC", DEFAULT_DEAD_LETTER_TOPIC),
        metavar="NAME",
        help=argparse.SUPPRESS,
    )


def _broker(args: argparse.Namespace) -> str:
    broker = args.broker or _env("NEARDUP_BROKER")
    if not broker:
        raise NeardupError("--broker HOST:PORT (or $NEARDUP_BROKER) is required")
    return str(broker)


def _kafka_client(args: argparse.Namespace) -> int:
    from .kafka import client as kafka_client

    if args.command == "publish":
        summary = kafka_client.publish(
            _broker(args), args.topic, args.inputs, args.max_record_bytes
        )
        for letter in summary.refused:
            print(json.dumps(letter.to_json(), ensure_ascii=False), file=sys.stderr)
        _print_json({"topic": args.topic, **summary.to_json()})
    elif args.command == "events":
        topic = args.dead_letter_topic if args.dead_letters else args.topic
        for event in kafka_client.follow_events(
            _broker(args), topic, args.from_beginning, args.idle_timeout
        ):
            _print_json(event)
            sys.stdout.flush()
    else:
        if not (args.broker or _env("NEARDUP_BROKER")):
            raise NeardupError("clusters needs --state DIR or --broker HOST:PORT ($NEARDUP_BROKER)")
        if args.all:
            raise NeardupError("--all needs --state: events name only clusters of two or more")
        for line in kafka_client.clusters_from_broker(_broker(args), args.topic, args.idle_timeout):
            _print_json(line)
    return 0


def _worker_flag(field: str) -> str:
    return "--state" if field == "state_dir" else "--" + field.replace("_", "-")


def _add_worker(commands: Any) -> None:
    from .kafka.config import ENVIRONMENT

    worker = commands.add_parser(
        "worker",
        help="run a Kafka worker of the detection topology (until SIGTERM/SIGINT)",
        description="Every flag may come from its environment variable instead: "
        + ", ".join(f"{_worker_flag(k)} ${v}" for k, v in ENVIRONMENT.items())
        + ". Every worker of a deployment must use the same partitions, topics, app id and "
        "settings.",
    )
    worker.add_argument("--broker", metavar="HOST:PORT", help="Kafka bootstrap server")
    worker.add_argument(
        "--state", dest="state_dir", metavar="DIR", help="this worker's state directory"
    )
    worker.add_argument(
        "--partitions", type=int, metavar="N", help="partitions of every topic (default 4)"
    )
    worker.add_argument("--pages-topic", metavar="NAME", help="default neardup.pages")
    worker.add_argument("--events-topic", metavar="NAME", help="default neardup.events")
    worker.add_argument("--dead-letter-topic", metavar="NAME", help="default neardup.dead-letter")
    worker.add_argument(
        "--app-id", metavar="NAME", help="consumer group and internal topic prefix (neardup)"
    )
    worker.add_argument(
        "--batch-size", type=int, default=256, metavar="N", help="pages prepared together"
    )
    worker.add_argument(
        "--prepare",
        choices=PREPARE_MODES,
        help="prepare pages in a child process (default: a second core) or in a thread",
    )
    worker.add_argument(
        "--max-record-bytes",
        type=int,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="N",
        help=f"larger messages are dead letters (default {DEFAULT_MAX_RECORD_BYTES})",
    )
    worker.add_argument(
        "--loglevel", default="warning", choices=["debug", "info", "warning", "error"]
    )
    _add_settings(worker)


def _worker(args: argparse.Namespace) -> int:
    from .kafka.config import ENVIRONMENT, WorkerConfig
    from .kafka.worker import run_worker

    given = {name: getattr(args, name, None) for name in ENVIRONMENT}
    merged = WorkerConfig.from_environment(given)
    for required in ("broker", "state_dir"):
        if required not in merged:
            raise NeardupError(
                f"{_worker_flag(required)} (or ${ENVIRONMENT[required]}) is required"
            )
    overrides = {
        field: getattr(args, option)
        for option, field in _SETTING_OPTIONS.items()
        if getattr(args, option, None) is not None
    }
    config = WorkerConfig(
        broker=str(merged.pop("broker")),
        state_dir=Path(str(merged.pop("state_dir"))),
        settings=Settings().replace(**overrides),
        batch_size=args.batch_size,
        max_record_bytes=args.max_record_bytes,
        **merged,  # type: ignore[arg-type]
    )
    run_worker(config, args.loglevel)
    return 0


def _open_output(stack: ExitStack, name: str | None, mode: str = "a") -> IO[str] | None:
    if name is None:
        return None
    if name == "-":
        return sys.stdout
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    return stack.enter_context(open(name, mode, encoding="utf-8"))


def _print_json(value: Any, out: IO[str] | None = None) -> None:
    (out or sys.stdout).write(json.dumps(value, ensure_ascii=False) + "\n")


def _run(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise NeardupError(f"--batch-size {args.batch_size} must be at least 1")
    if args.stats_every < 1:
        raise NeardupError(f"--stats-every {args.stats_every} must be at least 1")
    with ExitStack() as stack:
        state = stack.enter_context(State.open(args.state, _settings(args)))
        events = _open_output(stack, args.events)
        dead = _open_output(
            stack, args.dead_letters or os.path.join(args.state, "dead-letters.jsonl")
        )
        observers: list[RunObserver] = [] if args.quiet else [Progress()]
        stats = _open_output(stack, args.stats)
        if stats is not None:
            # the files as they are: a flush per line would change the run it measures
            state_bytes = functools.partial(state.store.disk_bytes, flush=False)
            observers.append(StatsLog(stats, args.stats_every, state_bytes))
        summary = embedded.run(
            state,
            args.inputs,
            events,
            dead,
            args.batch_size,
            args.max_record_bytes,
            observers,
            args.prepare,
        )
        if not args.quiet:
            print(summary.describe(), file=sys.stderr)
        # a snapshot: replaces what the file held
        clusters = _open_output(stack, args.clusters, "w")
        if clusters is not None:
            for line in reports.cluster_lines(state):
                _print_json(line, clusters)
    return 0


def _query(args: argparse.Namespace) -> int:
    with State.open(args.state) as state:
        target: str = args.target
        if target != "-" and not os.path.exists(target) and "://" in target:
            _print_json(reports.lost_and_found(state, target, args.limit))
            return 0
        raw = sys.stdin.buffer.read() if target == "-" else Path(target).read_bytes()
        page = Page(
            url=target, content=raw.decode("utf-8", "replace"), content_type=args.content_type
        )
        for line in reports.similar_to_content(state, page, args.limit, args.min_resemblance):
            _print_json(line)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "query":
            return _query(args)
        if args.command == "worker":
            return _worker(args)
        if args.command in ("publish", "events") or (
            args.command == "clusters" and args.state is None
        ):
            return _kafka_client(args)
        if not Path(args.state).exists():
            raise NeardupError(
                f"there is no state in {args.state}: "
                f"run `neardup run --state {args.state} INPUT` first"
            )
        with State.open(args.state) as state:
            if args.command == "clusters":
                for line in reports.cluster_lines(state, args.all):
                    _print_json(line)
            else:
                _print_json(reports.statistics(state))
        return 0
    except NeardupError as error:
        print(f"neardup: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
