"""The service: Prometheus metrics, the live dashboard and the JSON query API over HTTP.

sources.py   the state a request reads: a runtime's own (LiveState) or a follower's
metrics.py   Prometheus instruments and the state's counters at scrape time
timeline.py  what the dashboard plots: sampled numbers and cluster growth
api.py       the JSON endpoints (version 1), each a function of one request
openapi.py   their OpenAPI description
http.py      the server: routing, auth, limits, JSON errors, the dashboard page
errors.py    what a request can get wrong, as HTTP statuses
"""

from .api import API_PREFIX, Api, Limits, Request
from .errors import ApiError
from .http import Service, parse_address
from .metrics import Metrics
from .sources import FollowedState, LiveState, StateSource
from .timeline import Timeline

__all__ = [
    "API_PREFIX",
    "Api",
    "ApiError",
    "FollowedState",
    "Limits",
    "LiveState",
    "Metrics",
    "Request",
    "Service",
    "StateSource",
    "Timeline",
    "parse_address",
]
