"""Closing the tests' own kafka-python clients.

kafka-python 3.0.12 drops the socket of a connection still being made when its client
closes: the task making it is cancelled inside ``kafka/net/inet.py``'s ``sock_connect``,
which has no ``finally`` to close it. The garbage collector closes the socket later, with a
ResourceWarning that pytest (warnings are errors) reports in whichever test runs then, far
from its cause. ``close`` collects such sockets at the close that dropped them and ignores
that one warning there: any other unclosed resource, anywhere else, still fails its test.
"""

from __future__ import annotations

import gc
import warnings
from typing import Protocol

__all__ = ["close"]


class _Client(Protocol):
    def close(self) -> None: ...


def close(client: _Client) -> None:
    """``client.close()``, and the sockets it dropped collected, quietly, right away."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed <socket.socket", ResourceWarning)
        client.close()
        gc.collect()
