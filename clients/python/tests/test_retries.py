"""
Retries against real HTTP: a server of the test's own between the client and the API answers 503
or 429, or drops the connection, on cue, and forwards the rest to the API.
"""

from __future__ import annotations

import unittest
import urllib.error
from typing import Any, Dict, List, Optional, Tuple

from lms_platform_api import LmsApiError, LmsClient

from .support import Plan, TestServer, api_origin, client, unique_email

FORWARD: Tuple[str, int, Dict[str, str], bytes] = ("forward", 0, {}, b"")
UNAVAILABLE = b'{"error":"Service Unavailable","message":"Busy, try again.","status":503}'


def first_then_forward(first: Tuple[str, int, Dict[str, str], bytes]) -> Plan:
    return lambda index, _request: first if index == 0 else FORWARD


class RetriesTest(unittest.TestCase):
    def proxy(self, plan: Plan, **options: Any) -> Tuple[TestServer, LmsClient]:
        server = TestServer(plan, forward_to=api_origin())
        self.addCleanup(server.close)
        return server, client(base_url=f"{server.url}/api", **options)

    def keys(self, server: TestServer) -> List[Optional[str]]:
        return [request.headers.get("Idempotency-Key") for request in server.received]

    def test_a_503_answered_once_is_retried_after_the_wait_retry_after_asks(self) -> None:
        answer = ("answer", 503, {"Retry-After": "1", "Content-Type": "application/json"}, UNAVAILABLE)
        server, lms = self.proxy(first_then_forward(answer))
        owner = unique_email("python-503")
        created = lms.projects.create(name="After a 503", owner=owner)
        self.assertEqual(created["name"], "After a 503")
        self.assertEqual(len(server.received), 2)
        first, second = server.received
        self.assertGreaterEqual(second.at - first.at, 1.0)
        self.assertEqual(len(set(self.keys(server))), 1)
        self.assertTrue(self.keys(server)[0])
        self.assertEqual([project["id"] for project in client().projects.list(owner=owner)], [created["id"]])

    def test_a_create_whose_answer_is_lost_is_sent_again_with_the_same_key_and_creates_one_project(self) -> None:
        server, lms = self.proxy(first_then_forward(("drop", 0, {}, b"")))
        owner = unique_email("python-lost")
        created = lms.projects.create(name="Answer lost once", owner=owner)
        self.assertEqual(created.headers.get("Idempotent-Replayed"), "true")
        self.assertEqual(len(server.received), 2)
        self.assertEqual(len(set(self.keys(server))), 1)
        self.assertEqual([project["id"] for project in client().projects.list(owner=owner)], [created["id"]])

    def test_a_key_given_by_the_caller_is_the_one_sent(self) -> None:
        server, lms = self.proxy(lambda _index, _request: FORWARD)
        owner = unique_email("python-key")
        first = lms.projects.create(name="Keyed", owner=owner, idempotency_key=f"python-{owner}")
        again = lms.projects.create(name="Keyed", owner=owner, idempotency_key=f"python-{owner}")
        self.assertEqual(self.keys(server), [f"python-{owner}", f"python-{owner}"])
        self.assertEqual((again["id"], again.headers.get("Idempotent-Replayed")), (first["id"], "true"))

    def test_a_429_is_retried_and_a_read_whose_connection_drops_is_sent_again(self) -> None:
        owner = unique_email("python-429")
        project = client().projects.create(name="Read twice", owner=owner)
        server, lms = self.proxy(first_then_forward(("answer", 429, {"Retry-After": "0"}, b"")))
        self.assertEqual(lms.projects.get(project["id"])["id"], project["id"])
        self.assertEqual(len(server.received), 2)
        server, lms = self.proxy(first_then_forward(("cut", 0, {}, b"")))
        self.assertEqual(lms.projects.get(project["id"])["id"], project["id"])
        self.assertEqual(len(server.received), 2)

    def test_retries_are_bounded(self) -> None:
        server, lms = self.proxy(lambda _index, _request: ("answer", 503, {"Retry-After": "0", "Content-Type": "application/json"}, UNAVAILABLE), max_retries=2)
        with self.assertRaises(LmsApiError) as unavailable:
            lms.users.me()
        self.assertEqual((unavailable.exception.status, unavailable.exception.message), (503, "Busy, try again."))
        self.assertEqual(len(server.received), 3)

    def test_a_wait_longer_than_max_retry_delay_is_not_made(self) -> None:
        server, lms = self.proxy(lambda _index, _request: ("answer", 503, {"Retry-After": "120"}, b""), max_retry_delay=5)
        with self.assertRaises(LmsApiError) as unavailable:
            lms.users.me()
        self.assertEqual((unavailable.exception.status, unavailable.exception.retry_after), (503, 120.0))
        self.assertEqual(len(server.received), 1)

    def test_other_errors_are_never_retried(self) -> None:
        server, lms = self.proxy(lambda _index, _request: ("answer", 500, {}, b"<html>Oops</html>"))
        with self.assertRaises(LmsApiError) as failed:
            lms.users.me()
        self.assertEqual((failed.exception.status, failed.exception.error, failed.exception.message), (500, "Internal Server Error", "<html>Oops</html>"))
        self.assertEqual(len(server.received), 1)

        server, lms = self.proxy(lambda _index, _request: FORWARD)
        with self.assertRaises(LmsApiError) as refused:
            lms.projects.create(name="")
        self.assertEqual(refused.exception.status, 400)
        self.assertEqual(len(server.received), 1)

    def test_a_post_without_an_idempotency_key_is_not_sent_again_after_a_lost_answer(self) -> None:
        server, lms = self.proxy(lambda _index, _request: ("cut", 0, {}, b""))
        with self.assertRaises((ConnectionError, urllib.error.URLError)):
            lms.rag.jobs.cancel("5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b")
        self.assertEqual([(request.method, request.headers.get("Idempotency-Key")) for request in server.received], [("POST", None)])


