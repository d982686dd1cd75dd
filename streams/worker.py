"""``neardup worker``: check the settings, create the topics, run the Faust topology."""

from __future__ import annotations

import contextlib
import json
import logging
import time

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError
from neardup.core import IncompatibleStateError, NeardupError, Settings

from .topology import build_app, internal_topics
from .worker_config import WorkerConfig

__all__ = ["check_settings", "ensure_topics", "run_worker"]

_SETTINGS_FILE = "neardup-settings.json"


def check_settings(config: WorkerConfig) -> None:
    """A worker's state directory keeps the settings and partition count it was built with;
    a worker started on it with other ones is refused (its tables would not match)."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    path = config.state_dir / _SETTINGS_FILE
    wanted = {"settings": json.loads(config.settings.to_json()), "partitions": config.partitions}
    if not path.exists():
        path.write_text(json.dumps(wanted, sort_keys=True))
        return
    stored = json.loads(path.read_text())
    differences = config.settings.incompatibilities(
        Settings.from_json(json.dumps(stored["settings"]))
    )
    if stored.get("partitions") != config.partitions:
        differences.append(
            f"partitions: stored {stored.get('partitions')}, requested {config.partitions}"
        )
    if differences:
        raise IncompatibleStateError(
            f"the worker state in {config.state_dir} was built with other settings ("
            + "; ".join(differences)
            + "): use the same settings as the rest of the deployment, or a new state directory"
        )


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
        missing = [
            NewTopic(name, partitions, 1)
            for name, partitions in wanted.items()
            if name not in existing
        ]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another worker was first
                admin.create_topics(missing)
        for described in admin.describe_topics(list(wanted)):
            name, count = described["name"], len(described["partitions"])
            if count != wanted[name]:
                raise NeardupError(
                    f"topic {name} has {count} partitions, the topology needs {wanted[name]}: "
                    f"start the workers with --partitions {count}, or delete the topic"
                )
    finally:
        admin.close()


def run_worker(config: WorkerConfig, loglevel: str = "warning") -> None:
    """Run until SIGTERM/SIGINT (Faust's worker installs the handlers)."""
    import faust

    check_settings(config)
    ensure_topics(config)
    logging.getLogger("faust").setLevel(loglevel.upper())
    app = build_app(config)
    faust.Worker(app, loglevel=loglevel, quiet=True).execute_from_commandline()
