using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Lms.Platform.Api.Tests.Support;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>
/// Every operation of openapi.json is reachable from the client: each has a method here, which is
/// called against a server of the test's own that records the request, and checked for its method,
/// path, token and header parameters. A new operation without a method fails the first test.
/// </summary>
public sealed class OperationsTests
{
    private const string AProjectId = "PRJ-1001";
    private const string TaskId = "TSK-1001";
    private const string JobId = "5b0e8f3a-9c2d-4e1f-8a7b-6c5d4e3f2a1b";
    private const string WebhookId = "WHK-1001";
    private const string DeliveryId = "dlv_1";
    private const string EventId = "msg_0123456789abcdef0123456789abcdef";
    private const string ETag = "\"an-etag\"";

    /// <summary>For each operation, a call of its method that passes every header parameter the operation takes.</summary>
    private static readonly Dictionary<string, Func<LmsClient, Task>> Calls = new()
    {
        ["projectsList"] = (lms) => lms.Projects.ListAsync(new() { Status = ProjectStatus.Active, Limit = 10 }).ToListAsync(),
        ["projectsCreate"] = (lms) => lms.Projects.CreateAsync(new() { Name = "Walked" }),
        ["projectsGet"] = (lms) => lms.Projects.GetIfChangedAsync(AProjectId, ETag),
        ["projectsUpdate"] = (lms) => lms.Projects.UpdateAsync(AProjectId, new() { Status = ProjectStatus.OnHold }, ETag),
        ["projectsDelete"] = (lms) => lms.Projects.DeleteAsync(AProjectId, ETag),
        ["tasksList"] = (lms) => lms.Tasks.ListAsync(new() { ProjectId = AProjectId }).ToListAsync(),
        ["tasksCreate"] = (lms) => lms.Tasks.CreateAsync(new() { ProjectId = AProjectId, Title = "Walked" }),
        ["tasksGet"] = (lms) => lms.Tasks.GetIfChangedAsync(TaskId, ETag),
        ["tasksUpdate"] = (lms) => lms.Tasks.UpdateAsync(TaskId, new() { Status = LmsTaskStatus.Done }, ETag),
        ["tasksDelete"] = (lms) => lms.Tasks.DeleteAsync(TaskId, ETag),
        ["usersList"] = (lms) => lms.Users.ListAsync(new() { Source = UsersListSource.Directory }).ToListAsync(),
        ["usersMe"] = (lms) => lms.Users.MeIfChangedAsync(ETag),
        ["ragIndexStart"] = (lms) => lms.Rag.RebuildAsync(new() { Mode = RagJobMode.Full }),
        ["ragJobsList"] = (lms) => lms.Rag.Jobs.ListAsync().ToListAsync(),
        ["ragJobsGet"] = (lms) => lms.Rag.Jobs.GetIfChangedAsync(JobId, ETag),
        ["ragJobsCancel"] = (lms) => lms.Rag.Jobs.CancelAsync(JobId),
        ["webhooksList"] = (lms) => lms.Webhooks.ListAsync().ToListAsync(),
        ["webhooksCreate"] = (lms) => lms.Webhooks.CreateAsync(new() { Url = "https://example.test/hook" }),
        ["webhooksGet"] = (lms) => lms.Webhooks.GetIfChangedAsync(WebhookId, ETag),
        ["webhooksUpdate"] = (lms) => lms.Webhooks.UpdateAsync(WebhookId, new() { Active = true }, ETag),
        ["webhooksDelete"] = (lms) => lms.Webhooks.DeleteAsync(WebhookId, ETag),
        ["webhookDeliveriesList"] = (lms) => lms.Webhooks.Deliveries.ListAsync(WebhookId).ToListAsync(),
        ["webhookDeliveriesRetry"] = (lms) => lms.Webhooks.Deliveries.RetryAsync(WebhookId, DeliveryId),
        ["webhooksPing"] = (lms) => lms.Webhooks.PingAsync(WebhookId),
        ["webhooksRotateSecret"] = (lms) => lms.Webhooks.RotateSecretAsync(WebhookId),
        ["eventsList"] = (lms) => lms.Events.ListAsync(new() { Type = EventType.ProjectCreated, Since = DateTimeOffset.UtcNow.AddHours(-1) }).ToListAsync(),
        ["eventsGet"] = (lms) => lms.Events.GetIfChangedAsync(EventId, ETag),
        ["docsGet"] = (lms) => lms.Docs.PageAsync(),
        ["docsFilesGet"] = (lms) => lms.Docs.FileAsync(DocsFilesGetFile.SwaggerUiCss),
        ["openapiGet"] = (lms) => lms.Docs.OpenApiIfChangedAsync(ETag),
    };

    [Fact]
    public void Every_operation_of_the_document_has_a_method()
    {
        var documented = Document.Operations.Select((operation) => operation.Id).ToHashSet();
        Assert.Empty(documented.Except(Calls.Keys).Order());
        Assert.Empty(Calls.Keys.Except(documented).Order());
    }

    [Fact]
    public async Task Each_method_sends_its_operation_with_the_token_and_its_header_parameters()
    {
        // Every request is answered 404, which each method must throw as LmsNotFoundException.
        await using var recorder = new TestServer((_, _) => Plan.Error(404, "Not Found"));
        using var lms = new LmsClient(new Uri($"{recorder.Url}/api"), "walk", new LmsClientOptions { MaxRetries = 0 });
        foreach (var operation in Document.Operations.Where((operation) => Calls.ContainsKey(operation.Id)))
        {
            var before = recorder.Received.Count;
            var thrown = await Assert.ThrowsAsync<LmsNotFoundException>(() => Calls[operation.Id](lms));
            Assert.Equal(404, thrown.Status);
            var sent = Assert.Single(recorder.Received.Skip(before));
            Assert.True(operation.Matches(sent.Method, sent.Path), $"{operation.Id}: sent {sent.Method} {sent.Path}, not {operation.Method} {operation.Template}");
            Assert.Equal("Bearer walk", sent.Header("Authorization"));
            foreach (var header in operation.Headers) Assert.False(sent.Header(header) is null, $"{operation.Id}: sent no {header}");
        }
    }

    [Fact]
    public async Task Every_operation_succeeds_against_the_api_and_reads_into_its_records()
    {
        await using var proxy = new TestServer((_, _) => new Plan.Forward(), Stack.ApiOrigin);
        await using var receiver = new TestServer((_, _) => Plan.Empty(204));
        using var lms = Stack.Client(baseUrl: new Uri($"{proxy.Url}/api"));
        var since = DateTimeOffset.UtcNow.AddMinutes(-1);

        var project = await lms.Projects.CreateAsync(new() { Name = "Every operation", Owner = Stack.UniqueEmail("dotnet-walk"), Members = ["ann@contoso.test"] });
        Assert.Contains("ann@contoso.test", project.Value.Members);
        var read = await lms.Projects.GetAsync(project.Value.Id);
        Assert.Null(await lms.Projects.GetIfChangedAsync(project.Value.Id, read.ETag!));
        var renamed = await lms.Projects.UpdateAsync(project.Value.Id, new() { Name = "Every operation, renamed" }, read.ETag);
        Assert.Single(await lms.Projects.ListAsync(new() { Owner = project.Value.Owner }).ToListAsync());

        var task = await lms.Tasks.CreateAsync(new() { ProjectId = project.Value.Id, Title = "Walk", DueDate = "2027-03-01" });
        Assert.Null(await lms.Tasks.GetIfChangedAsync(task.Value.Id, (await lms.Tasks.GetAsync(task.Value.Id)).ETag!));
        await lms.Tasks.UpdateAsync(task.Value.Id, new() { DueDate = null });
        Assert.Null(Assert.Single(await lms.Tasks.ListAsync(new() { ProjectId = project.Value.Id }).ToListAsync()).DueDate);
        await lms.Tasks.DeleteAsync(task.Value.Id);

        var me = await lms.Users.MeAsync();
        Assert.Null(await lms.Users.MeIfChangedAsync(me.ETag!));
        Assert.NotEmpty((await lms.Users.ListAsync(new() { Limit = 5 }).AsPages().FirstAsync()).Items);
        await lms.Users.ListAsync(new() { Source = UsersListSource.Directory, Limit = 5 }).AsPages().FirstAsync();

        var webhook = await lms.Webhooks.CreateAsync(new() { Url = $"{receiver.Url}/hook", Events = [EventType.ProjectUpdated], Description = "C# walk" });
        Assert.StartsWith("whsec_", webhook.Value.Secret, StringComparison.Ordinal);
        var subscription = await lms.Webhooks.GetAsync(webhook.Value.Id);
        Assert.Null(await lms.Webhooks.GetIfChangedAsync(webhook.Value.Id, subscription.ETag!));
        await lms.Webhooks.UpdateAsync(webhook.Value.Id, new() { Description = "C# walk, changed" }, subscription.ETag);
        Assert.Contains(webhook.Value.Id, (await lms.Webhooks.ListAsync().ToListAsync()).Select((listed) => listed.Id));
        var ping = await lms.Webhooks.PingAsync(webhook.Value.Id);
        Assert.Equal(EventType.WebhookPing, ping.Value.Type);
        Assert.Contains(ping.Value.Id, (await lms.Webhooks.Deliveries.ListAsync(webhook.Value.Id).ToListAsync()).Select((delivery) => delivery.Id));
        await lms.Webhooks.Deliveries.RetryAsync(webhook.Value.Id, ping.Value.Id);
        var rotated = await lms.Webhooks.RotateSecretAsync(webhook.Value.Id);
        Assert.NotEqual(webhook.Value.Secret, rotated.Value.Secret);
        await lms.Webhooks.DeleteAsync(webhook.Value.Id);

        var created = Assert.Single(await lms.Events.ListAsync(new() { Type = EventType.ProjectCreated, Since = since, Limit = 200 }).ToListAsync(), (listed) => listed.Data.GetProperty("id").GetString() == project.Value.Id);
        var one = await lms.Events.GetAsync(created.Id);
        Assert.Equal(created.Id, one.Value.Id);
        Assert.Null(await lms.Events.GetIfChangedAsync(created.Id, one.ETag!));

        var job = await ClientTests.Rebuild(lms, new() { Mode = RagJobMode.Incremental, ProjectIds = [project.Value.Id] });
        try
        {
            await lms.Rag.Jobs.CancelAsync(job.Value.JobId);
        }
        catch (LmsConflictException)
        {
            // It ended first: a finished job cannot be cancelled.
        }
        using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        var ended = await lms.Rag.Jobs.WaitAsync(job.Value.JobId, TimeSpan.FromMilliseconds(200), deadline.Token);
        Assert.Null(await lms.Rag.Jobs.GetIfChangedAsync(job.Value.JobId, ended.ETag!));
        Assert.Contains(job.Value.JobId, (await lms.Rag.Jobs.ListAsync(new() { Limit = 50 }).AsPages().FirstAsync()).Items.Select((listed) => listed.JobId));

        Assert.Contains("<html", (await lms.Docs.PageAsync()).Value, StringComparison.OrdinalIgnoreCase);
        Assert.NotEmpty((await lms.Docs.FileAsync(DocsFilesGetFile.SwaggerUiCss)).Value);
        var description = await lms.Docs.OpenApiAsync();
        Assert.Equal(LmsClient.ApiVersion, description.Value.Info.Version);
        Assert.Null(await lms.Docs.OpenApiIfChangedAsync(description.ETag!));

        await lms.Projects.DeleteAsync(project.Value.Id, renamed.ETag);

        var sent = proxy.Received.Select((request) => Document.Operations.Single((operation) => operation.Matches(request.Method, request.Path)).Id).ToHashSet();
        Assert.Empty(Document.Operations.Select((operation) => operation.Id).Except(sent).Order());
    }
}

