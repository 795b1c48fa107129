from __future__ import annotations

from typing import Mapping, Optional

from ._resources import Docs, Events, Projects, Rag, Tasks, Users, Webhooks
from ._transport import TokenProvider, Transport


class LmsClient:
    """
    The LMS Platform API.

    `base_url` is the API's, `/api` included: `https://<app>.azurewebsites.net/api`, or
    `http://localhost:7071/api` with `npm start`. `token` is an access token, or a callable
    returning one, called before each request. `headers` go with every request:
    `{"Accept-Language": "ja"}` for messages in Japanese. 429, 503 and connection failures are
    retried up to `max_retries` times, waiting as `Retry-After` says (never longer than
    `max_retry_delay` seconds); `timeout` bounds each attempt's connection and each read.
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
        transport = Transport(base_url, token, headers=headers, timeout=timeout, max_retries=max_retries, max_retry_delay=max_retry_delay)
        self.projects = Projects(transport)
        self.tasks = Tasks(transport)
        self.users = Users(transport)
        self.rag = Rag(transport)
        self.webhooks = Webhooks(transport)
        self.events = Events(transport)
        self.docs = Docs(transport)
