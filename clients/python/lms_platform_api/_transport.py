"""
Sending one operation: the URL from the operation table, the token, the headers, and the retries.

The token goes to the base URL's origin alone: every URL is built from it, a `Link` is followed only
there (the Pager checks), and no redirect is followed (a 3xx is an error answer).

Retries follow one rule: repeat only what the API cannot have done twice. A 429 means the API did
not act, and a request that could not be sent (connection refused or reset while sending, a connect
timeout) cannot have been acted on: both are retried for every request. A 503 (which a proxy may
answer after the API acted) and a request that was sent but got no answer (the connection dropped, a
read timeout) are retried only when repeating is harmless: GET, PUT, DELETE, and the POSTs that
carry an `Idempotency-Key` (the creates, and the start of a RAG rebuild). Waits follow
`Retry-After`, else grow from half a second; a wait longer than `max_retry_delay` is not made, and
the answer is returned as it is. Each retry and its wait is logged (`logging`, logger
`lms_platform_api`, level INFO).
"""

from __future__ import annotations

import http.client
import json
import logging
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from email.message import Message
from typing import Any, Callable, Mapping, NamedTuple, Optional, Union

from ._errors import LmsApiError, retry_after_seconds
from ._fields import parse
from .schema import API_VERSION, OPERATIONS, Operation

#: A token, or a callable returning one before each request (MSAL's `acquire_token_*`, azure-identity's `get_token`).
TokenProvider = Union[str, Callable[[], str]]

REPEATABLE_METHODS = ("GET", "HEAD", "PUT", "DELETE")
logger = logging.getLogger("lms_platform_api")


class Answer(NamedTuple):
    status: int
    #: Read case-insensitively: `answer.headers.get("etag")`.
    headers: Message
    body: bytes
    #: Where the request went: a relative `Link` is resolved against it.
    url: str

    def json(self) -> Any:
        """The body, its objects as Fields."""
        return parse(self.body)


class _NotSent(Exception):
    """The request could not be sent whole, so the API cannot have acted on it."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Transport:
    # Made by LmsClient only, which holds the documented defaults.
    def __init__(
        self,
        base_url: str,
        token: TokenProvider,
        *,
        headers: Optional[Mapping[str, str]],
        timeout: float,
        max_retries: int,
        max_retry_delay: float,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an absolute http(s) URL, with /api: not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        #: The only origin the token is sent to.
        self.origin = origin(self.base_url)
        self.token = token
        self.headers = {"Accept": "application/json", "User-Agent": f"lms-platform-api-python/{API_VERSION}", **(headers or {})}
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self._opener = urllib.request.build_opener(_NoRedirects)

    def call(
        self,
        operation_id: str,
        *,
        path: Optional[Mapping[str, str]] = None,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        headers: Optional[Mapping[str, Optional[str]]] = None,
        url: Optional[str] = None,
        accept_not_modified: bool = False,
    ) -> Answer:
        """Sends an operation and returns its answer; raises LmsApiError for one that is not 2xx."""
        operation = OPERATIONS[operation_id]
        # A `url` is a Link the Pager has checked: on the base URL's origin.
        target = url or self._url(operation, path or {}, query or {})
        request_headers = {**self.headers, **{name: value for name, value in (headers or {}).items() if value is not None}}
        if operation.idempotency_key and not _has_header(request_headers, "Idempotency-Key"):
            request_headers["Idempotency-Key"] = str(uuid.uuid4())
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            request_headers["Content-Type"] = "application/json"
        repeatable = operation.method in REPEATABLE_METHODS or _has_header(request_headers, "Idempotency-Key")
        answer = self._send_with_retries(operation.method, target, data, request_headers, repeatable)
        if 200 <= answer.status < 300 or (answer.status == 304 and accept_not_modified):
            return answer
        reason = http.client.responses.get(answer.status, "Error")
        raise LmsApiError.from_answer(answer.status, reason, answer.headers, answer.body)

    def _url(self, operation: Operation, path: Mapping[str, str], query: Mapping[str, Any]) -> str:
        route = operation.path
        for name, value in path.items():
            route = route.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
        given = {name: _query_value(value) for name, value in query.items() if value is not None}
        return self.base_url + route + ("?" + urllib.parse.urlencode(given) if given else "")

    def _send_with_retries(self, method: str, url: str, data: Optional[bytes], headers: dict[str, str], repeatable: bool) -> Answer:
        attempt = 0
        while True:
            try:
                answer = self._send(method, url, data, headers)
            except _NotSent as failure:
                if attempt >= self.max_retries:
                    raise failure.cause from None
                self._wait(method, url, attempt, self._backoff(attempt), f"not sent ({failure.cause})")
            except (ConnectionError, TimeoutError, socket.timeout, http.client.IncompleteRead) as failure:
                if not repeatable or attempt >= self.max_retries:
                    raise
                self._wait(method, url, attempt, self._backoff(attempt), f"no answer ({failure!r})")
            else:
                retried = answer.status == 429 or (answer.status == 503 and repeatable)
                if not retried or attempt >= self.max_retries:
                    return answer
                asked = retry_after_seconds(answer.headers.get("Retry-After"))
                delay = self._backoff(attempt) if asked is None else asked
                if delay > self.max_retry_delay:
                    return answer
                self._wait(method, url, attempt, delay, f"{answer.status} {http.client.responses.get(answer.status, '')}".strip())
            attempt += 1

    def _wait(self, method: str, url: str, attempt: int, delay: float, why: str) -> None:
        """Logs the retry to come, then waits for it."""
        logger.info("%s %s: %s; retry %d of %d in %.2f s", method, url.split("?", 1)[0], why, attempt + 1, self.max_retries, delay)
        time.sleep(delay)

    def _send(self, method: str, url: str, data: Optional[bytes], headers: dict[str, str]) -> Answer:
        headers = dict(headers)
        headers["Authorization"] = f"Bearer {self.token if isinstance(self.token, str) else self.token()}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return Answer(response.status, response.headers, response.read(), url)
        except urllib.error.HTTPError as error:
            with error:
                return Answer(error.code, error.headers, error.read(), url)
        except urllib.error.URLError as error:
            # urllib raises URLError for what failed while connecting and sending, and the error
            # itself for what failed after: the answer's wait and read.
            if isinstance(error.reason, (ConnectionError, TimeoutError, socket.timeout)):
                raise _NotSent(error) from error
            raise

    def _backoff(self, attempt: int) -> float:
        """Half a second, then doubling, each with jitter so that many clients do not retry in step."""
        return min(self.max_retry_delay, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """The API never redirects; a redirect from something in between is handed back as an answer, not followed with the token or the body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def origin(url: str) -> tuple[str, str, int]:
    """A URL's scheme, host and port (the scheme's own when not given): where a token may go."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return (scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme, 0))


def _has_header(headers: Mapping[str, str], name: str) -> bool:
    return any(given.lower() == name.lower() for given in headers)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
