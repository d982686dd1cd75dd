"""What a request can get wrong, as HTTP answers with a JSON body.

ApiError                    any refused request: status, code, message
├── BadRequestError         400: malformed JSON, a missing or wrong-typed field or
│                           parameter, too many fold items
├── UnauthorizedError       401: no bearer token, or the wrong one (``--api-token``)
├── NotFoundError           404: an unknown path, URL or cluster
├── MethodNotAllowedError   405: a known path asked with another method
├── PayloadTooLargeError    413: a body over the documented limit
├── UnsupportedError        501: a transfer coding other than chunked
├── VersionError            505: an HTTP version other than 1.0 and 1.1
└── UnavailableError        503: no state to answer from (yet), or too many queries waiting
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "BadRequestError",
    "MethodNotAllowedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedError",
    "VersionError",
]


class ApiError(Exception):
    """A refused request: its HTTP status, a stable code for programs, a sentence for people."""

    status = 500
    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": {"status": self.status, "code": self.code, "message": self.message}}


class BadRequestError(ApiError):
    status = 400
    code = "bad_request"


class UnauthorizedError(ApiError):
    status = 401
    code = "unauthorized"


class NotFoundError(ApiError):
    status = 404
    code = "not_found"


class MethodNotAllowedError(ApiError):
    status = 405
    code = "method_not_allowed"

    def __init__(self, message: str, allow: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        #: the methods the path takes (the Allow header)
        self.allow = allow


class PayloadTooLargeError(ApiError):
    status = 413
    code = "payload_too_large"


class UnsupportedError(ApiError):
    status = 501
    code = "not_implemented"


class VersionError(ApiError):
    status = 505
    code = "http_version_not_supported"


class UnavailableError(ApiError):
    status = 503
    code = "unavailable"
