"""
What the tests share: the running API they call, tokens from its identity provider, and small
HTTP servers of their own (a proxy that misbehaves on cue, a webhook receiver).

`npm test` runs these tests against the local stack it starts, and gives them through the
environment: LMS_TEST_API_BASE_URL (the API, `/api` included), LMS_TEST_AUTHORITY_HOST (the local
identity provider), LMS_TEST_CA_CERT (the certificate it serves), LMS_TEST_CLIENT_ID, and
LMS_TEST_HOME_TENANT and LMS_TEST_OTHER_TENANT (the two local tenants). Against `npm start`, take
them from .local/identity/provider.json.
"""

from __future__ import annotations

import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

from lms_platform_api import LmsClient

_Result = TypeVar("_Result")
_tokens: Dict[Tuple[str, str], str] = {}
_token_lock = threading.Lock()


def setting(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through `npm test`, or set what tests/support.py names")
    return value


def api_base_url() -> str:
    return setting("LMS_TEST_API_BASE_URL")


def api_origin() -> str:
    """The API's scheme and host, where a proxy of a test's own forwards to."""
    parts = urllib.parse.urlsplit(api_base_url())
    return f"{parts.scheme}://{parts.netloc}"


def token(role: str = "LMS.Admin", tenant: str = "home") -> str:
    """An access token from the local identity provider's token endpoint, as a real client gets one; kept for reuse."""
    tenant_id = setting("LMS_TEST_HOME_TENANT" if tenant == "home" else "LMS_TEST_OTHER_TENANT")
    with _token_lock:
        if (tenant_id, role) not in _tokens:
            client_id = setting("LMS_TEST_CLIENT_ID")
            form = {
                "grant_type": "password",
                "client_id": client_id,
                "username": "python-client@contoso.test",
                "password": "local",
                "scope": f"api://{client_id}/access_as_user",
                "roles": role,
            }
            request = urllib.request.Request(
                f"{setting('LMS_TEST_AUTHORITY_HOST')}/{tenant_id}/oauth2/v2.0/token", data=urllib.parse.urlencode(form).encode("ascii")
            )
            context = ssl.create_default_context(cafile=setting("LMS_TEST_CA_CERT"))
            with urllib.request.urlopen(request, context=context, timeout=30) as answer:
                _tokens[(tenant_id, role)] = json.load(answer)["access_token"]
        return _tokens[(tenant_id, role)]


def client(tenant: str = "home", role: str = "LMS.Admin", base_url: Optional[str] = None, **options: Any) -> LmsClient:
    """A client whose token is a callable, as MSAL's would be."""
    return LmsClient(base_url or api_base_url(), token=lambda: token(role, tenant), **options)


def unique_email(label: str) -> str:
    """An owner no other test uses, so a test can list exactly its own projects."""
    return f"{label}-{uuid.uuid4().hex[:8]}@contoso.test"


def wait_for(condition: Callable[[], Optional[_Result]], timeout: float = 30.0, what: str = "the condition") -> _Result:
    """The first truthy result of `condition`, tried until the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"Waited {timeout} s for {what}")
        time.sleep(0.05)


class Received:
    """One request a test server got."""

    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes, at: float) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.at = at


#: What a test server does with the n-th request (from 0): ("answer", status, headers, body);
#: ("forward", 0, {}, b"") to pass it to the API and send back its answer; ("drop", ...) to pass it
#: and close the connection without answering, as a network failure after the API acted would;
#: ("cut", ...) to close the connection at once; or ("hang", ...) to answer nothing until the server
#: closes, as a server that accepted the request and went quiet.
Plan = Callable[[int, Received], Tuple[str, int, Dict[str, str], bytes]]


class TestServer:
    """A real HTTP server on loopback that records each request and does what `plan` says with it."""

    def __init__(self, plan: Plan, forward_to: Optional[str] = None) -> None:
        self.received: List[Received] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Received(self.command, self.path, dict(self.headers.items()), self.rfile.read(length), time.monotonic())
                with server._lock:
                    index = len(server.received)
                    server.received.append(request)
                action, status, headers, body = plan(index, request)
                if action == "hang":
                    server._closing.wait()
                    return
                if action in ("forward", "drop"):
                    status, headers, body = server._forward(forward_to or "", request)
                if action in ("drop", "cut"):
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def host(self) -> str:
        """`127.0.0.1:<port>`: with its own port, the server is an origin of its own."""
        return urllib.parse.urlsplit(self.url).netloc

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def _forward(base: str, request: Received) -> Tuple[int, Dict[str, str], bytes]:
        """Passes a request to the API as it came (below the proxy's `/api`), and gives back its answer."""
        hop = {"host", "connection", "content-length", "transfer-encoding", "keep-alive"}
        headers = {name: value for name, value in request.headers.items() if name.lower() not in hop}
        outgoing = urllib.request.Request(base + request.path, data=request.body or None, headers=headers, method=request.method)
        try:
            with urllib.request.urlopen(outgoing, timeout=30) as answer:
                return answer.status, _end_to_end(answer.headers.items()), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, _end_to_end(error.headers.items()), error.read()


def _end_to_end(headers: Iterable[Tuple[str, str]]) -> Dict[str, str]:
    hop = {"connection", "content-length", "transfer-encoding", "keep-alive", "date", "server"}
    return {name: value for name, value in headers if name.lower() not in hop}
