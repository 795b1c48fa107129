"""Verifying a delivery as the Standard Webhooks specification says (https://www.standardwebhooks.com/)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import Mapping, Optional, Union, cast

from ._fields import Fields, parse

SECRET_PREFIX = "whsec_"
#: How far a delivery's `webhook-timestamp` may be from now, either way, in seconds: older ones may be replays.
DEFAULT_TOLERANCE = 300.0


class WebhookVerificationError(ValueError):
    """A delivery that is not from the API, has been changed, or is too old or too far ahead."""


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> Fields:
    """
    The event a delivery carries, `{"type", "timestamp", "data"}` (as Fields: `event.data.due_date`),
    once its signature is checked; raises WebhookVerificationError otherwise.

    `headers` are the request's (any mapping; names in any case), `body` its raw bytes as received,
    before any JSON parsing: a re-serialised body no longer matches its signature. Any one of the
    space-separated signatures may match: after a rotation the API signs with the old and the new
    secret for 24 hours. `now` (Unix seconds) is for checking a delivery recorded earlier.
    """
    named = {name.lower(): value for name, value in headers.items()}
    message_id = named.get("webhook-id")
    timestamp = named.get("webhook-timestamp")
    signatures = named.get("webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("The delivery lacks webhook-id, webhook-timestamp or webhook-signature.")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError(f"webhook-timestamp is not Unix seconds: {timestamp!r}.") from None
    if abs((time.time() if now is None else now) - sent_at) > tolerance:
        raise WebhookVerificationError(f"webhook-timestamp {sent_at} is more than {tolerance:g} s from now.")

    payload = body.encode("utf-8") if isinstance(body, str) else body
    expected = base64.b64encode(hmac.new(_key(secret), b"%s.%d.%s" % (message_id.encode("utf-8"), sent_at, payload), hashlib.sha256).digest())
    for signature in signatures.split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value.encode("ascii", "replace"), expected):
            return cast(Fields, parse(payload))
    raise WebhookVerificationError("No signature of the delivery matches the secret.")


def _key(secret: str) -> bytes:
    encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise ValueError("The secret is not `whsec_` and base64, as the API gives it.") from None
