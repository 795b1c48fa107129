from __future__ import annotations

import email.utils
import time
from email.message import Message
from typing import Any, Dict, List, Mapping, Optional, Type, cast

from ._fields import Fields, parse


class LmsApiError(Exception):
    """
    An answer the client does not take as a success: an error answer of the API (not 2xx, a 304 to
    a conditional read excepted), a redirect, or a `Link` it must not follow. The subclasses are the
    statuses worth a branch of their own.
    """

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        *,
        request_id: Optional[str] = None,
        details: Optional[List[Fields]] = None,
        body: Optional[Mapping[str, Any]] = None,
        headers: Optional[Message] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        #: The status's short name: `Not Found`, `Precondition Failed`, ...
        self.error = error
        #: The API's message (`str(error)` adds the status, the details and the request id).
        self.message = message
        #: Identifies the request in the service log: quote it when reporting a problem.
        self.request_id = request_id
        #: For a 400: each field or parameter refused, `{"path", "message"}` (`detail.path`).
        self.details = details
        #: The whole body, with the fields some errors add: `body.active_job_id`, `body.claims`.
        self.body = Fields(body or {})
        #: The answer's headers (`Retry-After`, `WWW-Authenticate`, `Location`), read case-insensitively: `error.headers.get("retry-after")`.
        self.headers = Message() if headers is None else headers

    def __str__(self) -> str:
        details = " [" + "; ".join(f"{detail.get('path') or 'body'}: {detail.get('message')}" for detail in self.details) + "]" if self.details else ""
        request = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.status} {self.error}: {self.message}{details}{request}"

    @property
    def retry_after(self) -> Optional[float]:
        """The seconds the answer's `Retry-After` asks to wait, if it has one."""
        return retry_after_seconds(self.headers.get("Retry-After"))

    @staticmethod
    def from_answer(status: int, reason: str, headers: Message, body: bytes) -> LmsApiError:
        """
        The error of an answer, as the subclass for its status; one that did not come from the API
        (a proxy's HTML page, a redirect) is described from its status and headers.
        """
        error = ERRORS_BY_STATUS.get(status, LmsApiError)
        try:
            parsed = parse(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, Fields) and isinstance(parsed.get("status"), int) and isinstance(parsed.get("message"), str):
            return error(
                cast(int, parsed["status"]),
                str(parsed.get("error", reason)),
                cast(str, parsed["message"]),
                request_id=parsed.get("requestId") or headers.get("X-Request-Id"),
                details=parsed.get("details"),
                body=parsed,
                headers=headers,
            )
        if 300 <= status < 400:
            location = headers.get("Location")
            target = f" to {location}" if location else ""
            message = f"The answer is a redirect{target}, which the client does not follow (its token goes to the base URL's origin alone): check the base URL."
        else:
            message = body.decode("utf-8", "replace").strip()[:500] or f"HTTP {status}"
        return error(status, reason, message, request_id=headers.get("X-Request-Id"), headers=headers)


class BadRequestError(LmsApiError):
    """400: the request is not valid; `details` (and `str(error)`) say which field or parameter, and why."""


class UnauthorizedError(LmsApiError):
    """401: no token, or one the API does not accept (`WWW-Authenticate` says why; `body.claims` after a claims challenge)."""


class ForbiddenError(LmsApiError):
    """403: the caller's roles do not allow it."""


class NotFoundError(LmsApiError):
    """404: no such resource in the caller's tenant."""


class ConflictError(LmsApiError):
    """409: it conflicts with the resource's state (`body.active_job_id` for a RAG rebuild while another runs)."""


class PreconditionFailedError(LmsApiError):
    """412: `if_match` named a version that is no longer the current one: read it again, and decide."""


class ThrottledError(LmsApiError):
    """429, once the retries are spent or its `Retry-After` is longer than `max_retry_delay`: come back after `retry_after` seconds."""


class UnsafeLinkError(LmsApiError):
    """
    A list answer whose `Link: <...>; rel="next"` names another origin than the base URL's, or a
    page already read: the client sends its token nowhere else, and does not page in a circle.
    """

    def __init__(self, link: str, reason: str, status: int, headers: Message) -> None:
        message = f"The answer's Link names {link}, {reason}: the client does not follow it."
        super().__init__(status, "Unsafe Link", message, request_id=headers.get("X-Request-Id"), headers=headers)
        #: Where the `Link` pointed, resolved against the page's URL.
        self.link = link


ERRORS_BY_STATUS: Dict[int, Type[LmsApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    412: PreconditionFailedError,
    429: ThrottledError,
}


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
