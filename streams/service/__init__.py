"""The service: Prometheus metrics, the live dashboard and the JSON query API over HTTP.

sources.py   the state a request reads: a runtime's own (LiveState) or a follower's
metrics.py   Prometheus instruments and the state's counters at scrape time
timeline.py  what the dashboard plots: sampled numbers and cluster growth
api.py       the JSON endpoints (version 1), each a function of one request
openapi.py   their OpenAPI description
http.py      the server: routing, auth, limits, JSON errors, the dashboard page
relay.py     a runtime's front: a follower child serving its address, relaying what only it knows
fronted.py   a runtime's service behind a front, and the runtime's own service it relays to
errors.py    what a request can get wrong, as HTTP statuses
"""

from .api import API_PREFIX, Api, Limits, Request
from .errors import ApiError
from .fronted import Fronted
from .http import Service, parse_address
from .metrics import Metrics
from .relay import OWN_TOKEN_ENV, Front, Relay, own_token
from .sources import FollowedState, LiveState, StateSource
from .timeline import Timeline
from .wire import family_of, url_of

__all__ = [
    "API_PREFIX",
    "OWN_TOKEN_ENV",
    "Api",
    "ApiError",
    "FollowedState",
    "Front",
    "Fronted",
    "Limits",
    "LiveState",
    "Metrics",
    "Relay",
    "Request",
    "Service",
    "StateSource",
    "Timeline",
    "family_of",
    "own_token",
    "parse_address",
    "url_of",
]
