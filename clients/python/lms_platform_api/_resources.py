"""The API's resources, one class each, every method one operation of the document (its id in the docstring's first words)."""

from __future__ import annotations

import enum
import re
import time
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Generic, Iterator, List, Mapping, Optional, Set, TypeVar, Union, overload

from ._errors import UnsafeLinkError
from ._fields import Fields, api_name
from ._transport import Answer, Transport, origin
from .schema import (
    CreateWebhookRequestEvent,
    Event,
    EventListItem,
    EventsListSort,
    DocsFilesGetFile,
    OpenApiDocument,
    Project,
    ProjectListItem,
    ProjectsListSort,
    ProjectStatus,
    RagJob,
    RagJobListItem,
    RagJobMode,
    Task,
    TaskListItem,
    TaskPriority,
    TasksListSort,
    TaskStatus,
    User,
    UserRole,
    UsersListSource,
    Webhook,
    WebhookListItem,
    WebhookDelivery,
    WebhookWithSecret,
)

_Body = TypeVar("_Body")
_Item = TypeVar("_Item")
_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
RAG_JOB_ENDED = ("Succeeded", "Failed", "Cancelled")


class Omitted(enum.Enum):
    """The default of an update's field that `None` clears: the field is left as it is."""

    OMITTED = "omitted"


#: Leaves a field of an update as it is (where `None` would clear it).
OMITTED = Omitted.OMITTED


class Resource(Fields, Generic[_Body]):
    """
    A resource as the API answered it: its fields as snake-case attributes (`task.due_date`) and as
    a dict under the API's names (`task["dueDate"]`), with the answer's ETag and headers.
    """

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.json() or {})
        #: The version to send back as `if_match` (`None` where the operation answers no ETag).
        self.etag: Optional[str] = answer.headers.get("ETag")
        #: The answer's headers (`Location`, `Idempotent-Replayed`, `X-Request-Id`), read case-insensitively.
        self.headers = answer.headers


class Pager(Generic[_Item]):
    """
    The items of a list (as Fields), fetched a page at a time as iteration reaches them, following
    `Link: <...>; rel="next"` on the base URL's origin: a `Link` to another origin, or to a page
    already read, raises UnsafeLinkError, with the token sent nowhere.
    """

    def __init__(self, transport: Transport, operation_id: str, query: Mapping[str, Any], path: Optional[Mapping[str, str]] = None) -> None:
        self._transport = transport
        self._operation_id = operation_id
        self._query = query
        self._path = path

    def __iter__(self) -> Iterator[_Item]:
        for page in self.pages():
            yield from page

    def pages(self) -> Iterator[List[_Item]]:
        """Each page as a list, until the last."""
        read: Set[str] = set()
        next_url: Optional[str] = None
        while True:
            answer = self._transport.call(self._operation_id, path=self._path, query=self._query, url=next_url)
            read.add(answer.url)
            found = _NEXT_LINK.search(answer.headers.get("Link") or "")
            next_url = urllib.parse.urljoin(answer.url, found.group(1)) if found else None
            if next_url is not None and origin(next_url) != self._transport.origin:
                raise UnsafeLinkError(next_url, f"on another origin than the base URL's ({self._transport.base_url})", answer.status, answer.headers)
            if next_url in read:
                raise UnsafeLinkError(next_url, "a page already read: paging would never end", answer.status, answer.headers)
            yield answer.json()
            if next_url is None:
                return


class _Resource:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport


def _read(transport: Transport, operation_id: str, path: Mapping[str, str], if_none_match: Optional[str]) -> Optional[Resource[Any]]:
    answer = transport.call(operation_id, path=path, headers={"If-None-Match": if_none_match}, accept_not_modified=True)
    return None if answer.status == 304 else Resource(answer)


def _fields(**given: Any) -> dict[str, Any]:
    """A body of the fields given, under the API's names, without those left out (None, or OMITTED where None clears)."""
    return {api_name(name): value for name, value in given.items() if value is not None and value is not OMITTED}


class Projects(_Resource):
    def list(
        self,
        *,
        status: Optional[ProjectStatus] = None,
        owner: Optional[str] = None,
        member: Optional[str] = None,
        q: Optional[str] = None,
        sort: Optional[ProjectsListSort] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[ProjectListItem]:
        """projectsList: the projects, filtered; `limit` is the page size, and every page is followed."""
        query = {"status": status, "owner": owner, "member": member, "q": q, "sort": sort, "limit": limit, "cursor": cursor}
        return Pager(self._transport, "projectsList", query)

    def create(
        self,
        *,
        name: str,
        description: Optional[str] = None,
        owner: Optional[str] = None,
        members: Optional[List[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Resource[Project]:
        """projectsCreate: a new project. The `Idempotency-Key` is generated when not given, so a retry creates nothing twice."""
        body = _fields(name=name, description=description, owner=owner, members=members)
        return Resource(self._transport.call("projectsCreate", body=body, headers={"Idempotency-Key": idempotency_key}))

    @overload
    def get(self, project_id: str) -> Resource[Project]: ...
    @overload
    def get(self, project_id: str, *, if_none_match: Optional[str]) -> Optional[Resource[Project]]: ...
    def get(self, project_id: str, *, if_none_match: Optional[str] = None) -> Optional[Resource[Project]]:
        """projectsGet: one project; with `if_none_match`, None while it still has that ETag."""
        return _read(self._transport, "projectsGet", {"projectId": project_id}, if_none_match)

    def update(
        self,
        project_id: str,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        owner: Optional[str] = None,
        members: Optional[List[str]] = None,
        status: Optional[ProjectStatus] = None,
        if_match: Optional[str] = None,
    ) -> Resource[Project]:
        """projectsUpdate: changes the fields given; with `if_match`, only if nobody changed it since (412 otherwise)."""
        body = _fields(name=name, description=description, owner=owner, members=members, status=status)
        return Resource(self._transport.call("projectsUpdate", path={"projectId": project_id}, body=body, headers={"If-Match": if_match}))

    def delete(self, project_id: str, *, if_match: Optional[str] = None) -> None:
        """projectsDelete: deletes the project and its tasks."""
        self._transport.call("projectsDelete", path={"projectId": project_id}, headers={"If-Match": if_match})


class Tasks(_Resource):
    def list(
        self,
        *,
        project_id: Optional[str] = None,
        status: Optional[TaskStatus] = None,
        assignee: Optional[str] = None,
        due_before: Optional[str] = None,
        sort: Optional[TasksListSort] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[TaskListItem]:
        """tasksList: the tasks, filtered; `due_before` is a date, `2027-01-15`."""
        query = {"projectId": project_id, "status": status, "assignee": assignee, "dueBefore": due_before, "sort": sort, "limit": limit, "cursor": cursor}
        return Pager(self._transport, "tasksList", query)

    def create(
        self,
        *,
        project_id: str,
        title: str,
        description: Optional[str] = None,
        status: Optional[TaskStatus] = None,
        priority: Optional[TaskPriority] = None,
        assignee: Optional[str] = None,
        due_date: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Resource[Task]:
        """tasksCreate: a new task in a project. The `Idempotency-Key` is generated when not given."""
        body = _fields(project_id=project_id, title=title, description=description, status=status, priority=priority, assignee=assignee, due_date=due_date)
        return Resource(self._transport.call("tasksCreate", body=body, headers={"Idempotency-Key": idempotency_key}))

    @overload
    def get(self, task_id: str) -> Resource[Task]: ...
    @overload
    def get(self, task_id: str, *, if_none_match: Optional[str]) -> Optional[Resource[Task]]: ...
    def get(self, task_id: str, *, if_none_match: Optional[str] = None) -> Optional[Resource[Task]]:
        """tasksGet: one task; with `if_none_match`, None while it still has that ETag."""
        return _read(self._transport, "tasksGet", {"taskId": task_id}, if_none_match)

    def update(
        self,
        task_id: str,
        *,
        title: Optional[str] = None,
        description: Optional[str] = None,
        status: Optional[TaskStatus] = None,
        priority: Optional[TaskPriority] = None,
        assignee: Union[str, None, Omitted] = OMITTED,
        due_date: Union[str, None, Omitted] = OMITTED,
        if_match: Optional[str] = None,
    ) -> Resource[Task]:
        """tasksUpdate: changes the fields given; `assignee=None` and `due_date=None` clear them."""
        body = _fields(title=title, description=description, status=status, priority=priority)
        body.update({api_name(name): value for name, value in (("assignee", assignee), ("due_date", due_date)) if value is not OMITTED})
        return Resource(self._transport.call("tasksUpdate", path={"taskId": task_id}, body=body, headers={"If-Match": if_match}))

    def delete(self, task_id: str, *, if_match: Optional[str] = None) -> None:
        """tasksDelete."""
        self._transport.call("tasksDelete", path={"taskId": task_id}, headers={"If-Match": if_match})


class Users(_Resource):
    def list(
        self,
        *,
        q: Optional[str] = None,
        role: Optional[UserRole] = None,
        source: Optional[UsersListSource] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[User]:
        """usersList: the tenant's recorded callers, or with `source="directory"` its directory (Microsoft Graph)."""
        return Pager(self._transport, "usersList", {"q": q, "role": role, "source": source, "limit": limit, "cursor": cursor})

    @overload
    def me(self) -> Resource[User]: ...
    @overload
    def me(self, *, if_none_match: Optional[str]) -> Optional[Resource[User]]: ...
    def me(self, *, if_none_match: Optional[str] = None) -> Optional[Resource[User]]:
        """usersMe: the caller; with `if_none_match`, None while its record still has that ETag."""
        return _read(self._transport, "usersMe", {}, if_none_match)


class RagJobs(_Resource):
    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Pager[RagJobListItem]:
        """ragJobsList: the tenant's index jobs, newest first."""
        return Pager(self._transport, "ragJobsList", {"limit": limit, "cursor": cursor})

    @overload
    def get(self, job_id: str) -> Resource[RagJob]: ...
    @overload
    def get(self, job_id: str, *, if_none_match: Optional[str]) -> Optional[Resource[RagJob]]: ...
    def get(self, job_id: str, *, if_none_match: Optional[str] = None) -> Optional[Resource[RagJob]]:
        """ragJobsGet: one job, with its progress."""
        return _read(self._transport, "ragJobsGet", {"jobId": job_id}, if_none_match)

    def cancel(self, job_id: str) -> Resource[RagJob]:
        """ragJobsCancel: asks the job to stop; it is Cancelled once the batches under way end."""
        return Resource(self._transport.call("ragJobsCancel", path={"jobId": job_id}))

    def wait(self, job_id: str, *, timeout: float = 600.0, interval: float = 1.0) -> Resource[RagJob]:
        """The job once it has ended (Succeeded, Failed or Cancelled), read every `interval` seconds; TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            if job["status"] in RAG_JOB_ENDED:
                return job
            if time.monotonic() + interval > deadline:
                raise TimeoutError(f"RAG job {job_id} is still {job['status']} after {timeout} s")
            time.sleep(interval)


class Rag(_Resource):
    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.jobs = RagJobs(transport)

    def rebuild(
        self,
        *,
        mode: Optional[RagJobMode] = None,
        project_ids: Optional[List[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Resource[RagJob]:
        """ragIndexStart: starts a rebuild of the RAG index (`incremental` by default); `rag.jobs.wait` follows it.
        The `Idempotency-Key` is generated when not given, so a retry starts no second job."""
        body = _fields(mode=mode, project_ids=project_ids)
        return Resource(self._transport.call("ragIndexStart", body=body, headers={"Idempotency-Key": idempotency_key}))


class WebhookDeliveries(_Resource):
    def list(self, webhook_id: str, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Pager[WebhookDelivery]:
        """webhookDeliveriesList: a subscription's deliveries, newest first, with their attempts."""
        return Pager(self._transport, "webhookDeliveriesList", {"limit": limit, "cursor": cursor}, path={"webhookId": webhook_id})

    def retry(self, webhook_id: str, delivery_id: str) -> Resource[WebhookDelivery]:
        """webhookDeliveriesRetry: sends a delivery again now."""
        return Resource(self._transport.call("webhookDeliveriesRetry", path={"webhookId": webhook_id, "deliveryId": delivery_id}))


class Webhooks(_Resource):
    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self.deliveries = WebhookDeliveries(transport)

    def list(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Pager[WebhookListItem]:
        """webhooksList: the tenant's subscriptions."""
        return Pager(self._transport, "webhooksList", {"limit": limit, "cursor": cursor})

    def create(
        self,
        *,
        url: str,
        events: Optional[List[CreateWebhookRequestEvent]] = None,
        description: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Resource[WebhookWithSecret]:
        """webhooksCreate: a subscription (every event but the ping when `events` is not given); its `secret` is shown only here."""
        body = _fields(url=url, events=events, description=description)
        return Resource(self._transport.call("webhooksCreate", body=body, headers={"Idempotency-Key": idempotency_key}))

    @overload
    def get(self, webhook_id: str) -> Resource[Webhook]: ...
    @overload
    def get(self, webhook_id: str, *, if_none_match: Optional[str]) -> Optional[Resource[Webhook]]: ...
    def get(self, webhook_id: str, *, if_none_match: Optional[str] = None) -> Optional[Resource[Webhook]]:
        """webhooksGet: one subscription."""
        return _read(self._transport, "webhooksGet", {"webhookId": webhook_id}, if_none_match)

    def update(
        self,
        webhook_id: str,
        *,
        url: Optional[str] = None,
        events: Optional[List[CreateWebhookRequestEvent]] = None,
        description: Optional[str] = None,
        active: Optional[bool] = None,
        if_match: Optional[str] = None,
    ) -> Resource[Webhook]:
        """webhooksUpdate: changes the fields given; `active=True` switches a subscription the API turned off back on."""
        body = _fields(url=url, events=events, description=description, active=active)
        return Resource(self._transport.call("webhooksUpdate", path={"webhookId": webhook_id}, body=body, headers={"If-Match": if_match}))

    def delete(self, webhook_id: str, *, if_match: Optional[str] = None) -> None:
        """webhooksDelete."""
        self._transport.call("webhooksDelete", path={"webhookId": webhook_id}, headers={"If-Match": if_match})

    def ping(self, webhook_id: str) -> Resource[WebhookDelivery]:
        """webhooksPing: sends a `webhook.ping` to this subscription alone."""
        return Resource(self._transport.call("webhooksPing", path={"webhookId": webhook_id}))

    def rotate_secret(self, webhook_id: str) -> Resource[WebhookWithSecret]:
        """webhooksRotateSecret: a new secret; the old one keeps signing beside it for 24 hours."""
        return Resource(self._transport.call("webhooksRotateSecret", path={"webhookId": webhook_id}))


class Events(_Resource):
    def list(
        self,
        *,
        type: Optional[CreateWebhookRequestEvent] = None,
        since: Union[datetime, str, None] = None,
        sort: Optional[EventsListSort] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Pager[EventListItem]:
        """eventsList: the tenant's events of the last 7 days, newest first, or oldest first with `sort="timestamp"` (to catch up
        after downtime); `type` one event type, `since` a time (an aware datetime or ISO 8601)."""
        return Pager(self._transport, "eventsList", {"type": type, "since": _iso_time(since), "sort": sort, "limit": limit, "cursor": cursor})

    @overload
    def get(self, event_id: str) -> Resource[Event]: ...
    @overload
    def get(self, event_id: str, *, if_none_match: Optional[str]) -> Optional[Resource[Event]]: ...
    def get(self, event_id: str, *, if_none_match: Optional[str] = None) -> Optional[Resource[Event]]:
        """eventsGet: one event, as its webhook body with its id."""
        return _read(self._transport, "eventsGet", {"eventId": event_id}, if_none_match)


class Docs(_Resource):
    @overload
    def openapi(self) -> Resource[OpenApiDocument]: ...
    @overload
    def openapi(self, *, if_none_match: Optional[str]) -> Optional[Resource[OpenApiDocument]]: ...
    def openapi(self, *, if_none_match: Optional[str] = None) -> Optional[Resource[OpenApiDocument]]:
        """openapiGet: the API's OpenAPI document; with `if_none_match`, None while it still has that ETag."""
        return _read(self._transport, "openapiGet", {}, if_none_match)

    def page(self) -> str:
        """docsGet: the reference page, HTML."""
        return self._transport.call("docsGet", headers={"Accept": "text/html"}).body.decode("utf-8")

    def file(self, file: DocsFilesGetFile) -> bytes:
        """docsFilesGet: a file the reference page loads."""
        return self._transport.call("docsFilesGet", path={"file": file}, headers={"Accept": "*/*"}).body


def _iso_time(value: Union[datetime, str, None]) -> Optional[str]:
    if not isinstance(value, datetime):
        return value
    if value.tzinfo is None:
        raise ValueError("since must be an aware datetime (datetime.now(timezone.utc), say): a naive one names no moment")
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
