"""
The client against answers meant to steer it: a `Link` or a redirect to another origin, a `Link` it
has followed already, a server that never answers, a 503 after the API may have acted. A second
host records whatever reaches it: the token must never.
"""

from __future__ import annotations

import json
import socket
import time
import unittest
from typing import Any, Callable, Dict, List, Optional, Tuple

from lms_platform_api import LmsApiError, LmsClient, UnsafeLinkError

from .support import Plan, TestServer

TOKEN = "the-token-of-this-test"
JOB = "5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b"
Step = Tuple[str, int, Dict[str, str], bytes]
ENDED: Step = ("answer", 500, {"Content-Type": "application/json"}, b'{"error":"Internal Server Error","message":"Paged too far.","status":500}')
UNAVAILABLE: Step = ("answer", 503, {"Retry-After": "0", "Content-Type": "application/json"}, b'{"error":"Service Unavailable","message":"Busy.","status":503}')
HUNG: Step = ("hang", 0, {}, b"")


def page(items: List[Dict[str, Any]], link: Optional[str] = None) -> Step:
    """A list's page: JSON items, and a `Link` when one is given."""
    headers = {"Content-Type": "application/json", **({"Link": f'<{link}>; rel="next"'} if link else {})}
    return ("answer", 200, headers, json.dumps(items).encode("utf-8"))


class HostileTest(unittest.TestCase):
    def server(self, plan: Plan) -> TestServer:
        server = TestServer(plan)
        self.addCleanup(server.close)
        return server

    def another_host(self) -> TestServer:
        """Another host on loopback, where a hostile `Link` or redirect points: it answers as a last page would."""
        return self.server(lambda _index, _request: page([]))

    def client(self, api: TestServer, **options: Any) -> LmsClient:
        return LmsClient(f"{api.url}/api", token=TOKEN, **options)

    def assertNothingReached(self, other: TestServer) -> None:
        self.assertEqual([(request.method, request.path, request.headers.get("Authorization")) for request in other.received], [])


class LinksTest(HostileTest):
    def test_a_link_to_another_origin_is_refused_and_never_followed(self) -> None:
        cases: Dict[str, Callable[[str, str], str]] = {
            "absolute, to another host": lambda other, _own: f"http://{other}/api/projects?cursor=next",
            "scheme-relative, to another host": lambda other, _own: f"//{other}/api/projects?cursor=next",
            "to the same host and port in another scheme": lambda _other, own: f"https://{own}/api/projects?cursor=next",
        }
        for case, link in cases.items():
            with self.subTest(case):
                other = self.another_host()
                api = self.server(lambda _index, _request: page([{"id": "PRJ-1"}], link(other.host, api.host)))
                with self.assertRaises(UnsafeLinkError) as refused:
                    list(self.client(api).projects.list())
                self.assertIsInstance(refused.exception, LmsApiError)
                self.assertIn("another origin", str(refused.exception))
                self.assertEqual(len(api.received), 1)
                self.assertNothingReached(other)

    def test_a_link_followed_already_ends_paging_with_an_error(self) -> None:
        cases: Dict[str, Tuple[Callable[[str, int], str], int]] = {
            "to the page itself": (lambda _origin, _index: "/api/projects", 1),
            "to the page itself, absolute": (lambda origin, _index: f"{origin}/api/projects", 1),
            "back to the first page from the second": (lambda _origin, index: "projects?cursor=2" if index == 0 else "/api/projects", 2),
        }
        for case, (link, pages_read) in cases.items():
            with self.subTest(case):
                api = self.server(lambda index, _request: ENDED if index > 5 else page([{"id": f"PRJ-{index}"}], link(api.url, index)))
                read: List[str] = []
                with self.assertRaises(UnsafeLinkError) as circling:
                    for project in self.client(api).projects.list():
                        read.append(project["id"])
                self.assertIn("already", str(circling.exception))
                self.assertEqual(len(api.received), pages_read)
                self.assertEqual(read, [f"PRJ-{index}" for index in range(pages_read - 1)])

    def test_a_relative_link_is_followed_against_the_url_of_the_page_that_gave_it(self) -> None:
        links = ["projects?cursor=2", "/api/projects?cursor=3", None]
        api = self.server(lambda index, _request: ENDED if index > 2 else page([{"id": f"PRJ-{index}"}], links[index]))
        self.assertEqual([project["id"] for project in self.client(api).projects.list()], ["PRJ-0", "PRJ-1", "PRJ-2"])
        self.assertEqual(
            [(request.path, request.headers.get("Authorization")) for request in api.received],
            [("/api/projects", f"Bearer {TOKEN}"), ("/api/projects?cursor=2", f"Bearer {TOKEN}"), ("/api/projects?cursor=3", f"Bearer {TOKEN}")],
        )


class RedirectsTest(HostileTest):
    def test_no_redirect_is_followed_a_307_on_a_create_sends_neither_body_nor_token_elsewhere(self) -> None:
        other = self.another_host()
        api = self.server(lambda _index, _request: ("answer", 307, {"Location": f"{other.url}/api/projects"}, b""))
        with self.assertRaises(LmsApiError) as redirected:
            self.client(api).projects.create(name="Redirected")
        self.assertEqual(redirected.exception.status, 307)
        self.assertIn(f"redirect to {other.url}/api/projects", str(redirected.exception))
        self.assertEqual(len(api.received), 1)
        self.assertNothingReached(other)

    def test_no_redirect_is_followed_on_a_post_or_a_get_to_any_origin(self) -> None:
        other = self.another_host()
        cases: Dict[str, Tuple[int, str, Callable[[LmsClient], Any]]] = {
            "a 308 on a rotation, to another host": (308, f"{other.url}/api/x", lambda lms: lms.webhooks.rotate_secret("whk-1")),
            "a 302 on a read, to the same origin": (302, "/api/elsewhere", lambda lms: lms.users.me()),
        }
        for case, (status, location, call) in cases.items():
            with self.subTest(case):
                api = self.server(lambda _index, _request: ("answer", status, {"Location": location}, b""))
                with self.assertRaises(LmsApiError) as redirected:
                    call(self.client(api))
                self.assertEqual(redirected.exception.status, status)
                self.assertIn("redirect", str(redirected.exception))
                self.assertEqual(len(api.received), 1)
        self.assertNothingReached(other)


class TimeoutsAndRetriesTest(HostileTest):
    def test_a_server_that_never_answers_times_out_and_a_post_is_not_sent_again(self) -> None:
        api = self.server(lambda _index, _request: HUNG)
        started = time.monotonic()
        with self.assertRaises((TimeoutError, socket.timeout)):
            self.client(api, timeout=0.3).webhooks.rotate_secret("whk-1")
        self.assertLess(time.monotonic() - started, 25)
        self.assertEqual(len(api.received), 1)

    def test_a_read_is_sent_again_after_its_timeout_a_bounded_number_of_times(self) -> None:
        api = self.server(lambda _index, _request: HUNG)
        with self.assertRaises((TimeoutError, socket.timeout)):
            self.client(api, timeout=0.2, max_retries=1).users.me()
        self.assertEqual(len(api.received), 2)

    def test_with_options_gives_calls_a_timeout_of_their_own(self) -> None:
        api = self.server(lambda _index, _request: HUNG)
        lms = self.client(api)
        started = time.monotonic()
        with self.assertRaises((TimeoutError, socket.timeout)):
            lms.with_options(timeout=0.2).webhooks.ping("whk-1")
        self.assertLess(time.monotonic() - started, 25)
        self.assertEqual(len(api.received), 1)

    def test_a_hung_server_does_not_hold_a_call_forever_by_default(self) -> None:
        api = self.server(lambda _index, _request: HUNG)
        with self.assertRaises((TimeoutError, socket.timeout)):
            self.client(api).webhooks.rotate_secret("whk-1")
        self.assertEqual(len(api.received), 1)

    def test_a_503_on_a_post_the_api_may_have_acted_on_is_not_retried(self) -> None:
        calls: Dict[str, Callable[[LmsClient], Any]] = {
            "webhooks.rotate_secret": lambda lms: lms.webhooks.rotate_secret("whk-1"),
            "webhooks.ping": lambda lms: lms.webhooks.ping("whk-1"),
            "webhooks.deliveries.retry": lambda lms: lms.webhooks.deliveries.retry("whk-1", "dlv-1"),
            "rag.jobs.cancel": lambda lms: lms.rag.jobs.cancel(JOB),
        }
        for method, call in calls.items():
            with self.subTest(method):
                api = self.server(lambda _index, _request: UNAVAILABLE)
                with self.assertRaises(LmsApiError) as unavailable:
                    call(self.client(api))
                self.assertEqual(unavailable.exception.status, 503)
                self.assertEqual([request.method for request in api.received], ["POST"])

    def test_a_429_on_any_post_is_retried_and_logged(self) -> None:
        answers: List[Step] = [("answer", 429, {"Retry-After": "0"}, b""), ("answer", 200, {"Content-Type": "application/json"}, b'{"id":"whk-1"}')]
        api = self.server(lambda index, _request: answers[min(index, 1)])
        with self.assertLogs("lms_platform_api", level="INFO") as logged:
            rotated = self.client(api).webhooks.rotate_secret("whk-1")
        self.assertEqual(rotated["id"], "whk-1")
        self.assertEqual(len(api.received), 2)
        self.assertEqual(len(logged.records), 1)
        message = logged.records[0].getMessage()
        self.assertIn(f"POST {api.url}/api/webhooks/whk-1/rotate-secret", message)
        self.assertIn("429", message)
        self.assertIn("retry 1 of 3", message)
        self.assertNotIn(TOKEN, message)

