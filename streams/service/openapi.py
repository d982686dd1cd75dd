"""The OpenAPI 3.1 description of the JSON API, served at /api/v1/openapi.json, generated
from the endpoint table (``endpoints.py``) and the Structs of its bodies and answers
(``schemas.py``); the schemathesis run in the tests checks every answer against it."""

from __future__ import annotations

from typing import Any

import msgspec

from . import schemas
from .api import API_PREFIX
from .endpoints import ENDPOINTS, Endpoint, Param

__all__ = ["openapi"]

_REF = "#/components/schemas/{name}"
_PARAM_SCHEMAS: dict[str, dict[str, Any]] = {
    "text": {"type": "string", "minLength": 1},
    "limit": {"type": "integer", "minimum": 1, "maximum": schemas.MAX_LIMIT},
    "id": {"type": "string", "pattern": "^[0-9a-fA-F]{16}$", "description": "16 hex digits"},
    "time": {"type": "number"},
}


def _parameter(param: Param) -> dict[str, Any]:
    schema = dict(_PARAM_SCHEMAS[param.kind])
    if param.default is not None:
        schema["default"] = param.default
    return {
        "name": param.name,
        "in": "path" if param.in_path else "query",
        "required": param.required or param.in_path,
        "schema": schema,
        "description": param.description,
    }


def _ref(kind: type[msgspec.Struct]) -> dict[str, str]:
    return {"$ref": _REF.format(name=kind.__name__)}


def _operation(endpoint: Endpoint, secured: bool) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": _ref(schemas.ErrorAnswer)}}}
    responses: dict[str, Any] = {
        "200": {
            "description": "the answer",
            "content": {"application/json": {"schema": _ref(endpoint.answer)}},
        },
        "400": {"description": "a malformed request", **error},
        "503": {"description": "no state to answer from yet, or too many queries", **error},
        "default": {"description": "any other refusal", **error},
    }
    if secured:
        responses["401"] = {"description": "the token is missing or wrong", **error}
    if endpoint.not_found:
        responses["404"] = {"description": "the URL or cluster is not in the state", **error}
    operation: dict[str, Any] = {"summary": endpoint.summary, "responses": responses}
    if endpoint.params:
        operation["parameters"] = [_parameter(param) for param in endpoint.params]
    if endpoint.body is not None:
        responses["413"] = {"description": "the body is over 4 MiB", **error}
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(endpoint.body)}},
        }
    return operation


def openapi(secured: bool = False) -> dict[str, Any]:
    """The description of the API (with a bearer token, if the service asks for one)."""
    kinds: set[type[msgspec.Struct]] = {schemas.ErrorAnswer}
    for endpoint in ENDPOINTS:
        kinds.add(endpoint.answer)
        if endpoint.body is not None:
            kinds.add(endpoint.body)
    _, components = msgspec.json.schema_components(
        sorted(kinds, key=lambda kind: kind.__name__), ref_template=_REF
    )
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint, secured)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "neardup",
            "version": "1",
            "description": "Near-duplicate queries over a neardup state (docs/service.md).",
        },
        "servers": [{"url": API_PREFIX}],
        "paths": paths,
        "components": {"schemas": components},
    }
    if secured:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    return document
