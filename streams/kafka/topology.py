"""The Kafka topology: two Faust agents around one ordered log.

    pages             (key url, N partitions)  prepare  -> prepared batches, dead letters
    {app}-prepared    (1 partition)            detect   -> events (key cluster id), dead letters

With ``WorkerConfig.shards``, detection is split instead into detection shards and a union
stage (``sharded_agents``); preparation is the same.

``prepare`` (parse, canonical form, shingles, sketch, super-shingles) keeps no state, so it
spreads over every worker with the pages partitions. ``detect`` is the embedded Detector over
this worker's RocksDB state (``LogDetector``): whichever worker owns the one prepared
partition applies it in offset order, so every deployment sees one order of documents, as
union-find needs. The prepared topic is the detector's changelog: a worker that gets the
partition with a state that is behind catches up by reading it (``_catch_up``).

Both agents do their CPU work in threads of their own (numpy, RocksDB and selectolax release
the GIL for part of it), so the event loop keeps fetching, sending and heartbeating.

Delivery: pages are read at least once. Sends go straight to Faust's producer, which Faust
flushes before it commits input offsets; a page prepared twice is one document. The
detect agent sends a batch's events and flushes them before it commits the batch's state
and offset in one write, so a crash between the two repeats the events (same ids) but never
loses them. A retention sweep a batch makes due (``--expire-after``) goes the same way, a
chunk at a time, before the next message and before the batch's input offsets are
acknowledged: a log applied past a sweep's message was swept, and its events sent.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import faust
from neardup.core import BadRecordError, StateError
from neardup.state import State

from ..detection import BatchResult, Contained, Stage, encode_event, format_id
from ..detection.history import HistoryRecorder
from ..running import prepare_work
from ..running.inputs import DeadLetter
from ..service import LiveState, Metrics
from . import page_batches, transport
from .config import WorkerConfig
from .lending import HeldState
from .log_detector import LogDetector, Staged
from .sharded_agents import ShardPool, union_agent

__all__ = ["build_app", "event_records", "internal_topics"]

logger = logging.getLogger(__name__)

_EXCERPT = 512
#: prepared messages applied in one transaction (each holds up to batch_size documents)
_DETECT_MESSAGES = 8
T = TypeVar("T")


def internal_topics(config: WorkerConfig) -> dict[str, int]:
    """The topology's topics with their partition counts."""
    topics = {
        config.pages_topic: config.partitions,
        config.prepared_topic: 1,
        config.events_topic: config.partitions,
        config.dead_letter_topic: 1,
    }
    if config.shards is not None:
        topics |= {config.findings_topic: 1, config.shards_topic: config.shards}
    return topics


#: the key of every event of item mode, or of pages whose clusters are cut as well: one
#: partition, so one order for their consumers (a split is followed by its parts' events,
#: which clusters that only join need not)
ONE_ORDER_KEY = b"items"


def event_records(result: BatchResult, one_order: bool = False) -> list[tuple[bytes, bytes]]:
    """A batch's events as records of the events topic: keyed by cluster, and a contained
    event, which changes none, by its new document; where clusters are cut as well
    (``one_order``: item mode, ``split_clusters``) all under ``ONE_ORDER_KEY``."""
    records = []
    for event in result.events:
        if one_order:
            key = ONE_ORDER_KEY
        else:
            subject = event.doc.doc_id if isinstance(event, Contained) else event.cluster
            key = format_id(subject).encode()
        records.append((key, encode_event(event)))
    return records


def _dead_letter(message: Any, error: BadRecordError) -> bytes:
    raw: bytes = message.value or b""
    letter = DeadLetter(
        message.topic,
        f"partition {message.partition} offset {message.offset}",
        error.reason,
        str(error),
        raw[:_EXCERPT].decode("utf-8", "replace"),
    )
    record = letter.to_json() | {
        "topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "key": (message.key or b"").decode("utf-8", "replace"),
    }
    return json.dumps(record).encode()


def build_app(
    config: WorkerConfig, metrics: Metrics | None = None, held: LiveState | None = None
) -> faust.App:
    """The Faust application of one worker (every worker of a deployment builds the same).

    Both agents feed ``metrics`` (the worker's ``--http``), and the detect agent lends
    ``held`` its state while this worker holds the log (``lending.py``)."""
    settings = config.settings
    transport.register()
    app = faust.App(
        config.app_id,
        broker=f"{transport.SCHEME}://{config.broker}",
        store="memory://",  # no Faust tables: the detector keeps its own RocksDB state
        datadir=str(config.state_dir / "faust"),
        topic_partitions=config.partitions,
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        # a short rebalance timeout: a new group forms in seconds, not a minute
        broker_rebalance_timeout=config.rebalance_timeout,
        broker_session_timeout=config.session_timeout,
        broker_heartbeat_interval=1.0,
        broker_commit_every=config.batch_size,
        broker_commit_interval=1.0,
        stream_buffer_maxsize=4 * config.batch_size,
        producer_linger=0.005,
    )

    def topic(name: str, partitions: int) -> Any:
        return app.topic(
            name,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            partitions=partitions,
        )

    log_name = config.prepared_topic
    pages = topic(config.pages_topic, config.partitions)
    prepared = topic(log_name, 1)

    async def produce(
        name: str,
        key: bytes | None,
        value: bytes,
        partition: int | None,
        timestamp: float | None = None,
    ) -> None:
        # the producer itself, not Topic.send: Faust's channel machinery costs more than the send
        await app.producer.send(name, key, value, partition, timestamp, None)

    async def reject(message: Any, error: BadRecordError) -> None:
        await produce(config.dead_letter_topic, message.key, _dead_letter(message, error), None)
        if metrics is not None:
            metrics.dead_letter(error.reason)

    def measure_lag(message: Any) -> None:
        if metrics is None:
            return
        try:
            end = app.consumer.highwater(message.tp)
        except Exception:  # no fetch yet for the partition: nothing to say
            return
        if end is not None:
            lag = max(0, end - message.offset - 1)
            metrics.consumer_lag.labels(message.topic, str(message.partition)).set(lag)

    @app.agent(pages)
    async def prepare(stream: Any) -> None:
        preparing = _preparing(config)
        with prepare_work.executor(config.prepare) as work:
            loop = asyncio.get_running_loop()
            async for batch in stream.take_events(config.batch_size, within=config.batch_wait):
                values = [event.message.value or b"" for event in batch]
                started = time.perf_counter()
                messages, refused = await loop.run_in_executor(work, preparing, values)
                if metrics is not None:
                    spent = time.perf_counter() - started
                    metrics.stage_seconds.labels("prepare").observe(spent)
                for index, reason, text in refused:
                    await reject(batch[index].message, BadRecordError(reason, text))
                # the batch's oldest publication time travels as the prepared message's
                # timestamp: the detector measures publish-to-event latency from it
                published = min((e.message.timestamp or time.time()) for e in batch)
                for message in messages:
                    await produce(log_name, None, message, 0, published)
                measure_lag(batch[-1].message)

    async def flush() -> None:
        await app.producer.flush()

    if config.shards is not None:
        _add_sharded_detection(app, config, topic, produce, flush, reject, metrics)
        del prepare
        return app

    holding = None if held is None else HeldState(held, log_name)
    if holding is not None:
        watched = holding

        # Faust sends each signal with the set of partitions as its one argument
        async def assigned(_: Any, /, *partitions: Any, signal: Any, **__: Any) -> None:
            await watched.assigned(partitions[0] if partitions else ())

        async def revoked(_: Any, /, *partitions: Any, signal: Any, **__: Any) -> None:
            await watched.revoked(partitions[0] if partitions else ())

        app.on_partitions_assigned.connect(assigned)
        app.on_partitions_revoked.connect(revoked)

    @app.agent(prepared)
    async def detect(stream: Any) -> None:
        # RocksDB is used from this one thread only: opened, written and closed there
        with ThreadPoolExecutor(1, thread_name_prefix="neardup-detect") as thread:
            loop = asyncio.get_running_loop()

            def run(call: Callable[..., T], *args: Any) -> Awaitable[T]:
                return loop.run_in_executor(thread, call, *args)

            try:
                state = await run(
                    functools.partial(State.open, key_filter_bytes=config.key_filter_bytes),
                    config.detector_dir,
                    settings,
                )
            except StateError as error:
                await stop_worker(app, "detector", error)
                return
            detector = LogDetector(
                state, log_name, HistoryRecorder(), config.schema, config.retention
            )
            if holding is not None:
                await holding.opened(state, functools.partial(caught_up, detector, run))
            try:
                async for batch in stream.take_events(_DETECT_MESSAGES, within=config.batch_wait):
                    async with applying:
                        await apply_batch(detector, batch, run)
            except StateError as error:
                await stop_worker(app, "detector", error)
            finally:
                if holding is not None:
                    await holding.closing()
                await run(state.close)

    # the batches and the catch-up of a worker assigned the log take turns: each stages from
    # the state's committed offset
    applying = asyncio.Lock()

    async def caught_up(detector: LogDetector, run: Callable[..., Awaitable[Any]]) -> None:
        async with applying:
            await _catch_up(config, log_name, detector, None, run)

    async def send_and_commit(
        detector: LogDetector, staged: Staged, run: Callable[..., Awaitable[Any]]
    ) -> float:
        """Send a staged run's events, then commit it; the seconds the commit took."""
        # clusters that split or lose pages are followed in one order (docs/events.md)
        one_order = config.schema is not None or detector.state.settings.keeps_edges
        for key, value in event_records(staged.result, one_order):
            await produce(config.events_topic, key, value, None)
        await app.producer.flush()  # events out before the state says "done"
        committing = time.perf_counter()
        await run(detector.commit, staged)
        return time.perf_counter() - committing

    async def sweep(detector: LogDetector, run: Callable[..., Awaitable[Any]]) -> None:
        """The retention sweep due, a chunk a transaction, each chunk's events sent first."""
        while (chunk := await run(detector.sweep)) is not None:
            await send_and_commit(detector, chunk, run)

    async def apply_batch(
        detector: LogDetector, batch: list[Any], run: Callable[..., Awaitable[Any]]
    ) -> None:
        first = batch[0].message.offset
        if await run(lambda: detector.next_offset) < first:
            await _catch_up(config, log_name, detector, first, run)
        records = [(e.message.offset, e.message.value or b"") for e in batch]
        by_offset = {event.message.offset: event.message for event in batch}
        await sweep(detector, run)  # one that a crash cut short, before any message
        while await run(lambda: detector.next_offset) <= records[-1][0]:
            staged: Staged = await run(detector.stage, records)
            for offset, error in staged.rejected:
                await reject(by_offset[offset], error)
            committed = await send_and_commit(detector, staged, run)
            refitted: Staged | None = await run(detector.refit_if_due)
            if refitted is not None:  # item mode outgrew its model: every item scored again
                await send_and_commit(detector, refitted, run)
            await sweep(detector, run)  # the run stopped where a sweep is due
            if metrics is not None:
                seconds: dict[Stage, float] = {
                    **staged.result.stage_seconds,
                    "commit": committed,
                }
                metrics.batch_done(staged.result, seconds)
        if metrics is not None:
            now = time.time()
            for event in batch:
                if event.message.timestamp:
                    metrics.publish_to_event.observe(max(0.0, now - event.message.timestamp))
            measure_lag(batch[-1].message)

    del prepare, detect  # registered on the app
    return app


def _preparing(config: WorkerConfig) -> Callable[[list[bytes]], tuple[list[bytes], Any]]:
    """What the prepare agent runs on a batch of messages (in a child process: picklable)."""
    if config.schema is None:
        return functools.partial(
            page_batches.prepare_messages,
            settings_json=config.settings.to_json(),
            max_record_bytes=config.max_record_bytes,
            batch_bytes=config.batch_bytes,
        )
    return functools.partial(
        page_batches.prepare_item_messages,
        schema_json=config.schema.to_json(),
        max_record_bytes=config.max_record_bytes,
    )


async def stop_worker(app: faust.App, part: str, error: StateError) -> None:
    """Stop the worker (exit status 1): a restarted agent would meet the same state."""
    logger.error("%s: %s; stopping the worker", part, error)
    await app.crash(error)


def _add_sharded_detection(
    app: faust.App,
    config: WorkerConfig,
    topic: Callable[[str, int], Any],
    produce: Any,
    flush: Callable[[], Awaitable[None]],
    reject: Callable[[Any, BadRecordError], Awaitable[None]],
    metrics: Metrics | None,
) -> None:
    """The shard and union agents in place of the one detector (``sharded_agents``)."""
    assert config.shards is not None
    stop = functools.partial(stop_worker, app, "detection")
    pool = ShardPool(config, produce, flush, reject, stop)

    @app.agent(topic(config.shards_topic, config.shards))
    async def shard_slots(stream: Any) -> None:
        async for _ in stream:  # no messages: the partitions are what counts
            pass

    @app.agent(topic(config.findings_topic, 1))
    async def union(stream: Any) -> None:
        await union_agent(stream, config, produce, flush, reject, stop, event_records, metrics)

    async def assigned(_: Any, /, *partitions: Any, signal: Any, **__: Any) -> None:
        await pool.assigned(partitions[0] if partitions else ())

    async def stopping(_: Any = None, /, *args: Any, **__: Any) -> None:
        await pool.stop()

    app.on_partitions_assigned.connect(assigned)
    app.on_before_shutdown.connect(stopping)
    del shard_slots, union  # registered on the app


async def _catch_up(
    config: WorkerConfig,
    log_name: str,
    detector: LogDetector,
    until: int | None,
    run: Callable[..., Awaitable[Any]],
) -> None:
    """Apply the prepared messages from the detector's next offset up to ``until``, silently:
    whoever applied them first sent their events and dead letters. ``until`` None: the
    offset the deployment's consumer group has committed on the log, up to which the log's
    last holder applied it (not the log's end: the messages after it are this worker's to
    apply, with their events, as its stream delivers them)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    partition = TopicPartition(log_name, 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=config.broker,
        client_id=f"{config.app_id}-catch-up",
        # the group's id, to read its committed offset: an assigned consumer does not join
        group_id=config.app_id if until is None else None,
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 * page_batches.MESSAGE_BYTES,
    )
    await consumer.start()
    try:
        consumer.assign([partition])
        if until is None:
            until = await consumer.committed(partition) or 0
        start = await run(lambda: detector.next_offset)
        if start >= until:
            return
        earliest = (await consumer.beginning_offsets([partition]))[partition]
        if earliest > start:
            raise StateError(
                f"the detector state is at offset {start} of {log_name}, whose data now starts "
                f"at {earliest}: the topic must keep every message (retention.ms=-1), or the "
                "worker must restart on the state directory of the worker that owned it",
            )
        consumer.seek(partition, start)
        logger.info("detector: catching up on %s from offset %d to %d", log_name, start, until)
        documents = 0
        while await consumer.position(partition) < until:
            fetched = await consumer.getmany(partition, timeout_ms=1000)
            records = [(r.offset, r.value or b"") for r in fetched.get(partition, [])]
            records = [(offset, value) for offset, value in records if offset < until]
            if records:  # with the sweeps they make due: the log was applied past them
                documents += await run(detector.catch_up, records)
        logger.info("detector: caught up to offset %d (%d documents)", until, documents)
    finally:
        await consumer.stop()
