"""A runtime's service behind a front: the address clients call, handed to a follower child
(relay.py) at the first state query while the runtime holds its state, and the runtime's own
service on a loopback port, which answers the front what only the runtime knows.

``neardup run --http`` holds its state from start to end. A worker holds the detector only
while the prepared log is assigned to it: when it lets go (a rebalance, its detector
stopping), ``withdrawn`` stops the front and serves the address in the worker again, which
then redirects to the new holder; the next state query after it holds the detector again
starts another front.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from neardup.core import NeardupError

from .http import Service
from .relay import Front, own_token
from .sources import LiveState
from .wire import family_of

__all__ = ["QUERY_SWITCH_INTERVAL", "Fronted", "listen"]

#: the interpreter's thread switch interval while a runtime serves queries: the detector holds
#: the GIL between switches, and a query waits for it at each of its state reads (the
#: default 5 ms makes a query of a hundred reads wait hundreds of milliseconds)
QUERY_SWITCH_INTERVAL = 0.0002


@dataclass(frozen=True, slots=True)
class Fronted:
    """``public`` serves the address until the front takes it; ``own`` answers the front."""

    public: Service
    own: Service
    front: Front

    @classmethod
    def start(
        cls,
        source: LiveState,
        state_dir: str | os.PathLike[str],
        address: tuple[str, int],
        token: str | None,
        locate: Callable[[], str | None] | None = None,
    ) -> Fronted:
        """Bind ``address`` (an error names it if it is taken) and serve it; the front, once
        started, follows ``state_dir``."""
        listening = listen(address)
        secret = own_token()
        front = Front(state_dir, listening, token, secret)
        try:
            public = Service(
                source,
                address,
                token,
                locate=locate,
                query_switch_interval=QUERY_SWITCH_INTERVAL,
                listening=listening,
                on_state_query=lambda: source.attached and front.start(),
            )
            own = Service(
                source,
                ("127.0.0.1", 0),
                secret,
                query_switch_interval=QUERY_SWITCH_INTERVAL,
                shared=public,
            ).start()
        except BaseException:
            listening.close()  # the caller gets the error, and no socket left open
            raise
        front.own_port = own.port
        front.on_give_up = public.take_back
        public.start()
        return cls(public, own, front)

    def withdrawn(self) -> None:
        """The runtime no longer holds the state the front follows: stop the front and serve
        the address here again."""
        self.front.pause()
        self.public.take_back(for_good=False)

    def stop(self) -> None:
        self.public.stop()
        self.own.stop()
        self.front.stop()


def listen(address: tuple[str, int]) -> socket.socket:
    host = address[0]
    try:
        return socket.create_server(address, family=family_of(host), backlog=128)
    except OSError as error:
        raise NeardupError(f"--http {host}:{address[1]}: cannot listen there ({error})") from None
