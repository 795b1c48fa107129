from __future__ import annotations

import email.utils
import json
import time
from email.message import Message
from typing import Any, Dict, Mapping, Optional, cast

from .schema import ErrorDetail


class LmsApiError(Exception):
    """An answer of the API that is not 2xx (a 304 to a conditional read excepted)."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        *,
        request_id: Optional[str] = None,
        details: Optional[list[ErrorDetail]] = None,
        body: Optional[Mapping[str, Any]] = None,
        headers: Optional[Message] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        #: The status's short name: `Not Found`, `Precondition Failed`, ...
        self.error = error
        self.message = message
        #: Identifies the request in the service log: quote it when reporting a problem.
        self.request_id = request_id
        #: For a 400: each field or parameter refused, `{"path", "message"}`.
        self.details = details
        #: The whole body, with the fields some errors add (`claims`, `activeJobId`).
        self.body: Mapping[str, Any] = body or {}
        #: The answer's headers (`Retry-After`, `WWW-Authenticate`), read case-insensitively: `error.headers.get("retry-after")`.
        self.headers = Message() if headers is None else headers

    def __str__(self) -> str:
        request = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.status} {self.error}: {self.message}{request}"

    @property
    def retry_after(self) -> Optional[float]:
        """The seconds the answer's `Retry-After` asks to wait, if it has one."""
        return retry_after_seconds(self.headers.get("Retry-After"))

    @classmethod
    def from_answer(cls, status: int, reason: str, headers: Message, body: bytes) -> LmsApiError:
        """The error of an answer; one that did not come from the API (a proxy's HTML page, say) is described from its status."""
        try:
            parsed = json.loads(body.decode("utf-8")) if body else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            fields = cast(Dict[str, Any], parsed)
            if isinstance(fields.get("status"), int) and isinstance(fields.get("message"), str):
                return cls(
                    fields["status"],
                    str(fields.get("error", reason)),
                    fields["message"],
                    request_id=fields.get("requestId") or headers.get("X-Request-Id"),
                    details=fields.get("details"),
                    body=fields,
                    headers=headers,
                )
        text = body.decode("utf-8", "replace").strip()
        return cls(status, reason, text[:500] or f"HTTP {status}", request_id=headers.get("X-Request-Id"), headers=headers)


def retry_after_seconds(value: Optional[str]) -> Optional[float]:
    """`Retry-After` as seconds: given as a number of seconds, or as an HTTP date."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
