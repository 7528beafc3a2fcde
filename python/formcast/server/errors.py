"""Errors that become OpenAI-style error responses."""

from __future__ import annotations

from typing import Optional

__all__ = ["APIError", "error_body"]


class APIError(Exception):
    """An error with an HTTP status and an OpenAI error body
    ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: Optional[str] = None,
        param: Optional[str] = None,
        code: Optional[str | int] = None,
        headers: Optional[dict[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or _default_type(status)
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict:
        """The JSON error body."""
        return error_body(self.message, self.type, self.param, self.code)


def error_body(message: str, type: str, param: Optional[str] = None, code: Optional[str | int] = None) -> dict:
    """``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _default_type(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        501: "not_implemented_error",
        503: "service_unavailable_error",
    }.get(status, "server_error" if status >= 500 else "invalid_request_error")
