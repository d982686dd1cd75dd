"""Serving an aiohttp application on an address, in a thread of its own with its own event
loop: beside a writer's detector, or in ``neardup serve``.

aiohttp answers a request its HTTP parser refuses (a malformed request line or header, a
line too long) before any middleware runs, in plain text; ``_JsonRefusals`` gives those the
JSON body every other refusal has. It is the one place that reaches below aiohttp's public
API (its request handler and server classes), since no option sets that body.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

__all__ = ["BACKLOG", "HttpServer"]

#: connections the kernel holds for the server before it accepts them: a burst of clients
#: (two hundred at once) must not meet resets
BACKLOG = 1024


class _JsonRefusals(RequestHandler):
    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            super().handle_error(request, status, exc, message)  # logs it
        else:  # a client's malformed request: its answer says why, no need for a traceback
            self.logger.debug("refused a request from %s: %s", request.remote, message)
        if request.writer.output_size > 0:
            raise ConnectionError("an answer was being sent: no error can follow it")
        code = "bad_request" if status == 400 else "error"
        body = {"error": {"status": status, "code": code, "message": message or "refused"}}
        response = web.Response(
            status=status, body=msgspec.json.encode(body), content_type="application/json"
        )
        response.force_close()
        return response


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _JsonRefusals(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # the same object, its handlers answering in JSON
        return server


class HttpServer:
    """``app`` served on ``address`` from a thread of its own; ``url`` once started."""

    def __init__(self, app: web.Application, address: tuple[str, int]) -> None:
        self.app = app
        self.address = address
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner = _Runner(app, access_log=None, handle_signals=False)
        self._thread = threading.Thread(target=self._loop.run_forever, name="neardup-http")

    def start(self) -> HttpServer:
        """Bind and serve; an address that cannot be bound raises here."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            host, port = future.result()
        except BaseException:
            self.stop()
            raise
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"
        return self

    async def _start(self) -> tuple[str, int]:
        await self._runner.setup()
        host, port = self.address
        site = web.TCPSite(self._runner, host, port, backlog=BACKLOG, reuse_address=True)
        await site.start()
        bound = self._runner.addresses[0]
        return str(bound[0]), int(bound[1])

    def announce(self) -> None:
        """Say where it serves, on stderr (a test or a script reads the port from it)."""
        print(f"neardup: serving {self.url}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()
