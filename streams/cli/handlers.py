"""What each ``neardup`` command does, given its resolved options."""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from neardup.core import (
    DEFAULT_MAX_RECORD_BYTES,
    BadRecordError,
    NeardupError,
    Page,
    SchemaError,
    Settings,
    page_from_json,
    record_from_json,
)
from neardup.core.items.schema import ItemSchema, synonyms_path
from neardup.core.markup import check_markup
from neardup.state import State
from neardup.state.items import check_or_store_schema, stored_schema

from ..detection.retention import Retention, check_retention
from ..kafka.config import WorkerConfig, detector_dir
from ..running import embedded, queries, reports
from ..running.inputs import DeadLetter, check_inputs, is_warc
from ..running.progress import Progress, RunObserver, StatsLog
from ..running.stopping import StopSignals

if TYPE_CHECKING:
    from ..service import Metrics

__all__ = [
    "clusters",
    "events",
    "expire",
    "fold",
    "history",
    "merged",
    "publish",
    "query",
    "run",
    "serve",
    "settings_for",
    "stats",
    "worker",
    "worker_config",
]

_SETTING_FIELDS = (
    "shingle_size",
    "sketch",
    "threshold",
    "sample_size",
    "num_bins",
    "token_unit",
    "short_limit",
    "posting_cap",
    "split_clusters",
    "versions",
    "keep_versions",
    "keep_versions_days",
    "containment_sample",
    "containment_cap",
    "containment_threshold",
)


def settings_for(state_dir: str | os.PathLike[str], args: argparse.Namespace) -> Settings | None:
    """The settings a command opens its state with: the stored ones (the defaults for a new
    state) with the settings flags given applied; None when no flag was given. ``run`` and
    ``worker`` both use this, so an omitted flag keeps the stored value in both."""
    given = {
        name: getattr(args, name)
        for name in _SETTING_FIELDS
        if getattr(args, name, None) is not None
    }
    if not given:
        return None
    stored: Settings | None = None
    if Path(state_dir).exists():
        with State.open(state_dir) as state:
            stored = state.settings
    return (stored or Settings()).replace(**given)


def _open_output(stack: ExitStack, name: str | None, mode: str = "a") -> IO[str] | None:
    if name is None:
        return None
    if name == "-":
        return sys.stdout
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    return stack.enter_context(open(name, mode, encoding="utf-8"))


def _print_json(value: Any, out: IO[str] | None = None) -> None:
    (out or sys.stdout).write(json.dumps(value, ensure_ascii=False) + "\n")


def _existing_state(path: str, write: bool = False) -> State:
    """The state in ``path`` (a run's directory, or a worker's: its ``detector/``), opened
    to read beside any writer: a follower, which creates and changes nothing there, so it
    also reads a copy on read-only media. ``write``: opened as its writer (none other may
    have it open), for a command that changes it."""
    directory = _state_dir(Path(path))
    if not (directory / "CURRENT").exists():
        raise NeardupError(
            f"there is no state in {path}: run `neardup run --state {path} INPUT` first"
        )
    return State.open(directory) if write else State.follow(directory)


def _state_dir(path: Path) -> Path:
    """``path``, or the detector's state in it when it is a worker's directory."""
    if not (path / "CURRENT").exists() and (detector_dir(path) / "CURRENT").exists():
        return detector_dir(path)
    return path


def run(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        raise NeardupError(f"--batch-size {args.batch_size} must be at least 1")
    if args.batch_bytes < 1:
        raise NeardupError(f"--batch-bytes {args.batch_bytes} must be at least 1")
    check_inputs(args.inputs)
    if args.stats_every < 1:
        raise NeardupError(f"--stats-every {args.stats_every} must be at least 1")
    schema = _schema(args.schema) if args.schema is not None else None
    settings = settings_for(args.state, args)
    if args.expire_after is not None:  # refused before a state is made with other settings
        check_retention(settings or _stored_settings(args.state), schema is not None)
    with ExitStack() as stack:
        state = stack.enter_context(
            State.open(args.state, settings, key_filter_bytes=_key_filter_bytes(args))
        )
        schema = check_or_store_schema(state.store, schema)
        if schema is not None and any(is_warc(name) for name in args.inputs):
            raise NeardupError("item mode reads JSON Lines of records, not WARC files")
        events = _open_output(stack, args.events)
        dead = _open_output(
            stack, args.dead_letters or os.path.join(args.state, "dead-letters.jsonl")
        )
        observers: list[RunObserver] = [] if args.quiet else [Progress()]
        metrics = _serve_metrics(stack, state, args)
        stats = _open_output(stack, args.stats)
        if stats is not None:
            # the files as they are: a flush per line would change the run it measures
            state_bytes = functools.partial(state.store.disk_bytes, flush=False)
            observers.append(StatsLog(stats, args.stats_every, state_bytes))
        signals = stack.enter_context(StopSignals(anywhere=False))
        summary = embedded.run(
            state,
            args.inputs,
            events=events,
            dead_letters=dead,
            batch_size=args.batch_size,
            batch_bytes=args.batch_bytes,
            max_record_bytes=args.max_record_bytes,
            observers=observers,
            prepare=args.prepare,
            listeners=() if metrics is None else (metrics,),
            signals=signals,
            items=schema,
            retention=None if args.expire_after is None else Retention(args.expire_after),
        )
        if not args.quiet:
            print(summary.describe(), file=sys.stderr)
        # a snapshot: replaces what the file held
        if summary.stopped_by is not None:
            return 128 + signal.Signals[summary.stopped_by].value
        clusters_out = _open_output(stack, args.clusters, "w")
        if clusters_out is not None:
            for line in reports.cluster_lines(state):
                _print_json(line, clusters_out)
    return 0


def _stored_settings(state_dir: str) -> Settings:
    """The settings of a state directory, or the defaults a new one would take."""
    if not (Path(state_dir) / "CURRENT").exists():
        return Settings()
    with State.open(state_dir) as state:
        return state.settings


def _schema(path: str) -> ItemSchema:
    """The item schema of a TOML file, with the synonyms file it names (beside it)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
        named = synonyms_path(text)
        synonyms = None if named is None else (file.parent / named).read_text(encoding="utf-8")
    except OSError as error:
        raise NeardupError(f"--schema {path}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise NeardupError(f"--schema {path} is not UTF-8 text: {error}") from error
    try:
        return ItemSchema.from_toml(text, synonyms)
    except SchemaError as error:
        raise SchemaError(f"{path}: {error}") from error


def _serve_metrics(stack: ExitStack, state: State, args: argparse.Namespace) -> Metrics | None:
    """``run --http``: ``/metrics`` and ``/healthz`` until the run ends (stopped before the
    state closes); the queries are ``neardup serve``'s, in a process of their own."""
    if args.http is None:
        return None
    # here, not at the top: aiohttp and the service's modules are a tenth of a second of
    # every command's start, and only the commands that serve need them
    from ..service import HttpServer, LiveState, Metrics, writer_app

    source = LiveState(state)
    metrics = Metrics(source)
    server = HttpServer(writer_app(metrics, args.api_token), args.http).start()
    stack.callback(source.detach, "the run has ended")
    stack.callback(server.stop)
    server.announce()
    return metrics


def serve(args: argparse.Namespace) -> int:
    """Serve a state directory (a run's, a worker's detector, or a directory of workers'
    directories: the detector written last) until SIGTERM/SIGINT."""
    from ..service import FollowedState, HttpServer, query_app  # see _serve_metrics
    from ..service.deployment import DeploymentState, detector_states

    path = Path(args.state)
    source: FollowedState | DeploymentState
    if not (_state_dir(path) / "CURRENT").exists() and detector_states(path):
        source = DeploymentState(path)
    else:
        source = FollowedState(_state_dir(path))
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    try:
        server = HttpServer(query_app(source, args.api_token), args.http).start()
        server.announce()
        stopping.wait()
        server.stop()
    finally:
        source.close()
    return 0


def query(args: argparse.Namespace) -> int:
    with _existing_state(args.state) as state:
        target: str = args.target
        if target != "-" and not os.path.exists(target) and "://" in target:
            _print_json(queries.lost_and_found(state, target, args.limit))
            return 0
        check_inputs([target])
        raw = sys.stdin.buffer.read() if target == "-" else Path(target).read_bytes()
        schema = stored_schema(state.store)
        if schema is not None:  # item mode: the file is a record, a JSON object
            record = record_from_json(raw.strip(), DEFAULT_MAX_RECORD_BYTES)
            for line in reports.similar_items_to(state, schema, record, args.limit):
                _print_json(line)
            return 0
        page = Page(
            url=target, content=raw.decode("utf-8", "replace"), content_type=args.content_type
        )
        check_markup(page.content, page.content_type)
        for line in reports.similar_to_content(
            state, page, args.limit, args.min_resemblance, args.containment, args.excerpts
        ):
            _print_json(line)
    return 0


def merged(args: argparse.Namespace) -> int:
    """Item mode: one merged record per cluster, largest first."""
    with _existing_state(args.state) as state:
        schema = stored_schema(state.store)
        if schema is None:
            raise NeardupError(
                f"{args.state} holds pages, not items: merged records are item mode's "
                "(neardup run --schema)"
            )
        for line in reports.merged_lines(state, schema):
            _print_json(line)
    return 0


def fit(args: argparse.Namespace) -> int:
    """Item mode: the model fitted again, every item scored again under it."""
    from ..detection.events import write_events
    from ..detection.item_fit import refit

    with _existing_state(args.state, write=True) as state, ExitStack() as stack:
        schema = stored_schema(state.store)
        if schema is None:
            raise NeardupError(
                f"{args.state} holds pages, not items: a model is item mode's "
                "(neardup run --schema)"
            )
        events = _open_output(stack, args.events)
        view, result, model = refit(state, schema)
        view.commit()
        if events is not None:
            write_events(events, result.events)
        _print_json(
            {
                "items_fitted_on": model.items,
                "prior_odds_bits": round(model.prior, 3),
                # what agreeing on a series' value (a venue, a category) takes off a text
                "series": [
                    {"shared": model.comparisons[x], "text": model.comparisons[y], "bits": bits}
                    for x, y, bits in model.series
                ],
                "pairs_scored": result.pairs_estimated,
                "merges": result.merges,
                "splits": result.splits,
                "seconds": round(sum(result.stage_seconds.values()), 3),
            }
        )
    return 0


def expire(args: argparse.Namespace) -> int:
    """Urls last fetched before a date removed, the disk given back."""
    from ..running.expire import expire as expire_before

    with _existing_state(args.state, write=True) as state, ExitStack() as stack:
        _print_json(expire_before(state, args.before, _open_output(stack, args.events)))
    return 0


def history(args: argparse.Namespace) -> int:
    with _existing_state(args.state) as state:
        _print_json(queries.history(state, args.url))
    return 0


def fold(args: argparse.Namespace) -> int:
    """One group per line, in the order of their heads."""
    items: list[str | Page] = []
    check_inputs([args.ranked])
    with _input(args.ranked) as lines:
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text:
                continue
            if not text.startswith(b"{"):
                items.append(text.decode("utf-8", "replace"))
                continue
            try:
                items.append(page_from_json(text))
            except BadRecordError as error:  # left out of the folding, and said why
                letter = DeadLetter(
                    args.ranked,
                    f"line {number}",
                    error.reason,
                    str(error),
                    text[:512].decode("utf-8", "replace"),
                )
                _print_json(letter.to_json(), sys.stderr)
    if len(items) > args.max_items:
        raise NeardupError(f"{len(items)} items to fold, over --max-items {args.max_items}")
    with _existing_state(args.state) as state:
        threshold = state.settings.threshold if args.threshold is None else args.threshold
        for group in queries.fold(state, items, threshold):
            _print_json(group)
    return 0


def _input(name: str) -> IO[bytes]:
    return sys.stdin.buffer if name == "-" else open(name, "rb")


def stats(args: argparse.Namespace) -> int:
    with _existing_state(args.state) as state:
        _print_json(reports.statistics(state))
    return 0


def clusters(args: argparse.Namespace) -> int:
    if args.state is not None:  # wins over a broker from $NEARDUP_BROKER
        with _existing_state(args.state) as state:
            for line in reports.cluster_lines(state, args.all):
                _print_json(line)
        return 0
    if args.broker is None:
        raise NeardupError("clusters needs --state DIR or --broker HOST:PORT ($NEARDUP_BROKER)")
    if args.all:
        raise NeardupError("--all needs --state: events name only clusters of two or more")
    from ..kafka import client

    for line in client.clusters_from_broker(args.broker, args.events_topic, args.idle_timeout):
        _print_json(line)
    return 0


def publish(args: argparse.Namespace) -> int:
    from ..kafka import client

    check_inputs(args.inputs)
    summary = client.publish(
        args.broker, args.pages_topic, args.inputs, args.max_record_bytes, args.key
    )
    for letter in summary.refused:
        print(json.dumps(letter.to_json(), ensure_ascii=False), file=sys.stderr)
    _print_json({"topic": args.pages_topic, **summary.to_json()})
    return 0


def events(args: argparse.Namespace) -> int:
    from ..kafka import client

    topic = args.dead_letter_topic if args.dead_letters else args.events_topic
    for event in client.follow_events(args.broker, topic, args.from_beginning, args.idle_timeout):
        _print_json(event)
        sys.stdout.flush()
    return 0


def worker_config(args: argparse.Namespace) -> WorkerConfig:
    """The worker's configuration from its resolved options; its settings as ``run``'s: the
    stored ones with the flags given applied."""
    state_dir = Path(args.state)
    return WorkerConfig(
        broker=args.broker,
        state_dir=state_dir,
        partitions=args.partitions,
        pages_topic=args.pages_topic,
        events_topic=args.events_topic,
        dead_letter_topic=args.dead_letter_topic,
        app_id=args.app_id,
        settings=settings_for(detector_dir(state_dir), args) or _stored_or_default(state_dir),
        batch_size=args.batch_size,
        batch_bytes=args.batch_bytes,
        max_record_bytes=args.max_record_bytes,
        key_filter_bytes=_key_filter_bytes(args),
        prepare=args.prepare,
        http=args.http,
        api_token=args.api_token,
        shards=args.shards,
        checkpoints=args.checkpoints,
        checkpoint_every=args.checkpoint_every,
        session_timeout=args.session_timeout,
        expire_after=args.expire_after,
        schema=_schema(args.schema) if args.schema is not None else _stored_schema(state_dir),
    )


def _key_filter_bytes(args: argparse.Namespace) -> int:
    if args.key_filter_mb < 0:
        raise NeardupError(f"--key-filter-mb {args.key_filter_mb}: give 0 or more megabytes")
    return int(args.key_filter_mb) << 20


def _stored_schema(state_dir: Path) -> ItemSchema | None:
    """The item schema a worker's detector state was built with, if any."""
    detector = detector_dir(state_dir)
    if not (detector / "CURRENT").exists():
        return None
    with State.follow(detector) as state:
        return stored_schema(state.store)


def worker(args: argparse.Namespace) -> int:
    from ..kafka.worker import run_worker

    run_worker(worker_config(args), args.loglevel)
    return 0


def _stored_or_default(state_dir: Path) -> Settings:
    detector = detector_dir(state_dir)
    if not detector.exists():
        return Settings()
    with State.open(detector) as state:
        return state.settings
