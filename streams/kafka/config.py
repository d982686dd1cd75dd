"""What a Kafka worker needs to know: one frozen dataclass, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from neardup.core import DEFAULT_MAX_RECORD_BYTES, NeardupError, Settings
from neardup.core.items.schema import ItemSchema
from neardup.state import KEY_FILTER_BYTES

from ..detection.retention import Retention, check_retention
from ..running.embedded import DEFAULT_BATCH_SIZE
from ..running.prepare_work import DEFAULT_BATCH_BYTES, PREPARE_MODES, PrepareMode
from .topics import (
    DEAD_LETTER_TOPIC,
    EVENTS_TOPIC,
    PAGES_TOPIC,
    findings_topic,
    prepared_topic,
    shards_topic,
)

__all__ = ["WorkerConfig", "detector_dir"]


def detector_dir(state_dir: Path) -> Path:
    """A worker's detector state (RocksDB) inside its state directory."""
    return state_dir / "detector"


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """One worker of a deployment; every worker of the deployment must agree on all but
    ``state_dir``."""

    broker: str
    state_dir: Path
    partitions: int = 4
    pages_topic: str = PAGES_TOPIC
    events_topic: str = EVENTS_TOPIC
    dead_letter_topic: str = DEAD_LETTER_TOPIC
    #: Faust application id: the consumer group and the prefix of internal topics.
    app_id: str = "neardup"
    settings: Settings = field(default_factory=Settings)
    #: pages prepared together (vectorised), and the longest wait to fill a batch (seconds)
    batch_size: int = DEFAULT_BATCH_SIZE
    batch_wait: float = 0.2
    #: content characters prepared together, at most (a larger page alone): bounds memory
    batch_bytes: int = DEFAULT_BATCH_BYTES
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    #: the bound on the memory of a detector's key filters (``neardup.state.FilterBudget``)
    key_filter_bytes: int | None = KEY_FILTER_BYTES
    rebalance_timeout: float = 4.0
    #: seconds the group waits without a heartbeat from a worker (one a second) before it
    #: hands the worker's partitions to the others: a killed worker's work resumes elsewhere
    #: after about this long; a longer one rides out longer stalls (a broker's
    #: group.min.session.timeout.ms, 6 s by default on Kafka, bounds it from below)
    session_timeout: float = 10.0
    #: where pages are prepared: "process" (a child process: two cores) or "thread"
    prepare: PrepareMode = "process"
    #: the address of the worker's /metrics and /healthz, or None for none
    http: tuple[str, int] | None = None
    #: the bearer token the service asks for, or None
    api_token: str | None = None
    #: detection shards (see docs/kafka.md), or None for one detector in one worker
    shards: int | None = None
    #: where the shards and the union stage keep checkpoints of their states (a directory
    #: the workers may share), or None for none; and how many log messages apart
    checkpoints: Path | None = None
    checkpoint_every: int = 256
    #: item mode's schema (every worker of the deployment the same), or None for pages
    schema: ItemSchema | None = None
    #: the retention window (``detection.retention``), or None to keep every url until it is
    #: deleted: every worker of the deployment the same, or a state rebuilt from the log
    #: would expire other urls than the one it replaces
    expire_after: timedelta | None = None

    @property
    def retention(self) -> Retention | None:
        return None if self.expire_after is None else Retention(self.expire_after)

    @property
    def prepared_topic(self) -> str:
        """The one-partition log of prepared documents: the detector's input and changelog."""
        return prepared_topic(self.app_id)

    @property
    def findings_topic(self) -> str:
        """Where the detection shards send their findings (with ``shards``)."""
        return findings_topic(self.app_id)

    @property
    def shards_topic(self) -> str:
        """The topic whose partitions say which worker runs which shard (with ``shards``)."""
        return shards_topic(self.app_id)

    def shard_dir(self, index: int) -> Path:
        """This worker's state of detection shard ``index``, rebuilt from the log if lost."""
        return self.state_dir / f"shard-{index}"

    @property
    def union_dir(self) -> Path:
        """This worker's union-stage state, rebuilt from the findings topic if lost."""
        return self.state_dir / "union"

    @property
    def detector_dir(self) -> Path:
        """This worker's detector state (RocksDB), rebuilt from the prepared topic if lost."""
        return detector_dir(self.state_dir)

    def __post_init__(self) -> None:
        host, _, port = self.broker.rpartition(":")
        if not host or not port.isdigit():
            raise NeardupError(f"broker {self.broker!r} is not HOST:PORT (e.g. localhost:9092)")
        if not 1 <= self.partitions <= 1024:
            raise NeardupError(
                f"partitions={self.partitions} is out of range: use 1 to 1024 (the pages topic's "
                "partition count; every worker of a deployment must use the same)"
            )
        if self.shards is not None and not 1 <= self.shards <= 256:
            raise NeardupError(
                f"shards={self.shards} is out of range: use 1 to 256 detection shards (every "
                "worker of a deployment must use the same)"
            )
        if self.schema is not None and self.shards is not None:
            raise NeardupError(
                "item mode (--schema) runs one detector: detection shards are for pages"
            )
        if self.expire_after is not None:
            if self.shards is not None:
                raise NeardupError(
                    "--expire-after runs in the one detector of a deployment: detection shards "
                    "(--shards) do not follow versions"
                )
            check_retention(self.settings, self.schema is not None)
            Retention(self.expire_after)  # its range
        if self.checkpoint_every < 1:
            raise NeardupError(
                f"checkpoint_every={self.checkpoint_every}: use a positive number of log messages"
            )
        if not 3.0 <= self.session_timeout <= 90.0:
            raise NeardupError(
                f"session_timeout={self.session_timeout}: use 3 to 90 seconds (at least three "
                "heartbeats, at most the client's request timeout)"
            )
        if self.prepare not in PREPARE_MODES:
            raise NeardupError(
                f"prepare={self.prepare!r}: use one of {', '.join(PREPARE_MODES)} (process "
                "prepares pages in a child process, thread in the worker's own)"
            )
        if self.batch_size < 1 or self.batch_wait <= 0 or self.batch_bytes < 1:
            raise NeardupError(
                f"batch_size={self.batch_size}, batch_wait={self.batch_wait}, "
                f"batch_bytes={self.batch_bytes}: use a positive batch size, wait and bytes"
            )
        for name in (self.pages_topic, self.events_topic, self.dead_letter_topic, self.app_id):
            if not name or any(c in name for c in " /\\,"):
                raise NeardupError(f"{name!r} is not a usable topic name or application id")
