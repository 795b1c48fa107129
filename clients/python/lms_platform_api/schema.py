"""
The types of the LMS Platform API 1.0.0, generated from openapi.json by
tools/python-types.ts: `npm run openapi` writes this file. Do not edit it.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, Optional, TypedDict

#: The version of the API this package describes: the document's `info.version`, and the package's.
API_VERSION = "1.0.0"

EventType = Literal["project.created", "project.updated", "project.deleted", "task.created", "task.updated", "task.deleted", "rag.job.succeeded", "rag.job.failed", "webhook.ping"]
PingEventType = Literal["webhook.ping"]
ProjectStatus = Literal["Planning", "Active", "OnHold", "Completed", "Archived"]
ProjectDeletedEventType = Literal["project.deleted"]
ProjectEventType = Literal["project.created", "project.updated"]
RagJobStatus = Literal["Queued", "Running", "Succeeded", "Failed", "Cancelled"]
RagJobMode = Literal["incremental", "full"]
RagJobEventType = Literal["rag.job.succeeded", "rag.job.failed"]
TaskStatus = Literal["Todo", "InProgress", "Blocked", "Done"]
TaskPriority = Literal["Low", "Medium", "High", "Urgent"]
TaskDeletedEventType = Literal["task.deleted"]
TaskEventType = Literal["task.created", "task.updated"]
UserRole = Literal["LMS.Reader", "LMS.Member", "LMS.Manager", "LMS.Admin"]
WebhookDeliveryStatus = Literal["Pending", "Succeeded", "Failed"]
CreateWebhookRequestEvent = Literal["project.created", "project.updated", "project.deleted", "task.created", "task.updated", "task.deleted", "rag.job.succeeded", "rag.job.failed"]
EventsListSort = Literal["timestamp", "-timestamp"]
ProjectsListSort = Literal["createdAt", "-createdAt", "name", "-name"]
TasksListSort = Literal["createdAt", "-createdAt", "dueDate", "-dueDate", "priority", "-priority"]
UsersListSource = Literal["recorded", "directory"]
DocsFilesGetFile = Literal["swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png", "start.js"]


class ErrorDetail(TypedDict):
    path: str
    message: str


class _ErrorRequired(TypedDict):
    error: str
    message: str
    status: int


class Error(_ErrorRequired, total=False):
    requestId: str
    details: list[ErrorDetail]
    #: A 401 of On-Behalf-Of's `interactionRequired`: the claims challenge to sign the user in again with
    claims: str
    #: The 409 of `POST /api/rag/index` (`ragJobActive`): the tenant's active RAG job
    activeJobId: str


class Event(TypedDict):
    type: EventType
    #: ISO 8601 UTC timestamp with milliseconds
    timestamp: str
    data: dict[str, Any]
    #: The `webhook-id` every delivery of this event carries: the key to de-duplicate on
    id: str


class EventListItem(TypedDict):
    type: EventType
    #: ISO 8601 UTC timestamp with milliseconds
    timestamp: str
    data: dict[str, Any]
    #: The `webhook-id` every delivery of this event carries: the key to de-duplicate on
    id: str
    #: The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first
    etag: str


class OpenApiDocumentInfo(TypedDict):
    title: str
    version: str


class OpenApiDocument(TypedDict):
    openapi: str
    info: OpenApiDocumentInfo
    paths: dict[str, Any]


class PingEvent(TypedDict):
    #: The event's type
    type: PingEventType
    #: When the change was made
    timestamp: str
    data: Webhook


class Project(TypedDict):
    id: str
    name: str
    description: str
    status: ProjectStatus
    owner: str
    members: list[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: The creator's Entra object id (oid)
    createdBy: str


class ProjectDeletedEventData(TypedDict):
    id: str
    #: Tasks the delete removed with the project; they send no task.deleted
    deletedTasks: int


class ProjectDeletedEvent(TypedDict):
    #: The event's type
    type: ProjectDeletedEventType
    #: When the change was made
    timestamp: str
    data: ProjectDeletedEventData


class ProjectEvent(TypedDict):
    #: The event's type
    type: ProjectEventType
    #: When the change was made
    timestamp: str
    data: Project


class ProjectListItem(TypedDict):
    id: str
    name: str
    description: str
    status: ProjectStatus
    owner: str
    members: list[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: The creator's Entra object id (oid)
    createdBy: str
    #: The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first
    etag: str


class RagJobProgress(TypedDict):
    #: Projects and tasks found in scope so far
    sources: int
    #: Batches planned so far (at most 500 sources each)
    batches: int
    #: Batches that have ended
    batchesDone: int


class RagJobCounts(TypedDict):
    #: Projects and tasks the tenant's whole index holds after the job, whatever its scope
    sources: int
    #: Chunks the tenant's whole index holds after the job, whatever its scope
    chunks: int
    #: Chunks written by the job, in its scope
    written: int
    #: Chunks of its scope left as they were
    unchanged: int
    #: Chunks removed because their source is gone
    deleted: int


class RagJob(TypedDict):
    jobId: str
    status: RagJobStatus
    mode: RagJobMode
    projectIds: Optional[list[str]]
    #: ISO 8601 UTC timestamp with milliseconds
    requestedAt: str
    #: The requester's Entra object id (oid)
    requestedBy: str
    startedAt: Optional[str]
    completedAt: Optional[str]
    #: While Running: how far the job has come; afterwards, how it ended
    progress: Optional[RagJobProgress]
    #: When a cancel was asked for; the job is Cancelled once the batches under way end
    cancelRequestedAt: Optional[str]
    counts: Optional[RagJobCounts]
    error: Optional[str]


class RagJobEvent(TypedDict):
    #: The event's type
    type: RagJobEventType
    #: When the change was made
    timestamp: str
    data: RagJob


class RagJobListItemProgress(TypedDict):
    #: Projects and tasks found in scope so far
    sources: int
    #: Batches planned so far (at most 500 sources each)
    batches: int
    #: Batches that have ended
    batchesDone: int


class RagJobListItemCounts(TypedDict):
    #: Projects and tasks the tenant's whole index holds after the job, whatever its scope
    sources: int
    #: Chunks the tenant's whole index holds after the job, whatever its scope
    chunks: int
    #: Chunks written by the job, in its scope
    written: int
    #: Chunks of its scope left as they were
    unchanged: int
    #: Chunks removed because their source is gone
    deleted: int


class RagJobListItem(TypedDict):
    jobId: str
    status: RagJobStatus
    mode: RagJobMode
    projectIds: Optional[list[str]]
    #: ISO 8601 UTC timestamp with milliseconds
    requestedAt: str
    #: The requester's Entra object id (oid)
    requestedBy: str
    startedAt: Optional[str]
    completedAt: Optional[str]
    #: While Running: how far the job has come; afterwards, how it ended
    progress: Optional[RagJobListItemProgress]
    #: When a cancel was asked for; the job is Cancelled once the batches under way end
    cancelRequestedAt: Optional[str]
    counts: Optional[RagJobListItemCounts]
    error: Optional[str]
    #: The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first
    etag: str


class Task(TypedDict):
    id: str
    projectId: str
    title: str
    description: str
    status: TaskStatus
    priority: TaskPriority
    assignee: Optional[str]
    dueDate: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: The creator's Entra object id (oid)
    createdBy: str


class TaskDeletedEventData(TypedDict):
    id: str
    projectId: str


class TaskDeletedEvent(TypedDict):
    #: The event's type
    type: TaskDeletedEventType
    #: When the change was made
    timestamp: str
    data: TaskDeletedEventData


class TaskEvent(TypedDict):
    #: The event's type
    type: TaskEventType
    #: When the change was made
    timestamp: str
    data: Task


class TaskListItem(TypedDict):
    id: str
    projectId: str
    title: str
    description: str
    status: TaskStatus
    priority: TaskPriority
    assignee: Optional[str]
    dueDate: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: The creator's Entra object id (oid)
    createdBy: str
    #: The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first
    etag: str


class User(TypedDict):
    #: The user's Entra object id (oid)
    id: str
    email: Optional[str]
    displayName: Optional[str]
    roles: list[UserRole]
    #: When the user first called the API (null for directory users)
    createdAt: Optional[str]
    #: Refreshed at most every 15 minutes (null for directory users)
    lastSeenAt: Optional[str]


class Webhook(TypedDict):
    id: str
    url: str
    events: list[EventType]
    description: str
    active: bool
    #: Why the API turned the subscription off, while `active` is false because of it
    disabledReason: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str


class WebhookDelivery(TypedDict):
    id: str
    #: The `webhook-id` every attempt of this delivery carries
    eventId: str
    type: EventType
    status: WebhookDeliveryStatus
    attempts: int
    lastStatusCode: Optional[int]
    lastError: Optional[str]
    nextAttemptAt: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str


class WebhookListItem(TypedDict):
    id: str
    url: str
    events: list[EventType]
    description: str
    active: bool
    #: Why the API turned the subscription off, while `active` is false because of it
    disabledReason: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: The ETag a read of this resource answers now: send it in If-Match to change this version, without reading it first
    etag: str


class WebhookWithSecret(TypedDict):
    id: str
    url: str
    events: list[EventType]
    description: str
    active: bool
    #: Why the API turned the subscription off, while `active` is false because of it
    disabledReason: Optional[str]
    #: ISO 8601 UTC timestamp with milliseconds
    createdAt: str
    #: ISO 8601 UTC timestamp with milliseconds
    updatedAt: str
    #: `whsec_` and the base64 of 32 random bytes: the key of the HMAC-SHA256 signatures. Shown only here. After a rotation, the secrets of the last 24 hours keep signing beside it (every delivery carries a signature for each).
    secret: str


class _CreateProjectRequestRequired(TypedDict):
    name: str


class CreateProjectRequest(_CreateProjectRequestRequired, total=False):
    description: str
    owner: str
    members: list[str]


class _CreateTaskRequestRequired(TypedDict):
    projectId: str
    title: str


class CreateTaskRequest(_CreateTaskRequestRequired, total=False):
    description: str
    status: TaskStatus
    priority: TaskPriority
    assignee: Optional[str]
    dueDate: Optional[str]


class _CreateWebhookRequestRequired(TypedDict):
    url: str


class CreateWebhookRequest(_CreateWebhookRequestRequired, total=False):
    events: list[CreateWebhookRequestEvent]
    description: str


class StartRagIndexRequest(TypedDict, total=False):
    mode: RagJobMode
    projectIds: list[str]


class UpdateProjectRequest(TypedDict, total=False):
    name: str
    description: str
    owner: str
    members: list[str]
    status: ProjectStatus


class UpdateTaskRequest(TypedDict, total=False):
    title: str
    description: str
    status: TaskStatus
    priority: TaskPriority
    assignee: Optional[str]
    dueDate: Optional[str]


class UpdateWebhookRequest(TypedDict, total=False):
    url: str
    events: list[CreateWebhookRequestEvent]
    description: str
    active: bool


class Operation(NamedTuple):
    method: str
    #: The path template below the base URL, with `{name}` for each path parameter.
    path: str
    #: Whether the operation honours `Idempotency-Key`, which makes it safe to retry.
    idempotency_key: bool


#: Every operation of the document, by operation id.
OPERATIONS: dict[str, Operation] = {
    "eventsList": Operation("GET", "/events", False),
    "eventsGet": Operation("GET", "/events/{eventId}", False),
    "projectsList": Operation("GET", "/projects", False),
    "projectsCreate": Operation("POST", "/projects", True),
    "projectsGet": Operation("GET", "/projects/{projectId}", False),
    "projectsUpdate": Operation("PUT", "/projects/{projectId}", False),
    "projectsDelete": Operation("DELETE", "/projects/{projectId}", False),
    "tasksList": Operation("GET", "/tasks", False),
    "tasksCreate": Operation("POST", "/tasks", True),
    "tasksGet": Operation("GET", "/tasks/{taskId}", False),
    "tasksUpdate": Operation("PUT", "/tasks/{taskId}", False),
    "tasksDelete": Operation("DELETE", "/tasks/{taskId}", False),
    "usersList": Operation("GET", "/users", False),
    "usersMe": Operation("GET", "/users/me", False),
    "ragIndexStart": Operation("POST", "/rag/index", True),
    "ragJobsList": Operation("GET", "/rag/jobs", False),
    "ragJobsGet": Operation("GET", "/rag/jobs/{jobId}", False),
    "ragJobsCancel": Operation("POST", "/rag/jobs/{jobId}/cancel", False),
    "webhooksList": Operation("GET", "/webhooks", False),
    "webhooksCreate": Operation("POST", "/webhooks", True),
    "webhooksGet": Operation("GET", "/webhooks/{webhookId}", False),
    "webhooksUpdate": Operation("PUT", "/webhooks/{webhookId}", False),
    "webhooksDelete": Operation("DELETE", "/webhooks/{webhookId}", False),
    "webhookDeliveriesList": Operation("GET", "/webhooks/{webhookId}/deliveries", False),
    "webhookDeliveriesRetry": Operation("POST", "/webhooks/{webhookId}/deliveries/{deliveryId}/retry", False),
    "webhooksPing": Operation("POST", "/webhooks/{webhookId}/ping", False),
    "webhooksRotateSecret": Operation("POST", "/webhooks/{webhookId}/rotate-secret", False),
    "docsGet": Operation("GET", "/docs", False),
    "docsFilesGet": Operation("GET", "/docs/{file}", False),
    "openapiGet": Operation("GET", "/openapi.json", False),
}
