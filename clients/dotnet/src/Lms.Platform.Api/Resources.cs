using System;
using System.Collections.Generic;
using System.Text;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api;

/// <summary>Projects. Every method is one operation of the API (its id in the summary's first words).</summary>
public sealed class ProjectsResource
{
    private readonly Pipeline _pipeline;

    internal ProjectsResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>projectsList: the projects, filtered and sorted as <paramref name="query"/> says, every page followed lazily.</summary>
    /// <param name="query">Filters, sort and page size; null for all projects, newest first.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<ProjectListItem> ListAsync(ProjectsListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.ProjectsList, null, query?.Parameters(), LmsJsonContext.Default.ListProjectListItem, cancellationToken);

    /// <summary>projectsCreate: a new project, <c>Active</c>. The <c>Idempotency-Key</c> is made when not given, so a retry creates nothing twice.</summary>
    /// <param name="project">Its name, and optionally its description, owner and members.</param>
    /// <param name="idempotencyKey">A key of your own, to repeat the create safely across runs.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Project>> CreateAsync(CreateProjectRequest project, string? idempotencyKey = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.ProjectsCreate, null, Calls.Json(project, LmsJsonContext.Default.CreateProjectRequest), LmsJsonContext.Default.Project, cancellationToken, ("Idempotency-Key", idempotencyKey));

    /// <summary>projectsGet: one project.</summary>
    /// <param name="projectId">Its id, <c>PRJ-1001</c>.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Project>> GetAsync(string projectId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.ProjectsGet, Calls.Path("projectId", projectId), null, LmsJsonContext.Default.Project, cancellationToken);

    /// <summary>projectsGet with <c>If-None-Match</c>: the project, or null while it still has that ETag.</summary>
    /// <param name="projectId">Its id.</param>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Project>?> GetIfChangedAsync(string projectId, string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.ProjectsGet, Calls.Path("projectId", projectId), ifNoneMatch, LmsJsonContext.Default.Project, cancellationToken);

    /// <summary>projectsUpdate: changes the fields given, the others stay. With <paramref name="ifMatch"/>, only if nobody changed it since (<see cref="LmsPreconditionFailedException"/> otherwise).</summary>
    /// <param name="projectId">Its id.</param>
    /// <param name="changes">The fields to change.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Project>> UpdateAsync(string projectId, UpdateProjectRequest changes, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.ProjectsUpdate, Calls.Path("projectId", projectId), Calls.Json(changes, LmsJsonContext.Default.UpdateProjectRequest), LmsJsonContext.Default.Project, cancellationToken, ("If-Match", ifMatch));

    /// <summary>projectsDelete: deletes the project and its tasks.</summary>
    /// <param name="projectId">Its id.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse> DeleteAsync(string projectId, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.ProjectsDelete, Calls.Path("projectId", projectId), cancellationToken, ("If-Match", ifMatch));
}

/// <summary>Tasks. Every method is one operation of the API (its id in the summary's first words).</summary>
public sealed class TasksResource
{
    private readonly Pipeline _pipeline;

    internal TasksResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>tasksList: the tasks, filtered and sorted as <paramref name="query"/> says (<c>DueBefore</c> a date, <c>2027-01-15</c>), every page followed lazily.</summary>
    /// <param name="query">Filters, sort and page size; null for all tasks, newest first.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<TaskListItem> ListAsync(TasksListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.TasksList, null, query?.Parameters(), LmsJsonContext.Default.ListTaskListItem, cancellationToken);

    /// <summary>tasksCreate: a new task in a project. The <c>Idempotency-Key</c> is made when not given.</summary>
    /// <param name="task">Its project and title, and optionally the rest (<c>DueDate</c> a date, <c>2027-01-15</c>).</param>
    /// <param name="idempotencyKey">A key of your own, to repeat the create safely across runs.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<LmsTask>> CreateAsync(CreateTaskRequest task, string? idempotencyKey = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.TasksCreate, null, Calls.Json(task, LmsJsonContext.Default.CreateTaskRequest), LmsJsonContext.Default.LmsTask, cancellationToken, ("Idempotency-Key", idempotencyKey));

    /// <summary>tasksGet: one task.</summary>
    /// <param name="taskId">Its id, <c>TSK-1001</c>.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<LmsTask>> GetAsync(string taskId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.TasksGet, Calls.Path("taskId", taskId), null, LmsJsonContext.Default.LmsTask, cancellationToken);

    /// <summary>tasksGet with <c>If-None-Match</c>: the task, or null while it still has that ETag.</summary>
    /// <param name="taskId">Its id.</param>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<LmsTask>?> GetIfChangedAsync(string taskId, string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.TasksGet, Calls.Path("taskId", taskId), ifNoneMatch, LmsJsonContext.Default.LmsTask, cancellationToken);

    /// <summary>tasksUpdate: changes the fields given (<c>Assignee = null</c> or <c>DueDate = null</c> clears them).</summary>
    /// <param name="taskId">Its id.</param>
    /// <param name="changes">The fields to change.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<LmsTask>> UpdateAsync(string taskId, UpdateTaskRequest changes, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.TasksUpdate, Calls.Path("taskId", taskId), Calls.Json(changes, LmsJsonContext.Default.UpdateTaskRequest), LmsJsonContext.Default.LmsTask, cancellationToken, ("If-Match", ifMatch));

    /// <summary>tasksDelete.</summary>
    /// <param name="taskId">Its id.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse> DeleteAsync(string taskId, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.TasksDelete, Calls.Path("taskId", taskId), cancellationToken, ("If-Match", ifMatch));
}

/// <summary>The tenant's users. Every method is one operation of the API.</summary>
public sealed class UsersResource
{
    private readonly Pipeline _pipeline;

    internal UsersResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>usersList: the tenant's users who have called the API, or with <c>Source = UsersListSource.Directory</c> its directory (Microsoft Graph).</summary>
    /// <param name="query">Filters and page size.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<User> ListAsync(UsersListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.UsersList, null, query?.Parameters(), LmsJsonContext.Default.ListUser, cancellationToken);

    /// <summary>usersMe: the caller.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<User>> MeAsync(CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.UsersMe, null, null, LmsJsonContext.Default.User, cancellationToken);

    /// <summary>usersMe with <c>If-None-Match</c>: the caller, or null while the record still has that ETag.</summary>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<User>?> MeIfChangedAsync(string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.UsersMe, null, ifNoneMatch, LmsJsonContext.Default.User, cancellationToken);
}

/// <summary>The RAG index. Every method is one operation of the API.</summary>
public sealed class RagResource
{
    private readonly Pipeline _pipeline;

    internal RagResource(Pipeline pipeline)
    {
        _pipeline = pipeline;
        Jobs = new RagJobsResource(pipeline);
    }

    /// <summary>The rebuilds' jobs.</summary>
    public RagJobsResource Jobs { get; }

    /// <summary>
    /// ragIndexStart: starts a rebuild of the index (<c>incremental</c> unless <paramref name="request"/> says <c>full</c>);
    /// <see cref="RagJobsResource.WaitAsync"/> follows it. The <c>Idempotency-Key</c> is made when not given, so a retry starts no second job.
    /// </summary>
    /// <param name="request">The mode and the projects in scope; null for an incremental rebuild of everything.</param>
    /// <param name="idempotencyKey">A key of your own.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<RagJob>> RebuildAsync(StartRagIndexRequest? request = null, string? idempotencyKey = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.RagIndexStart, null, Calls.Json(request ?? new StartRagIndexRequest(), LmsJsonContext.Default.StartRagIndexRequest), LmsJsonContext.Default.RagJob, cancellationToken, ("Idempotency-Key", idempotencyKey));
}

/// <summary>The RAG index's jobs. Every method but <see cref="WaitAsync"/> is one operation of the API.</summary>
public sealed class RagJobsResource
{
    private static readonly TimeSpan DefaultPollInterval = TimeSpan.FromSeconds(1);
    private readonly Pipeline _pipeline;

    internal RagJobsResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>ragJobsList: the tenant's jobs, newest first.</summary>
    /// <param name="query">The page size.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<RagJobListItem> ListAsync(RagJobsListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.RagJobsList, null, query?.Parameters(), LmsJsonContext.Default.ListRagJobListItem, cancellationToken);

    /// <summary>ragJobsGet: one job, with its progress.</summary>
    /// <param name="jobId">Its id.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<RagJob>> GetAsync(string jobId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.RagJobsGet, Calls.Path("jobId", jobId), null, LmsJsonContext.Default.RagJob, cancellationToken);

    /// <summary>ragJobsGet with <c>If-None-Match</c>: the job, or null while it still has that ETag.</summary>
    /// <param name="jobId">Its id.</param>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<RagJob>?> GetIfChangedAsync(string jobId, string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.RagJobsGet, Calls.Path("jobId", jobId), ifNoneMatch, LmsJsonContext.Default.RagJob, cancellationToken);

    /// <summary>ragJobsCancel: asks the job to stop; it is <c>Cancelled</c> once the batches under way end (<see cref="LmsConflictException"/> when it has ended).</summary>
    /// <param name="jobId">Its id.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<RagJob>> CancelAsync(string jobId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.RagJobsCancel, Calls.Path("jobId", jobId), null, LmsJsonContext.Default.RagJob, cancellationToken);

    /// <summary>The job once it has ended (<c>Succeeded</c>, <c>Failed</c> or <c>Cancelled</c>), read every <paramref name="pollInterval"/>; bound the wait with <paramref name="cancellationToken"/>.</summary>
    /// <param name="jobId">Its id.</param>
    /// <param name="pollInterval">How often to read it (1 s by default).</param>
    /// <param name="cancellationToken">Stops waiting: <c>new CancellationTokenSource(TimeSpan.FromMinutes(10)).Token</c>.</param>
    public async Task<LmsResponse<RagJob>> WaitAsync(string jobId, TimeSpan? pollInterval = null, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            var job = await GetAsync(jobId, cancellationToken).ConfigureAwait(false);
            if (job.Value.Status == RagJobStatus.Succeeded || job.Value.Status == RagJobStatus.Failed || job.Value.Status == RagJobStatus.Cancelled) return job;
            await Task.Delay(pollInterval ?? DefaultPollInterval, cancellationToken).ConfigureAwait(false);
        }
    }
}

/// <summary>Webhook subscriptions. Every method is one operation of the API.</summary>
public sealed class WebhooksResource
{
    private readonly Pipeline _pipeline;

    internal WebhooksResource(Pipeline pipeline)
    {
        _pipeline = pipeline;
        Deliveries = new WebhookDeliveriesResource(pipeline);
    }

    /// <summary>A subscription's deliveries.</summary>
    public WebhookDeliveriesResource Deliveries { get; }

    /// <summary>webhooksList: the tenant's subscriptions.</summary>
    /// <param name="query">The page size.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<WebhookListItem> ListAsync(WebhooksListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.WebhooksList, null, query?.Parameters(), LmsJsonContext.Default.ListWebhookListItem, cancellationToken);

    /// <summary>webhooksCreate: a subscription (every event but the ping when <c>Events</c> is null); its <c>Secret</c> is shown only here.</summary>
    /// <param name="webhook">Its URL, events and description.</param>
    /// <param name="idempotencyKey">A key of your own.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<WebhookWithSecret>> CreateAsync(CreateWebhookRequest webhook, string? idempotencyKey = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksCreate, null, Calls.Json(webhook, LmsJsonContext.Default.CreateWebhookRequest), LmsJsonContext.Default.WebhookWithSecret, cancellationToken, ("Idempotency-Key", idempotencyKey));

    /// <summary>webhooksGet: one subscription.</summary>
    /// <param name="webhookId">Its id, <c>WHK-1001</c>.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Webhook>> GetAsync(string webhookId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksGet, Calls.Path("webhookId", webhookId), null, LmsJsonContext.Default.Webhook, cancellationToken);

    /// <summary>webhooksGet with <c>If-None-Match</c>: the subscription, or null while it still has that ETag.</summary>
    /// <param name="webhookId">Its id.</param>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Webhook>?> GetIfChangedAsync(string webhookId, string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.WebhooksGet, Calls.Path("webhookId", webhookId), ifNoneMatch, LmsJsonContext.Default.Webhook, cancellationToken);

    /// <summary>webhooksUpdate: changes the fields given; <c>Active = true</c> turns back on a subscription the API turned off.</summary>
    /// <param name="webhookId">Its id.</param>
    /// <param name="changes">The fields to change.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Webhook>> UpdateAsync(string webhookId, UpdateWebhookRequest changes, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksUpdate, Calls.Path("webhookId", webhookId), Calls.Json(changes, LmsJsonContext.Default.UpdateWebhookRequest), LmsJsonContext.Default.Webhook, cancellationToken, ("If-Match", ifMatch));

    /// <summary>webhooksDelete.</summary>
    /// <param name="webhookId">Its id.</param>
    /// <param name="ifMatch">The ETag of the version you read.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse> DeleteAsync(string webhookId, string? ifMatch = null, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksDelete, Calls.Path("webhookId", webhookId), cancellationToken, ("If-Match", ifMatch));

    /// <summary>webhooksPing: sends a <c>webhook.ping</c> to this subscription alone. Not retried unless provably not done (it has no idempotency key).</summary>
    /// <param name="webhookId">Its id.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<WebhookDelivery>> PingAsync(string webhookId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksPing, Calls.Path("webhookId", webhookId), null, LmsJsonContext.Default.WebhookDelivery, cancellationToken);

    /// <summary>webhooksRotateSecret: a new secret; the old one keeps signing beside it for 24 hours. Not retried unless provably not done.</summary>
    /// <param name="webhookId">Its id.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<WebhookWithSecret>> RotateSecretAsync(string webhookId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhooksRotateSecret, Calls.Path("webhookId", webhookId), null, LmsJsonContext.Default.WebhookWithSecret, cancellationToken);
}

/// <summary>A subscription's deliveries. Every method is one operation of the API.</summary>
public sealed class WebhookDeliveriesResource
{
    private readonly Pipeline _pipeline;

    internal WebhookDeliveriesResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>webhookDeliveriesList: a subscription's deliveries, newest first, with their attempts.</summary>
    /// <param name="webhookId">The subscription's id.</param>
    /// <param name="query">The page size.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<WebhookDelivery> ListAsync(string webhookId, WebhookDeliveriesListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.WebhookDeliveriesList, Calls.Path("webhookId", webhookId), query?.Parameters(), LmsJsonContext.Default.ListWebhookDelivery, cancellationToken);

    /// <summary>webhookDeliveriesRetry: sends a delivery again now.</summary>
    /// <param name="webhookId">The subscription's id.</param>
    /// <param name="deliveryId">The delivery's id.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<WebhookDelivery>> RetryAsync(string webhookId, string deliveryId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.WebhookDeliveriesRetry, Calls.Path("webhookId", webhookId, "deliveryId", deliveryId), null, LmsJsonContext.Default.WebhookDelivery, cancellationToken);
}

/// <summary>The tenant's events. Every method is one operation of the API.</summary>
public sealed class EventsResource
{
    private readonly Pipeline _pipeline;

    internal EventsResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>eventsList: the tenant's events of the last 7 days, newest first; <c>Type</c> one event type, <c>Since</c> a time.</summary>
    /// <param name="query">Filters and page size.</param>
    /// <param name="cancellationToken">Stops the paging.</param>
    public LmsPageable<EventListItem> ListAsync(EventsListQuery? query = null, CancellationToken cancellationToken = default) =>
        Calls.List(_pipeline, Operations.EventsList, null, query?.Parameters(), LmsJsonContext.Default.ListEventListItem, cancellationToken);

    /// <summary>eventsGet: one event, as its webhook body with its id.</summary>
    /// <param name="eventId">Its id, the deliveries' <c>webhook-id</c>.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Event>> GetAsync(string eventId, CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.EventsGet, Calls.Path("eventId", eventId), null, LmsJsonContext.Default.Event, cancellationToken);

    /// <summary>eventsGet with <c>If-None-Match</c>: the event, or null while it still has that ETag.</summary>
    /// <param name="eventId">Its id.</param>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<Event>?> GetIfChangedAsync(string eventId, string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.EventsGet, Calls.Path("eventId", eventId), ifNoneMatch, LmsJsonContext.Default.Event, cancellationToken);
}

/// <summary>The API's own description. Every method is one operation of the API.</summary>
public sealed class DocsResource
{
    private readonly Pipeline _pipeline;

    internal DocsResource(Pipeline pipeline) => _pipeline = pipeline;

    /// <summary>openapiGet: the API's OpenAPI document.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<OpenApiDocument>> OpenApiAsync(CancellationToken cancellationToken = default) =>
        Calls.Send(_pipeline, Operations.OpenapiGet, null, null, LmsJsonContext.Default.OpenApiDocument, cancellationToken);

    /// <summary>openapiGet with <c>If-None-Match</c>: the document, or null while it still has that ETag.</summary>
    /// <param name="ifNoneMatch">The ETag you hold.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public Task<LmsResponse<OpenApiDocument>?> OpenApiIfChangedAsync(string ifNoneMatch, CancellationToken cancellationToken = default) =>
        Calls.ReadIfChanged(_pipeline, Operations.OpenapiGet, null, ifNoneMatch, LmsJsonContext.Default.OpenApiDocument, cancellationToken);

    /// <summary>docsGet: the reference page, HTML.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    public async Task<LmsResponse<string>> PageAsync(CancellationToken cancellationToken = default)
    {
        var answer = await _pipeline.SendAsync(Operations.DocsGet, _pipeline.UrlOf(Operations.DocsGet), null, new[] { Calls.Header("Accept", "text/html") }, cancellationToken).ConfigureAwait(false);
        return new LmsResponse<string>(answer, Encoding.UTF8.GetString(answer.Body));
    }

    /// <summary>docsFilesGet: a file the reference page loads.</summary>
    /// <param name="file">Which one.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    public async Task<LmsResponse<byte[]>> FileAsync(DocsFilesGetFile file, CancellationToken cancellationToken = default)
    {
        var url = _pipeline.UrlOf(Operations.DocsFilesGet, Calls.Path("file", file.ToString()));
        var answer = await _pipeline.SendAsync(Operations.DocsFilesGet, url, null, new[] { Calls.Header("Accept", "*/*") }, cancellationToken).ConfigureAwait(false);
        return new LmsResponse<byte[]>(answer, answer.Body);
    }
}

/// <summary>What every resource's methods share.</summary>
internal static class Calls
{
    public static KeyValuePair<string, string>[] Path(string name, string value) => new[] { Checked(name, value) };

    public static KeyValuePair<string, string>[] Path(string name, string value, string otherName, string otherValue) => new[] { Checked(name, value), Checked(otherName, otherValue) };

    public static KeyValuePair<string, string?> Header(string name, string? value) => new(name, value);

    public static byte[] Json<T>(T value, JsonTypeInfo<T> type) =>
        JsonSerializer.SerializeToUtf8Bytes(value ?? throw new ArgumentNullException(nameof(value)), type);

    public static LmsPageable<T> List<T>(Pipeline pipeline, Operation operation, KeyValuePair<string, string>[]? path, IEnumerable<KeyValuePair<string, string>>? query, JsonTypeInfo<List<T>> type, CancellationToken cancellationToken) =>
        new(pipeline, operation, pipeline.UrlOf(operation, path, query), type, cancellationToken);

    public static async Task<LmsResponse<T>> Send<T>(Pipeline pipeline, Operation operation, KeyValuePair<string, string>[]? path, byte[]? body, JsonTypeInfo<T> type, CancellationToken cancellationToken, params (string Name, string? Value)[] headers)
    {
        var answer = await pipeline.SendAsync(operation, pipeline.UrlOf(operation, path), body, Headers(headers), cancellationToken).ConfigureAwait(false);
        return LmsResponse<T>.Read(answer, type);
    }

    public static async Task<LmsResponse> Send(Pipeline pipeline, Operation operation, KeyValuePair<string, string>[]? path, CancellationToken cancellationToken, params (string Name, string? Value)[] headers)
    {
        var answer = await pipeline.SendAsync(operation, pipeline.UrlOf(operation, path), null, Headers(headers), cancellationToken).ConfigureAwait(false);
        return new LmsResponse(answer);
    }

    public static async Task<LmsResponse<T>?> ReadIfChanged<T>(Pipeline pipeline, Operation operation, KeyValuePair<string, string>[]? path, string ifNoneMatch, JsonTypeInfo<T> type, CancellationToken cancellationToken)
    {
        if (string.IsNullOrEmpty(ifNoneMatch)) throw new ArgumentException("Give the ETag you hold.", nameof(ifNoneMatch));
        var answer = await pipeline.SendAsync(operation, pipeline.UrlOf(operation, path), null, new[] { Header("If-None-Match", ifNoneMatch) }, cancellationToken, acceptNotModified: true).ConfigureAwait(false);
        return answer.Status == 304 ? null : LmsResponse<T>.Read(answer, type);
    }

    private static KeyValuePair<string, string?>[] Headers((string Name, string? Value)[] headers) => Array.ConvertAll(headers, (header) => Header(header.Name, header.Value));

    private static KeyValuePair<string, string> Checked(string name, string value) =>
        string.IsNullOrEmpty(value) ? throw new ArgumentException($"{name} cannot be empty.", name) : new(name, value);
}
