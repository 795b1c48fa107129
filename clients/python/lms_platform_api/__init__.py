"""
A client for the LMS Platform API, on the standard library alone.

    from lms_platform_api import LmsClient, LmsApiError, verify_webhook

    lms = LmsClient("https://<app>.azurewebsites.net/api", token=get_token)
    project = lms.projects.create(name="Onboarding 2027")
    for active in lms.projects.list(status="Active"):
        print(active.id, active.created_at)
"""

from ._client import LmsClient
from ._errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    LmsApiError,
    NotFoundError,
    PreconditionFailedError,
    ThrottledError,
    UnauthorizedError,
    UnsafeLinkError,
)
from ._fields import Fields
from ._resources import OMITTED, Pager, Resource
from ._webhooks import WebhookVerificationError, verify_webhook
from .schema import API_VERSION, Event

__version__ = API_VERSION
__all__ = [
    "API_VERSION",
    "OMITTED",
    "BadRequestError",
    "ConflictError",
    "Event",
    "Fields",
    "ForbiddenError",
    "LmsApiError",
    "LmsClient",
    "NotFoundError",
    "Pager",
    "PreconditionFailedError",
    "Resource",
    "ThrottledError",
    "UnauthorizedError",
    "UnsafeLinkError",
    "WebhookVerificationError",
    "verify_webhook",
]
