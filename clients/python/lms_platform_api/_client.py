from __future__ import annotations

from typing import Mapping, Optional

from ._resources import Docs, Events, Projects, Rag, Tasks, Users, Webhooks
from ._transport import TokenProvider, Transport


class LmsClient:
    """
    The LMS Platform API.

    `base_url` is the API's, `/api` included: `https://<app>.azurewebsites.net/api`, or
    `http://localhost:7071/api` with `npm start`; the token is sent to its origin alone. `token` is
    an access token, or a callable returning one, called before each request. `headers` go with
    every request: `{"Accept-Language": "ja"}` for messages in Japanese. `timeout` (seconds) bounds
    each attempt's connection and each read. What the API did not act on, or may safely act on
    again, is retried up to `max_retries` times, waiting as `Retry-After` says (never longer than
    `max_retry_delay` seconds). `with_options` gives the same client with other settings, for a call
    or a few.
    """

    def __init__(
        self,
        base_url: str,
        token: TokenProvider,
        *,
        headers: Optional[Mapping[str, str]] = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_delay: float = 30.0,
    ) -> None:
        self._settings = (base_url, token, dict(headers or {}), timeout, max_retries, max_retry_delay)
        transport = Transport(base_url, token, headers=headers, timeout=timeout, max_retries=max_retries, max_retry_delay=max_retry_delay)
        self.projects = Projects(transport)
        self.tasks = Tasks(transport)
        self.users = Users(transport)
        self.rag = Rag(transport)
        self.webhooks = Webhooks(transport)
        self.events = Events(transport)
        self.docs = Docs(transport)

    def with_options(
        self,
        *,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        max_retry_delay: Optional[float] = None,
    ) -> LmsClient:
        """This client with the settings given changed (`headers` are added to its own): `lms.with_options(timeout=5).users.me()`."""
        base_url, token, own_headers, own_timeout, own_max_retries, own_max_retry_delay = self._settings
        return LmsClient(
            base_url,
            token,
            headers={**own_headers, **(headers or {})},
            timeout=own_timeout if timeout is None else timeout,
            max_retries=own_max_retries if max_retries is None else max_retries,
            max_retry_delay=own_max_retry_delay if max_retry_delay is None else max_retry_delay,
        )
