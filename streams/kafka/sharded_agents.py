"""Detection shards and the union stage as agents of a worker (``neardup worker --shards S``).

    {app}-prepared  (1 partition)  read by every shard, each from its own state's offset
    {app}-shards    (S partitions, no messages)  the group assigns shard s with partition s
    {app}-findings  (1 partition)  shards -> union stage (and the union stage's markers)

A worker runs the shards whose partitions of the shards topic it is assigned (``ShardPool``):
each reads the prepared log with a consumer of its own, applies it (``ShardLog``), sends its
findings, flushes them, then commits its state and offset in one write. The worker assigned
the findings topic runs the union stage (``union_agent``): it applies each log offset once
every shard reported it (``UnionLog``), sends the events, flushes them, writes a marker and
commits. Both are folds over a log kept whole (retention.ms=-1): a shard or a union stage
restarted on its state reads again from where that state stopped; one taken over by a
worker with a new state rebuilds it from the start of its log, and the union stage sends no
events for the offsets a marker says were sent already.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from neardup.core import BadRecordError, StateError
from neardup.state import Checkpoints, State, check_or_store_role

from ..detection.result import BatchResult
from ..detection.shard import Ownership
from ..service import Metrics
from . import page_batches
from .config import WorkerConfig
from .findings_codec import encode_findings
from .shard_log import ShardLog
from .union_log import MARKER_KEY, UnionLog, applied_marker, read_marker

__all__ = ["ShardPool", "union_agent"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
#: (topic, key, value, partition)
Produce = Callable[[str, bytes | None, bytes, int | None], Awaitable[None]]
Flush = Callable[[], Awaitable[None]]
Reject = Callable[[Any, BadRecordError], Awaitable[None]]
Stopped = Callable[[StateError], Awaitable[None]]
#: the events of a result as (key, value) records of the events topic
EventRecords = Callable[[BatchResult, bool], list[tuple[bytes, bytes]]]

#: prepared messages a shard applies in one transaction
_MESSAGES = 8


@dataclass(frozen=True, slots=True)
class _Record:
    """A message read outside Faust, in the shape a dead letter describes."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _in_thread(thread: ThreadPoolExecutor) -> Callable[..., Awaitable[Any]]:
    loop = asyncio.get_running_loop()

    def run(call: Callable[..., T], *args: Any) -> Awaitable[T]:
        return loop.run_in_executor(thread, call, *args)

    return run


def _checkpoints(config: WorkerConfig, name: str) -> Checkpoints | None:
    return None if config.checkpoints is None else Checkpoints(config.checkpoints, name)


def _open(path: Path, config: WorkerConfig, role: str, name: str) -> State:
    """This worker's state of a shard or of the union stage; one it lacks starts from the
    newest checkpoint, when there is one."""
    checkpoints = _checkpoints(config, name)
    if checkpoints is not None and not (path / "CURRENT").exists():
        offset = checkpoints.restore(path)
        if offset is not None:
            logger.info("%s: starting from the checkpoint at log offset %d", name, offset)
    state = State.open(path, config.settings, key_filter_bytes=config.key_filter_bytes)
    try:
        check_or_store_role(state.store, role)
    except BaseException:
        state.close()
        raise
    return state


def _consumer(config: WorkerConfig, name: str) -> Any:
    from aiokafka import AIOKafkaConsumer

    return AIOKafkaConsumer(
        bootstrap_servers=config.broker,
        client_id=f"{config.app_id}-{name}",
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 * page_batches.MESSAGE_BYTES,
        fetch_max_wait_ms=100,
    )


async def _seek(consumer: Any, topic: str, start: int, what: str) -> Any:
    from aiokafka import TopicPartition

    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    earliest = (await consumer.beginning_offsets([partition]))[partition]
    if earliest > start:
        raise StateError(
            f"the {what} state is at offset {start} of {topic}, whose data now starts at "
            f"{earliest}: the topic must keep every message (retention.ms=-1)"
        )
    consumer.seek(partition, start)
    return partition


class _Every:
    """Writes a checkpoint once the log has moved ``every`` messages past the last one."""

    def __init__(self, checkpoints: Checkpoints | None, every: int) -> None:
        self._checkpoints = checkpoints
        self._every = every
        self.last = 0

    def maybe(self, state: State, offset: int) -> None:
        if self._checkpoints is not None and offset - self.last >= self._every:
            self._checkpoints.write(state, offset)
            self.last = offset


class ShardPool:
    """The detection shards this worker runs: those of its assigned shards-topic partitions."""

    def __init__(
        self,
        config: WorkerConfig,
        produce: Produce,
        flush: Flush,
        reject: Reject,
        stopped: Stopped,
    ) -> None:
        if config.shards is None:
            raise ValueError("a shard pool needs WorkerConfig.shards")
        self._config = config
        self._shards = config.shards
        self._produce = produce
        self._flush = flush
        self._reject = reject
        self._stopped = stopped
        self._running: dict[int, asyncio.Task[None]] = {}

    async def assigned(self, partitions: Iterable[Any]) -> None:
        """The group's new assignment: start the shards it gives this worker, stop the others.
        Two workers may run a shard for a moment during a rebalance: both send the same
        findings, and the union stage keeps one copy."""
        wanted = {tp.partition for tp in partitions if tp.topic == self._config.shards_topic}
        for index in sorted(set(self._running) - wanted):
            await self._stop(index)
        for index in sorted(wanted - set(self._running)):
            self._running[index] = asyncio.create_task(self._run(index), name=f"shard-{index}")

    async def stop(self) -> None:
        for index in list(self._running):
            await self._stop(index)

    async def _stop(self, index: int) -> None:
        task = self._running.pop(index)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self, index: int) -> None:
        config = self._config
        ownership = Ownership(index, self._shards)
        with ThreadPoolExecutor(1, thread_name_prefix=f"neardup-shard-{index}") as thread:
            run = _in_thread(thread)
            try:
                name = f"shard-{index}-of-{self._shards}"
                role = f"shard {index} of {self._shards}"
                state = await run(_open, config.shard_dir(index), config, role, name)
            except StateError as error:
                await self._stopped(error)
                return
            consumer = _consumer(config, f"shard-{index}")
            try:
                await consumer.start()
                fold = ShardLog(state, ownership, config.prepared_topic)
                checkpoints = _Every(_checkpoints(config, name), config.checkpoint_every)
                start = await run(lambda: fold.next_offset)
                checkpoints.last = start
                partition = await _seek(consumer, config.prepared_topic, start, f"shard {index}")
                logger.info("shard %d: applying %s from offset %d", index, fold.log, start)
                while True:
                    fetched = await consumer.getmany(
                        partition, timeout_ms=1000, max_records=_MESSAGES
                    )
                    records = [(r.offset, r.value or b"") for r in fetched.get(partition, [])]
                    if records:
                        await self._apply(fold, records, run)
                        await run(checkpoints.maybe, state, fold.next_offset)
            except StateError as error:
                await self._stopped(error)
            except Exception as error:  # a shard that stopped would stall the union stage
                logger.exception("shard %d failed", index)
                await self._stopped(StateError(f"shard {index} failed: {error!r}"))
            finally:
                await consumer.stop()
                await run(state.close)

    async def _apply(
        self, fold: ShardLog, records: list[tuple[int, bytes]], run: Callable[..., Any]
    ) -> None:
        if fold.one_message_a_batch and len(records) > 1:
            for one in records:
                await self._apply(fold, [one], run)
            return
        config = self._config
        staged = await run(fold.stage, records)
        if fold.ownership.index == 0:  # every shard rejects the same messages: one reports
            values = dict(records)
            for offset, error in staged.rejected:
                record = _Record(config.prepared_topic, 0, offset, None, values[offset])
                await self._reject(record, error)
        key = str(fold.ownership.index).encode()
        for message in staged.messages:
            await self._produce(config.findings_topic, key, encode_findings(message), 0)
        await self._flush()  # findings out before the state says "done"
        await run(fold.commit, staged)


async def union_agent(
    stream: Any,
    config: WorkerConfig,
    produce: Produce,
    flush: Flush,
    reject: Reject,
    stopped: Stopped,
    event_records: EventRecords,
    metrics: Metrics | None,
) -> None:
    """The union stage over the findings topic's one partition, which Faust assigns to one
    worker; every worker opens its union state, as every worker ran the single detector."""
    assert config.shards is not None
    shards = config.shards
    with ThreadPoolExecutor(1, thread_name_prefix="neardup-union") as thread:
        run = _in_thread(thread)
        try:
            name = f"union-of-{shards}"
            state = await run(_open, config.union_dir, config, f"union of {shards}", name)
        except StateError as error:
            await stopped(error)
            return
        fold = UnionLog(state, shards, config.prepared_topic, config.findings_topic)
        checkpoints = _Every(_checkpoints(config, name), config.checkpoint_every)
        checkpoints.last = fold.next_offset
        silent_below = 0

        async def apply() -> None:
            staged = await run(fold.stage)
            if staged is None:
                return
            if staged.next_offset > silent_below:  # else sent by whoever applied it first
                for key, value in event_records(staged.result, state.settings.keeps_edges):
                    await produce(config.events_topic, key, value, None)
                await flush()  # events out before the marker and the state say "done"
            await produce(config.findings_topic, MARKER_KEY, applied_marker(staged.next_offset), 0)
            await run(fold.commit, staged)
            await run(checkpoints.maybe, state, staged.next_offset)
            if metrics is not None:
                metrics.batch_done(staged.result, dict(staged.result.stage_seconds))

        async def read(position: int, key: bytes | None, value: bytes) -> None:
            nonlocal silent_below
            try:
                if key == MARKER_KEY:
                    fold.passed(position)
                    silent_below = max(silent_below, read_marker(value))
                else:
                    await run(fold.add, position, value)
            except BadRecordError as error:
                fold.passed(position)
                await reject(_Record(config.findings_topic, 0, position, key, value), error)

        try:
            async for batch in stream.take_events(64, within=config.batch_wait):
                first = batch[0].message.offset
                if first > fold.seen + 1:  # started, or the partition was elsewhere meanwhile
                    fold = UnionLog(state, shards, config.prepared_topic, config.findings_topic)
                    logger.info("union: applying %s from %d", fold.findings, fold.resume)
                    records = await _findings_between(config, fold, first, run)
                    silent_below = max(
                        [silent_below]
                        + [read_marker(value) for _, key, value in records if key == MARKER_KEY]
                    )
                    if records:
                        logger.info(
                            "union: caught up on %s from %d to %d (events were sent up to log "
                            "offset %d)",
                            config.findings_topic,
                            records[0][0],
                            first,
                            silent_below,
                        )
                    for at in range(0, len(records), 64):
                        for position, key, value in records[at : at + 64]:
                            await read(position, key, value)
                        await apply()
                for event in batch:
                    message = event.message
                    await read(message.offset, message.key, message.value or b"")
                await apply()
        except StateError as error:
            await stopped(error)
        finally:
            await run(state.close)


async def _findings_between(
    config: WorkerConfig, fold: UnionLog, until: int, run: Callable[..., Awaitable[Any]]
) -> list[tuple[int, bytes | None, bytes]]:
    """The findings topic from where the union state stopped up to ``until`` (where the
    group's committed offset resumes)."""
    start = await run(lambda: fold.resume)
    if start >= until:
        return []
    consumer = _consumer(config, "union-catch-up")
    await consumer.start()
    try:
        partition = await _seek(consumer, config.findings_topic, start, "union")
        records: list[tuple[int, bytes | None, bytes]] = []
        while await consumer.position(partition) < until:
            fetched = await consumer.getmany(partition, timeout_ms=1000)
            records += [
                (r.offset, r.key, r.value or b"")
                for r in fetched.get(partition, [])
                if r.offset < until
            ]
        return records
    finally:
        await consumer.stop()
