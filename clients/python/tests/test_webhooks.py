"""verify_webhook: the Standard Webhooks check, on the specification's own example and on real deliveries from the API."""

from __future__ import annotations

import json
import unittest
from typing import List, Optional

from lms_platform_api import WebhookVerificationError, verify_webhook

from .support import Received, TestServer, client, unique_email, wait_for

# The example of the Standard Webhooks libraries, whose JavaScript one (`standardwebhooks`) gives this signature.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HEADERS = {"webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp": "1614265330", "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="}
BODY = b'{"test": 2432232314}'
SENT = 1614265330


class VerifyTest(unittest.TestCase):
    def test_the_specification_example_verifies_and_gives_the_event(self) -> None:
        self.assertEqual(verify_webhook(SECRET, HEADERS, BODY, now=SENT), {"test": 2432232314})
        self.assertEqual(verify_webhook(SECRET, {name.upper(): value for name, value in HEADERS.items()}, BODY.decode(), now=SENT), {"test": 2432232314})

    def test_one_matching_signature_among_several_is_enough(self) -> None:
        rotated = {**HEADERS, "webhook-signature": "v1,bm90IHRoaXMgb25l " + HEADERS["webhook-signature"]}
        self.assertEqual(verify_webhook(SECRET, rotated, BODY, now=SENT), {"test": 2432232314})

    def test_a_change_to_the_body_id_time_or_secret_is_refused(self) -> None:
        for headers, body, secret in [
            (HEADERS, b'{"test": 2432232315}', SECRET),
            ({**HEADERS, "webhook-id": "msg_other"}, BODY, SECRET),
            ({**HEADERS, "webhook-timestamp": str(SENT + 1)}, BODY, SECRET),
            ({**HEADERS, "webhook-signature": "v2," + HEADERS["webhook-signature"][3:]}, BODY, SECRET),
            (HEADERS, BODY, "whsec_" + "A" * 44),
            ({name: value for name, value in HEADERS.items() if name != "webhook-signature"}, BODY, SECRET),
        ]:
            with self.subTest(headers=headers, body=body, secret=secret), self.assertRaises(WebhookVerificationError):
                verify_webhook(secret, headers, body, now=SENT + 1)

    def test_a_delivery_more_than_five_minutes_from_now_either_way_is_refused(self) -> None:
        self.assertTrue(verify_webhook(SECRET, HEADERS, BODY, now=SENT + 300))
        self.assertTrue(verify_webhook(SECRET, HEADERS, BODY, now=SENT - 300))
        for now in (SENT + 301, SENT - 301):
            with self.subTest(now=now), self.assertRaises(WebhookVerificationError):
                verify_webhook(SECRET, HEADERS, BODY, now=now)
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(SECRET, HEADERS, BODY)


class DeliveryTest(unittest.TestCase):
    def test_a_real_delivery_verifies_and_a_tampered_one_is_refused_and_a_rotation_signs_with_both_secrets(self) -> None:
        receiver = TestServer(lambda _index, _request: ("answer", 204, {}, b""))
        self.addCleanup(receiver.close)
        lms = client()
        subscription = lms.webhooks.create(url=f"{receiver.url}/hook", events=["project.created"], description="Python client test")
        self.addCleanup(lms.webhooks.delete, subscription["id"])

        project = lms.projects.create(name="Python delivery", owner=unique_email("python-hook"))
        # A deadline for a loaded machine, where the shared stack's queue may be slow: this is no speed test.
        delivery = wait_for(lambda: _about(receiver.received, project["id"]), timeout=120, what="the project.created delivery")
        event = verify_webhook(subscription["secret"], delivery.headers, delivery.body)
        self.assertEqual((event["type"], event["data"]), ("project.created", dict(project)))

        tampered = delivery.body.replace(b"Python delivery", b"Python forgery")
        self.assertNotEqual(tampered, delivery.body)
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(subscription["secret"], delivery.headers, tampered)

        rotated = lms.webhooks.rotate_secret(subscription["id"])
        self.assertNotEqual(rotated["secret"], subscription["secret"])
        ping = lms.webhooks.ping(subscription["id"])
        signed_twice = wait_for(lambda: _of_type(receiver.received, "webhook.ping"), timeout=120, what="the ping")
        self.assertEqual(signed_twice.headers["webhook-id"], ping["eventId"])
        self.assertEqual(len(signed_twice.headers["webhook-signature"].split()), 2)
        for secret in (subscription["secret"], rotated["secret"]):
            self.assertEqual(verify_webhook(secret, signed_twice.headers, signed_twice.body)["type"], "webhook.ping")

        self.assertIn(ping["id"], [listed["id"] for listed in lms.webhooks.deliveries.list(subscription["id"])])


def _about(received: List[Received], project_id: str) -> Optional[Received]:
    return next((request for request in received if json.loads(request.body)["data"].get("id") == project_id), None)


def _of_type(received: List[Received], event_type: str) -> Optional[Received]:
    return next((request for request in received if json.loads(request.body)["type"] == event_type), None)
