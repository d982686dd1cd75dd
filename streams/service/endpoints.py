"""The API's endpoints as one table: path, method, parameters, body and answer types. The
server routes by it (``app.py``) and the OpenAPI description is written from it
(``openapi.py``), so the two cannot disagree."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from msgspec import Struct

from . import schemas
from .api import Api
from .errors import BadRequestError

__all__ = ["ENDPOINTS", "Endpoint", "Param", "parse_inputs"]

ParamKind = Literal["text", "limit", "id", "time"]


@dataclass(frozen=True, slots=True)
class Param:
    """A query (or path) parameter: ``kind`` says how it is read and checked."""

    name: str
    kind: ParamKind
    description: str
    required: bool = False
    default: int | float | None = None
    in_path: bool = False


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: Literal["GET", "POST"]
    #: below ``API_PREFIX``, in aiohttp's form ("/clusters/{cluster}")
    path: str
    summary: str
    answer: type[Struct]
    #: the Api method, called with the parameters by name (and ``query``: the body)
    call: Callable[..., Struct]
    params: tuple[Param, ...] = ()
    body: type[Struct] | None = None
    #: answers 404 for an unknown URL or cluster
    not_found: bool = False


_URL = Param("url", "text", "a stored page's URL", required=True)


def _limit(default: int) -> Param:
    return Param("limit", "limit", "at most this many items", default=default)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/stats", "the state's statistics (`neardup stats`)", schemas.Stats, Api.stats),
    Endpoint(
        "GET",
        "/similar",
        "documents like a stored URL's latest version (its cluster), best first",
        schemas.SimilarToStored,
        Api.similar_to_url,
        (_URL, _limit(10)),
        not_found=True,
    ),
    Endpoint(
        "POST",
        "/similar",
        "documents like a posted document, best first; the state is not changed",
        schemas.Similar,
        Api.similar_to_content,
        body=schemas.SimilarQuery,
    ),
    Endpoint(
        "GET",
        "/cluster-of",
        "the cluster of a URL",
        schemas.ClusterOf,
        Api.cluster_of_url,
        (_URL,),
        not_found=True,
    ),
    # before /clusters/{cluster}: the router tries the routes in this order
    Endpoint(
        "GET",
        "/clusters/largest",
        "the largest clusters",
        schemas.Largest,
        Api.largest,
        (_limit(10),),
    ),
    Endpoint(
        "GET",
        "/clusters/growing",
        "the clusters that grew most in the last minute (from the writer's samples)",
        schemas.Growing,
        Api.growing,
        (_limit(10),),
    ),
    Endpoint(
        "GET",
        "/clusters/{cluster}",
        "a cluster and one page of its members",
        schemas.Cluster,
        Api.cluster,
        (
            Param("cluster", "id", "a cluster's id (16 hex digits)", required=True, in_path=True),
            Param("after", "id", "the `next` of the page before"),
            _limit(100),
        ),
        not_found=True,
    ),
    Endpoint(
        "GET",
        "/lost-and-found",
        "where a URL's content went: the other URLs of its cluster",
        schemas.LostAndFound,
        Api.lost_and_found,
        (_URL, _limit(10)),
        not_found=True,
    ),
    Endpoint(
        "GET",
        "/history",
        "a URL's versions, each with its resemblance to the one before",
        schemas.History,
        Api.history,
        (_URL,),
        not_found=True,
    ),
    Endpoint(
        "POST",
        "/fold",
        "a ranked result list grouped, near-duplicates folded under their head",
        schemas.FoldAnswer,
        Api.fold,
        body=schemas.FoldQuery,
    ),
    Endpoint(
        "POST",
        "/items/similar",
        "item mode: the stored items most like a posted record, with each field's score",
        schemas.SimilarItems,
        Api.similar_items,
        body=schemas.ItemQuery,
        not_found=True,
    ),
    Endpoint(
        "GET",
        "/items/merged",
        "item mode: the merged records of the largest clusters",
        schemas.MergedList,
        Api.merged_largest,
        (_limit(10),),
        not_found=True,
    ),
    Endpoint(
        "GET",
        "/items/merged/{cluster}",
        "item mode: a cluster as one record, with its members and their urls",
        schemas.Merged,
        Api.merged,
        (Param("cluster", "id", "a cluster's id (16 hex digits)", required=True, in_path=True),),
        not_found=True,
    ),
    Endpoint(
        "GET",
        "/dashboard",
        "what the dashboard draws: samples since a time, sizes, largest and growing clusters",
        schemas.Dashboard,
        Api.dashboard,
        (Param("since", "time", "only samples after this Unix time", default=0.0),),
    ),
)


def parse_inputs(
    endpoint: Endpoint, query: Mapping[str, str], path: Mapping[str, str]
) -> dict[str, Any]:
    """The endpoint's parameters from a request, checked (a BadRequestError names the first
    that is wrong); ``query`` is a multidict (a parameter given twice is refused)."""
    inputs: dict[str, Any] = {}
    for param in endpoint.params:
        if param.in_path:
            inputs[param.name] = path[param.name]
            continue
        given = query.getall(param.name, [])  # type: ignore[attr-defined]
        if len(given) > 1:
            raise BadRequestError(f"{param.name} is given {len(given)} times: give it once")
        if not given or (param.kind == "text" and not given[0]):
            if param.required:
                raise BadRequestError(f"the query parameter {param.name} is required")
            inputs[param.name] = param.default
            continue
        inputs[param.name] = _read(param, given[0])
    return inputs


def _read(param: Param, text: str) -> str | int | float:
    if param.kind in ("text", "id"):
        return text
    if param.kind == "limit":
        try:
            value = int(text)
        except ValueError:
            raise BadRequestError(f"{param.name}={text!r} is not an integer") from None
        if not 1 <= value <= schemas.MAX_LIMIT:
            raise BadRequestError(f"{param.name}={value} must be from 1 to {schemas.MAX_LIMIT}")
        return value
    try:
        number = float(text)
    except ValueError:
        raise BadRequestError(f"{param.name}={text!r} is not a number") from None
    if not math.isfinite(number):
        raise BadRequestError(f"{param.name}={text!r} is not a finite number")
    return number
