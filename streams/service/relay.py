"""``neardup run --http`` and ``neardup worker --http``: a follower child in front, the
runtime's own service behind it.

A runtime answering queries itself makes each wait for its detector's interpreter lock, at
every state read and at each step of the request (p99 731-883 ms at 100 similar queries a
second beside full-speed ingestion, where ``neardup serve`` answered in 40-70 ms); relaying
them from the runtime to a follower kept the waits in the runtime (docs/service.md).

So from the first state query on, a follower child serves the runtime's address (``Front``;
until then the runtime serves it: one whose clients only scrape its metrics starts none). It
is a ``neardup serve`` process over the runtime's state directory that answers every state
query and relays to the runtime (``Relay``) what only it knows: its metrics, the dashboard's
timeline and the cluster growth it measures from its batches. The runtime's own service
listens on a loopback port of its own and takes only a token made for the child. The child
exits when its standard input closes, so a runtime that dies takes it along; a child that
exits while the runtime goes on is started again. fronted.py puts the pieces together.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .api import API_PREFIX
from .wire import EXCHANGE_FAILURES, KeptAlive, url_of

__all__ = ["OWN_PATHS", "OWN_TOKEN_ENV", "Front", "Relay", "RelayedAnswer", "own_token"]

logger = logging.getLogger(__name__)

#: what a run's front relays to the run: what the run knows and its state does not say
OWN_PATHS = frozenset({"/metrics", API_PREFIX + "/dashboard", API_PREFIX + "/clusters/growing"})
#: the environment variable that gives the front the run's own token
OWN_TOKEN_ENV = "NEARDUP_OWN_TOKEN"

#: starts of a run's front within a minute past which the run goes on without one (a child
#: that cannot start would be started again and again)
_STARTS_PER_MINUTE = 5
#: seconds a relayed request may take before the front answers it itself
_TIMEOUT = 30.0
#: the answer's headers that go back to the client (the rest are the relayed server's own)
_PASSED = ("Allow", "WWW-Authenticate", "Retry-After")


@dataclass(frozen=True, slots=True)
class RelayedAnswer:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


class Relay:
    """Requests for ``paths`` handed to another neardup server on this machine (``port``,
    with its ``token``), one kept-alive connection per request thread."""

    def __init__(self, port: int, token: str, paths: frozenset[str] = OWN_PATHS) -> None:
        self.port = port
        self.paths = paths
        self._headers = f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        self._connections = KeptAlive(("127.0.0.1", port), _TIMEOUT)

    def takes(self, path: str) -> bool:
        return path in self.paths

    def forward(self, method: str, target: str, body: bytes) -> RelayedAnswer | None:
        """The other server's answer to a request (``target``: path and query), or None when
        it gives none (the caller answers). A request is sent again once on a fresh
        connection if a kept-alive one had been closed: the relayed requests change
        nothing."""
        for attempt in range(2):
            try:
                status, headers, data = self._connections.exchange(
                    method, target, self._headers, body
                )
            except EXCHANGE_FAILURES:
                if attempt:
                    return None
                continue
            return RelayedAnswer(
                status,
                headers.get("Content-Type", "application/json"),
                data,
                {name: headers.get(name) for name in _PASSED if headers.get(name) is not None},
            )
        return None


class Front:
    """The ``neardup serve`` child that serves a runtime's address from its state directory
    once started (at the first state query): it accepts on ``listening`` (a socket the runtime
    has bound, so that a taken address fails it at once, and clients wait in its backlog while
    a child starts), and relays ``OWN_PATHS`` to the runtime's own service (``own_port``, set
    before ``start``; ``own_token``). ``token``: the bearer token clients must give, if any.
    A child that exits before ``pause`` or ``stop`` is started again, up to
    ``_STARTS_PER_MINUTE`` times a minute; past that, ``on_give_up`` (the runtime takes its
    address back, for good)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        listening: socket.socket,
        token: str | None,
        own_token: str,
    ) -> None:
        self._state_dir = str(Path(state_dir))
        self._listening = listening
        #: the loopback port of the run's own service
        self.own_port = 0
        #: called (from a thread of the front's) when the runtime gives up on its front
        self.on_give_up: Callable[[], None] | None = None
        self._environment = {**os.environ, OWN_TOKEN_ENV: own_token}
        self._environment.pop("NEARDUP_HTTP", None)
        if token:
            self._environment["NEARDUP_API_TOKEN"] = token
        else:
            self._environment.pop("NEARDUP_API_TOKEN", None)
        self._process: subprocess.Popen[bytes] | None = None
        self._starts: list[float] = []
        self._gave_up = False
        self._closed = False
        self._lock = threading.Lock()

    def start(self) -> bool:
        """Start the child, unless one serves already; False when none will (the runtime gave
        up on its front, or stopped it for good)."""
        with self._lock:
            if self._closed or self._gave_up:
                return False
            if self._process is not None:
                return True
            self._spawn()
            process = self._process
        threading.Thread(
            target=self._watch, args=(process,), name="neardup-front", daemon=True
        ).start()
        return True

    def _spawn(self) -> None:
        # the runtime keeps its copy of the socket: while no child accepts (one is starting
        # again, or paused), connections wait in its backlog instead of being refused
        command: Sequence[str] = [
            sys.executable,
            "-m",
            "neardup.streams",
            "serve",
            "--state",
            self._state_dir,
            "--http",
            url_of(self._listening.getsockname()).removeprefix("http://"),
            "--listen-fd",
            str(self._listening.fileno()),
            "--own-from",
            str(self.own_port),
            "--until-stdin-closes",
        ]
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=self._environment,
            pass_fds=(self._listening.fileno(),),
        )
        self._starts.append(time.monotonic())

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        """Start the child again when it exits before it is paused or stopped."""
        while True:
            code = process.wait()
            with self._lock:
                if self._process is not process or self._closed:  # paused or stopping
                    return
                now = time.monotonic()
                if sum(now - at < 60.0 for at in self._starts) < _STARTS_PER_MINUTE:
                    logger.warning("the service's front exited (%s); starting another", code)
                    self._spawn()
                    process = self._process
                    continue
                self._process = None
                self._gave_up = True
            logger.error(
                "the service's front exited (%s) %d times in a minute; this process answers "
                "at its address itself from now on",
                code,
                _STARTS_PER_MINUTE,
            )
            if self.on_give_up is not None:
                self.on_give_up()
            return

    def pause(self) -> None:
        """Stop the child, if one runs, and wait for it; keep the socket (connections wait in
        its backlog until the caller serves it again). ``start`` starts another."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        """Stop the child for good (its standard input closes), wait for it, close the
        socket."""
        with self._lock:
            self._closed = True
        self.pause()
        self._listening.close()


def own_token() -> str:
    """A token for a runtime's own service, known to its front only."""
    return secrets.token_urlsafe(24)
