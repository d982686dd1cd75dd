"""``neardup worker``: check the settings, create the topics, run the Faust topology."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError
from neardup.core import NeardupError
from neardup.state import State
from neardup.state.items import check_or_store_schema

from ..service import HttpServer, LiveState, Metrics, writer_app
from .config import WorkerConfig
from .topology import build_app, internal_topics

__all__ = ["WorkerService", "check_settings", "ensure_topics", "run_worker", "start_service"]

#: The prepared topic is the detector's changelog: a worker with a new state rebuilds it from
#: the first message, so the topic keeps every message (and compresses them).
_LOG_CONFIGS = {"retention.ms": "-1", "retention.bytes": "-1", "compression.type": "producer"}


def check_settings(config: WorkerConfig) -> None:
    """The worker's detector state keeps the settings it was built with (stored on first
    use); a worker started on it with incompatible ones is refused before it joins its group,
    with an IncompatibleStateError naming each differing setting."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    with State.open(
        config.detector_dir if config.shards is None else config.union_dir, config.settings
    ) as state:
        check_or_store_schema(state.store, config.schema)


def ensure_topics(config: WorkerConfig, timeout: float = 30.0) -> None:
    """Create the topology's topics with their partition counts; refuse mismatched ones."""
    wanted = internal_topics(config)
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=config.broker, client_id=f"{config.app_id}-admin"
            )
            break
        except KafkaError as error:
            if time.monotonic() > deadline:
                raise NeardupError(
                    f"cannot reach the Kafka broker at {config.broker}: {error}"
                ) from error
            time.sleep(0.5)
    try:
        existing = set(admin.list_topics())
        configs = {
            config.prepared_topic: _LOG_CONFIGS,
            config.findings_topic: _LOG_CONFIGS,  # the union stage's changelog
        }
        missing = [
            NewTopic(name, partitions, 1, topic_configs=configs.get(name, {}))
            for name, partitions in wanted.items()
            if name not in existing
        ]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker was first
                admin.create_topics(missing)
        for described in admin.describe_topics(list(wanted)):
            name, count = described["name"], len(described["partitions"])
            if count != wanted[name] and name == config.shards_topic:
                raise NeardupError(
                    f"the deployment {config.app_id} has {count} detection shards, not "
                    f"{wanted[name]}: shards cannot be added to a deployment (start every worker "
                    f"with --shards {count}, or a new deployment with another --app-id)"
                )
            if count != wanted[name]:
                raise NeardupError(
                    f"topic {name} has {count} partitions, the topology needs {wanted[name]}: "
                    f"start the workers with --partitions {count}, or delete the topic"
                )
    finally:
        admin.close()


@dataclass(frozen=True, slots=True)
class WorkerService:
    """A worker's ``--http``: ``/metrics`` and ``/healthz``, with the detector's state lent
    to them while this worker holds the log (``lending.py``)."""

    server: HttpServer
    metrics: Metrics
    held: LiveState


def start_service(config: WorkerConfig) -> WorkerService | None:
    """The worker's service, started, or None without ``--http``; the queries and the
    dashboard are ``neardup serve``'s, beside the worker holding the detector."""
    if config.http is None:
        return None
    held = LiveState(why_none="this worker does not hold the detector's state")
    metrics = Metrics(held)
    server = HttpServer(writer_app(metrics, config.api_token), config.http).start()
    server.announce()
    return WorkerService(server, metrics, held)


def run_worker(config: WorkerConfig, loglevel: str = "warning") -> None:
    """Run until SIGTERM/SIGINT (Faust's worker installs the handlers)."""
    import faust

    check_settings(config)
    ensure_topics(config)
    logging.getLogger("faust").setLevel(loglevel.upper())
    served = start_service(config)
    app = build_app(config, *(() if served is None else (served.metrics, served.held)))
    worker = faust.Worker(app, loglevel=loglevel, quiet=True)
    # Faust's start-up spinner sets the root logger to DEBUG to turn on every record: each
    # debug call of aiokafka (one per record sent) and Faust then builds a record that the
    # handlers drop (docs/benchmarks.md), and the level asked for is not the level set
    worker.spinner = None
    try:
        worker.execute_from_commandline()
    finally:
        if served is not None:
            served.server.stop()
