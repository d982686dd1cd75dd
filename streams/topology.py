"""The Kafka topology: the stage functions of streams/stages.py as Faust agents.

    pages       (key url, N)      prepare (batched)  -> docs, dead letters
    {app}-docs  (doc id, N)       store sketch       -> keys
    {app}-keys  (key owner, N)    post in index      -> candidates
    {app}-candidates (doc id, N)  attach sketch      -> verify
    {app}-verify (candidate, N)   estimate           -> edges
    {app}-edges (1)               union-find         -> events (key cluster id)

A stage message is a batch (one JSON item a line; one message per target partition for
each batch processed upstream), so Faust's cost per message is paid per batch, not per
document or pair. Items go to explicit partitions (doc id mod N, ``key_partition``), so
every stage reads and writes only table keys owned by the partition it is processing, and
Faust restores exactly those keys for whichever worker owns the partition.

Sends are ``force``d: published at once instead of being held until the input offset is
committed (which would add a commit interval of latency per stage). At-least-once holds
all the same: Faust flushes the producer before it commits offsets, and a send is issued
before its input event is acknowledged; replays are harmless (replay-safe stages).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import faust
from neardup.core import BadRecordError, Page, Preparer, page_from_json
from neardup.state import StateView

from .inputs import DeadLetter
from .stages import (
    CandidateMessage,
    DocMessage,
    EdgeMessage,
    KeysMessage,
    VerifyMessage,
    stage_candidates,
    stage_docs,
    stage_keys,
    stage_union,
    stage_verify_batch,
)
from .table_store import TableStore
from .worker_config import WorkerConfig

__all__ = ["build_app", "internal_topics"]

_EXCERPT = 512
#: stage messages stay well under Kafka's default 1 MB message limit
_MESSAGE_BYTES = 512 * 1024
#: Our state tables, by the stage that keeps them (their Faust names get the stage prefix:
#: the union stage keeps its own small "docs" table, partitioned differently).
_DOC_TABLES = ("docs", "meta")
_KEY_TABLES = ("supershingles", "shingles", "fingerprints", "stopkeys")
_UNION_TABLES = ("docs", "parents", "clusters", "events", "meta")


def internal_topics(config: WorkerConfig) -> dict[str, int]:
    """The topics the topology passes messages through, with their partition counts."""
    n = config.partitions
    return {
        config.pages_topic: n,
        f"{config.app_id}-docs": n,
        f"{config.app_id}-keys": n,
        f"{config.app_id}-candidates": n,
        f"{config.app_id}-verify": n,
        f"{config.app_id}-edges": 1,
        config.events_topic: n,
        config.dead_letter_topic: 1,
    }


def _dead_letter(event: Any, error: BadRecordError) -> bytes:
    message = event.message
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


def _lines(value: bytes) -> list[bytes]:
    """A stage message is a batch: its items' encodings, one JSON document a line."""
    return value.split(b"\n") if value else []


def _chunks(lines: list[bytes], limit: int = _MESSAGE_BYTES) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    size = 0
    for line in lines:
        if chunk and size + len(line) > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        yield chunk


def build_app(config: WorkerConfig) -> faust.App:
    """The Faust application of one worker (every worker of a deployment builds the same)."""
    settings, n = config.settings, config.partitions
    app = faust.App(
        config.app_id,
        broker=f"kafka://{config.broker}",
        store="rocksdb://",
        datadir=str(config.state_dir),
        topic_partitions=n,
        table_key_serializer="raw",
        table_value_serializer="raw",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        # a short rebalance timeout: a new group forms in seconds, not a minute
        broker_rebalance_timeout=config.rebalance_timeout,
        broker_session_timeout=max(10.0, 2 * config.rebalance_timeout),
        broker_heartbeat_interval=1.0,
        broker_commit_every=config.batch_size,
        broker_commit_interval=1.0,
        stream_buffer_maxsize=4 * config.batch_size,
        producer_linger=0.005,
        recovery_consistency_check=config.recovery_consistency_check,
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

    names = internal_topics(config)
    pages = topic(config.pages_topic, n)
    docs = topic(f"{config.app_id}-docs", n)
    keys = topic(f"{config.app_id}-keys", n)
    candidates = topic(f"{config.app_id}-candidates", n)
    verify = topic(f"{config.app_id}-verify", n)
    edges = topic(f"{config.app_id}-edges", 1)
    events = topic(config.events_topic, names[config.events_topic])
    dead_letters = topic(config.dead_letter_topic, names[config.dead_letter_topic])

    def tables(prefix: str, wanted: tuple[str, ...], partitions: int) -> TableStore:
        return TableStore(
            {
                name: app.Table(
                    f"{prefix}-{name}", key_type=bytes, value_type=bytes, partitions=partitions
                )
                for name in wanted
            }
        )

    doc_store = tables("doc", _DOC_TABLES, n)
    key_store = tables("key", _KEY_TABLES, n)
    union_store = tables("union", _UNION_TABLES, 1)
    preparer = Preparer(settings)

    def view(store: TableStore) -> StateView:
        return StateView(store, settings)

    async def send_grouped(target: Any, groups: dict[int, list[bytes]]) -> None:
        for partition, lines in sorted(groups.items()):
            for chunk in _chunks(lines):
                await target.send(
                    key=partition.to_bytes(4, "big"),
                    value=b"\n".join(chunk),
                    partition=partition,
                    force=True,
                )

    @app.agent(pages)
    async def prepare(stream: Any) -> None:
        async for batch in stream.take_events(config.batch_size, within=config.batch_wait):
            good: list[Page] = []
            for event in batch:
                try:
                    good.append(page_from_json(event.message.value or b"", config.max_record_bytes))
                except BadRecordError as error:
                    await dead_letters.send(
                        key=event.message.key, value=_dead_letter(event, error), force=True
                    )
            groups: dict[int, list[bytes]] = {}
            for doc in preparer.prepare(good):
                groups.setdefault(doc.doc_id % n, []).append(DocMessage.of(doc).encode())
            await send_grouped(docs, groups)

    @app.agent(docs)
    async def store_docs(stream: Any) -> None:
        async for value in stream:
            state = view(doc_store)
            groups: dict[int, list[bytes]] = {}
            for line in _lines(value):
                for target, message in stage_docs(state, DocMessage.decode(line), n).items():
                    groups.setdefault(target, []).append(message.encode())
            state.commit()
            await send_grouped(keys, groups)

    @app.agent(keys)
    async def post_keys(stream: Any) -> None:
        async for value in stream:
            state = view(key_store)
            groups: dict[int, list[bytes]] = {}
            for line in _lines(value):
                found = stage_keys(state, KeysMessage.decode(line))
                if found is not None:
                    groups.setdefault(found.ref.doc_id % n, []).append(found.encode())
            state.commit()
            await send_grouped(candidates, groups)

    @app.agent(candidates)
    async def attach_sketch(stream: Any) -> None:
        async for value in stream:
            state = view(doc_store)
            groups: dict[int, list[bytes]] = {}
            sent: set[tuple[int, int]] = set()  # a pair met through several key partitions
            for line in _lines(value):
                for message in stage_candidates(state, CandidateMessage.decode(line)):
                    pair = (message.doc.ref.doc_id, message.candidate)
                    if pair not in sent:
                        sent.add(pair)
                        groups.setdefault(message.candidate % n, []).append(message.encode())
            await send_grouped(verify, groups)

    @app.agent(verify)
    async def estimate(stream: Any) -> None:
        async for value in stream:
            messages = [VerifyMessage.decode(line) for line in _lines(value)]
            found = stage_verify_batch(view(doc_store), messages, settings)
            edge_lines = [edge.encode() for edge in found if edge is not None]
            if edge_lines:
                await send_grouped(edges, {0: edge_lines})

    @app.agent(edges)
    async def union(stream: Any) -> None:
        async for value in stream:
            state = view(union_store)
            for line in _lines(value):
                for event in stage_union(state, EdgeMessage.decode(line)):
                    await events.send(
                        key=str(event["cluster"]).encode(),
                        value=json.dumps(event).encode(),
                        force=True,
                    )
            state.commit()

    del prepare, store_docs, post_keys, attach_sketch, estimate, union  # registered on the app
    return app
