"""The service: the JSON query API, the dashboard and Prometheus metrics, over HTTP (aiohttp).

``neardup serve`` answers the API and the dashboard from a state it follows; the writers
(``neardup run``, ``neardup worker``) serve ``/metrics`` and ``/healthz``.

sources.py    the state a request reads: one lent by its process (LiveState) or a follower
schemas.py    the API's bodies and answers (msgspec Structs)
api.py        the endpoints, each a function of its parsed inputs
endpoints.py  the table of endpoints: paths, methods, parameters, types
openapi.py    the OpenAPI description, generated from the table and the Structs
metrics.py    Prometheus instruments and the state's counters at scrape time
app.py        the aiohttp applications: routes, the token, JSON errors, the query pool
server.py     serving an application on an address, in a thread of its own
errors.py     what a request can get wrong, as HTTP statuses
"""

from .api import API_PREFIX, Api
from .app import QueryPool, dashboard_page, query_app, writer_app
from .errors import ApiError
from .metrics import Metrics
from .server import HttpServer
from .sources import FollowedState, LiveState, StateSource

__all__ = [
    "API_PREFIX",
    "Api",
    "ApiError",
    "FollowedState",
    "HttpServer",
    "LiveState",
    "Metrics",
    "QueryPool",
    "StateSource",
    "dashboard_page",
    "query_app",
    "writer_app",
]
