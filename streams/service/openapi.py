"""The OpenAPI 3.0 description of the JSON API, served at /api/v1/openapi.json.

Written from the same limits the server enforces; the schemathesis run in the tests checks
every answer against it.
"""

from __future__ import annotations

from typing import Any

from .api import API_PREFIX, Limits

__all__ = ["openapi"]

_ID = {"type": "string", "pattern": "^[0-9a-f]{16}$", "description": "16 hex digits"}
_TEXT = {"type": "string"}
_NULLABLE_TEXT = {"type": "string", "nullable": True}
_FRACTION = {"type": "number", "minimum": 0, "maximum": 1}
_COUNT = {"type": "integer", "minimum": 0}


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


#: a stored document ranked by its resemblance and containment to another
_RANKED = {
    "url": _TEXT,
    "fetched_at": _NULLABLE_TEXT,
    "id": _ID,
    "resemblance": _FRACTION,
    "containment": _FRACTION,
    "contains": _FRACTION,
}

_SCHEMAS: dict[str, Any] = {
    "Error": _object(
        {
            "error": _object(
                {"status": {"type": "integer"}, "code": _TEXT, "message": _TEXT},
            )
        }
    ),
    "Doc": _object({"id": _ID, "url": _NULLABLE_TEXT, "fetched_at": _NULLABLE_TEXT}),
    "Ranked": _object(_RANKED),
    "Match": _object(
        {
            **_RANKED,
            "exact": {"type": "boolean"},
            "method": {
                "type": "string",
                "enum": ["exact", "canonical", "shingle", "near", "contained"],
            },
            "cluster": _ID,
        }
    ),
    "ClusterSummary": _object({"cluster": _ID, "size": _COUNT, "first": _ref("Doc")}),
}

_ANSWERS: dict[str, Any] = {
    "Similar": _object({"matches": _list(_ref("Match"))}),
    "SimilarToStored": _object(
        {
            "url": _TEXT,
            "known": {"type": "boolean"},
            "doc": _ref("Doc"),
            "cluster": _ID,
            "size": _COUNT,
            "matches": _list(_ref("Ranked")),
        }
    ),
    "ClusterOf": _object(
        {
            "url": _TEXT,
            "known": {"type": "boolean"},
            "doc": _ref("Doc"),
            "cluster": _ID,
            "size": _COUNT,
        }
    ),
    "Cluster": _object(
        {
            "cluster": _ID,
            "known": {"type": "boolean"},
            "size": _COUNT,
            "members": _list(_ref("Doc")),
            "next": {**_ID, "nullable": True},
        },
        {"retired": _ID},
    ),
    "Largest": _object({"clusters": _list(_ref("ClusterSummary"))}),
    "Growing": _object(
        {
            "window_seconds": {"type": "number", "nullable": True},
            "clusters": _list(
                _object(
                    {
                        "cluster": _ID,
                        "joined": _COUNT,
                        "size": _COUNT,
                        "first": _object({"id": _ID, "url": _NULLABLE_TEXT}),
                    }
                )
            ),
        }
    ),
    "LostAndFound": _object(
        {
            "url": _TEXT,
            "known": {"type": "boolean"},
            "versions": _list(_object({"id": _ID, "fetched_at": _NULLABLE_TEXT})),
            "cluster": _ID,
            "found": _list(_ref("Ranked")),
        }
    ),
    "History": _object(
        {
            "url": _TEXT,
            "known": {"type": "boolean"},
            "versions": _list(
                _object(
                    {
                        "id": _ID,
                        "fetched_at": _NULLABLE_TEXT,
                        "cluster": _ID,
                        "resemblance_to_previous": {**_FRACTION, "nullable": True},
                        "containment_in_previous": {**_FRACTION, "nullable": True},
                        "previous_contained": {**_FRACTION, "nullable": True},
                    }
                )
            ),
        }
    ),
    "Fold": _object(
        {
            "groups": _list(
                _object({"head": {"type": "object"}, "folded": _list({"type": "object"})})
            )
        }
    ),
    "Stats": _object(
        {
            "documents": _COUNT,
            "duplicates": _COUNT,
            "clusters": _COUNT,
            "documents_in_clusters": _COUNT,
            "largest_clusters": _list({"type": "object"}),
            "disk_bytes": _COUNT,
        }
    ),
    "Dashboard": _object(
        {
            "now": {"type": "number"},
            "samples": _list({"type": "object"}),
            "size_distribution": _list(_object({"size": _TEXT, "clusters": _COUNT})),
            "largest": _list(_ref("ClusterSummary")),
            "growing": _list({"type": "object"}),
        }
    ),
}


def _query(name: str, schema: dict[str, Any], text: str, required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "schema": schema,
        "description": text,
    }


def _url() -> dict[str, Any]:
    return _query("url", {"type": "string", "minLength": 1}, "a stored page's URL", True)


def _limit(limits: Limits, default: int) -> dict[str, Any]:
    schema = {"type": "integer", "minimum": 1, "maximum": limits.max_limit, "default": default}
    return _query("limit", schema, "at most this many items")


def _operation(
    summary: str,
    answer: str,
    parameters: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    not_found: bool = False,
) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": _ref("Error")}}}
    responses: dict[str, Any] = {
        "200": {
            "description": "the answer",
            "content": {"application/json": {"schema": _ref(answer)}},
        },
        "400": {"description": "a malformed request", **error},
        "503": {"description": "no state to answer from yet", **error},
        "default": {"description": "any other refusal", **error},
    }
    if not_found:
        responses["404"] = {"description": "the URL or cluster is not in the state", **error}
    if body is not None:
        responses["413"] = {"description": "the body is over the limit", **error}
    operation: dict[str, Any] = {"summary": summary, "responses": responses}
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
    return operation


def openapi(limits: Limits, secured: bool = False) -> dict[str, Any]:
    """The description of the API as served with ``limits`` (and a bearer token, if set)."""
    similar_body = {
        "type": "object",
        "required": ["content"],
        "additionalProperties": False,
        "properties": {
            "content": {**_TEXT, "description": "the document (HTML or text)"},
            "content_type": {**_TEXT, "default": "text/html"},
            "url": {**_TEXT, "description": "a label for the document; it is not stored"},
            "limit": {"type": "integer", "minimum": 1, "maximum": limits.max_limit},
            "min_resemblance": _FRACTION,
            "containment": {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,  # OpenAPI 3.0: a flag on minimum
                "maximum": 1,
                "description": "only the documents containing at least this much of the posted "
                "one (its sources, for an excerpt), most containing first",
            },
            "excerpts": {
                "type": "boolean",
                "default": False,
                "description": "also the documents at least half inside the posted one (its "
                "excerpts), or with containment, at least that much inside it",
            },
        },
    }
    page = {
        "type": "object",
        "required": ["url", "content"],
        "additionalProperties": False,
        "properties": {"url": _TEXT, "content": _TEXT, "content_type": _TEXT},
    }
    fold_body = {
        "type": "object",
        "required": ["items"],
        "additionalProperties": False,
        "properties": {
            "items": {
                "type": "array",
                "maxItems": limits.max_fold_items,
                "items": {"oneOf": [{"type": "string", "minLength": 1}, page]},
                "description": "a ranked result list: stored URLs, or pages posted inline",
            },
            "threshold": _FRACTION,
        },
    }
    paths = {
        "/stats": {"get": _operation("the state's statistics (`neardup stats`)", "Stats")},
        "/similar": {
            "get": _operation(
                "documents like a stored URL's latest version (its cluster), best first",
                "SimilarToStored",
                [_url(), _limit(limits, 10)],
                not_found=True,
            ),
            "post": _operation(
                "documents like a posted document, best first; the state is not changed",
                "Similar",
                body=similar_body,
            ),
        },
        "/cluster-of": {
            "get": _operation("the cluster of a URL", "ClusterOf", [_url()], not_found=True)
        },
        "/clusters/largest": {
            "get": _operation("the largest clusters", "Largest", [_limit(limits, 10)])
        },
        "/clusters/growing": {
            "get": _operation(
                "the clusters that grew most in the last window", "Growing", [_limit(limits, 10)]
            )
        },
        "/clusters/{id}": {
            "get": _operation(
                "a cluster and one page of its members",
                "Cluster",
                [
                    {"name": "id", "in": "path", "required": True, "schema": _ID},
                    _query("after", _ID, "the `next` of the page before"),
                    _limit(limits, 100),
                ],
                not_found=True,
            )
        },
        "/lost-and-found": {
            "get": _operation(
                "where a URL's content went: the other URLs of its cluster",
                "LostAndFound",
                [_url(), _limit(limits, 10)],
                not_found=True,
            )
        },
        "/history": {
            "get": _operation(
                "a URL's versions, each with its resemblance to the one before",
                "History",
                [_url()],
                not_found=True,
            )
        },
        "/fold": {
            "post": _operation(
                "a ranked result list grouped, near-duplicates folded under their head",
                "Fold",
                body=fold_body,
            )
        },
        "/dashboard": {
            "get": _operation(
                "what the dashboard draws: samples, size distribution, largest and growing",
                "Dashboard",
                [_query("since", {"type": "number"}, "only samples after this Unix time")],
            )
        },
    }
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "neardup",
            "version": "1",
            "description": "Near-duplicate queries over a neardup state (docs/service.md).",
        },
        "servers": [{"url": API_PREFIX}],
        "paths": paths,
        "components": {"schemas": {**_SCHEMAS, **_ANSWERS}},
    }
    if secured:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
