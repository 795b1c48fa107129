using System;
using System.Collections.Generic;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using Lms.Platform.Api.Tests.Support;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>The client against the running API: what an integrator does with it.</summary>
public sealed class ClientTests
{
    [Fact]
    public async Task Create_read_update_with_if_match_a_412_a_304_and_delete_then_a_404()
    {
        using var lms = Stack.Client();
        var created = await lms.Projects.CreateAsync(new() { Name = "C# client", Description = "Made by the C# tests", Owner = Stack.UniqueEmail("dotnet-crud") });
        Assert.Equal(201, created.Status);
        Assert.Equal(ProjectStatus.Active, created.Value.Status);
        Assert.NotNull(created.ETag);
        Assert.Equal(new Uri(Stack.ApiBaseUrl, $"api/projects/{created.Value.Id}").AbsolutePath, created.Location!.AbsolutePath);

        Project read = await lms.Projects.GetAsync(created.Value.Id);
        Assert.Equal(created.Value, read);
        Assert.Null(await lms.Projects.GetIfChangedAsync(read.Id, created.ETag!));

        var updated = await lms.Projects.UpdateAsync(read.Id, new() { Status = ProjectStatus.OnHold }, ifMatch: created.ETag);
        Assert.Equal(ProjectStatus.OnHold, updated.Value.Status);
        Assert.NotEqual(created.ETag, updated.ETag);
        Assert.NotNull(await lms.Projects.GetIfChangedAsync(read.Id, created.ETag!));

        var stale = await Assert.ThrowsAsync<LmsPreconditionFailedException>(() => lms.Projects.UpdateAsync(read.Id, new() { Name = "Lost update" }, ifMatch: created.ETag));
        Assert.Equal((412, "Precondition Failed"), (stale.Status, stale.Error));
        Assert.NotNull(stale.RequestId);
        Assert.Contains("412 Precondition Failed", stale.Message, StringComparison.Ordinal);

        var deleted = await lms.Projects.DeleteAsync(read.Id, ifMatch: updated.ETag);
        Assert.Equal(204, deleted.Status);
        var gone = await Assert.ThrowsAsync<LmsNotFoundException>(() => lms.Projects.GetAsync(read.Id));
        Assert.Equal((404, "Not Found"), (gone.Status, gone.Error));
        Assert.IsAssignableFrom<LmsApiException>(gone);
    }

    [Fact]
    public async Task A_list_follows_link_across_several_pages_lazily()
    {
        var owner = Stack.UniqueEmail("dotnet-pages");
        using var lms = Stack.Client();
        var made = new List<string>();
        for (var index = 0; index < 5; index++) made.Add((await lms.Projects.CreateAsync(new() { Name = $"Page item {index}", Owner = owner })).Value.Id);

        await using var proxy = new TestServer((_, _) => new Plan.Forward(), Stack.ApiOrigin);
        using var counted = Stack.Client(baseUrl: new Uri($"{proxy.Url}/api"));
        var query = new ProjectsListQuery { Owner = owner, Limit = 2, Sort = ProjectsListSort.CreatedAt };

        var pages = new List<int>();
        await foreach (var page in counted.Projects.ListAsync(query).AsPages()) pages.Add(page.Items.Count);
        Assert.Equal([2, 2, 1], pages);
        Assert.Equal(3, proxy.Received.Count);

        var read = new List<string>();
        await foreach (var project in counted.Projects.ListAsync(query))
        {
            read.Add(project.Id);
            if (read.Count == 3) break;
        }
        Assert.Equal(made.Take(3), read);
        Assert.Equal(3 + 2, proxy.Received.Count);

        Assert.Equal(made, (await lms.Projects.ListAsync(query).ToListAsync()).Select((project) => project.Id));
    }

    [Fact]
    public async Task Tasks_in_a_project_with_a_due_date_and_an_assignee_that_null_clears()
    {
        using var lms = Stack.Client();
        var project = (await lms.Projects.CreateAsync(new() { Name = "C# tasks", Owner = Stack.UniqueEmail("dotnet-tasks") })).Value;
        var task = await lms.Tasks.CreateAsync(new() { ProjectId = project.Id, Title = "Record the welcome video", Priority = LmsTaskPriority.High, DueDate = "2027-01-15", Assignee = "kim@contoso.test" });
        Assert.Equal((LmsTaskStatus.Todo, LmsTaskPriority.High, "2027-01-15", "kim@contoso.test"), (task.Value.Status, task.Value.Priority, task.Value.DueDate, task.Value.Assignee));

        var kept = await lms.Tasks.UpdateAsync(task.Value.Id, new() { Status = LmsTaskStatus.InProgress }, task.ETag);
        Assert.Equal("kim@contoso.test", kept.Value.Assignee);
        var cleared = await lms.Tasks.UpdateAsync(task.Value.Id, new() { Assignee = null }, kept.ETag);
        Assert.Null(cleared.Value.Assignee);
        Assert.Equal("2027-01-15", cleared.Value.DueDate);

        var listed = await lms.Tasks.ListAsync(new() { ProjectId = project.Id }).ToListAsync();
        Assert.Equal(task.Value.Id, Assert.Single(listed).Id);
        await lms.Tasks.DeleteAsync(task.Value.Id);
        await lms.Projects.DeleteAsync(project.Id);
    }

    [Fact]
    public async Task A_refused_request_says_which_field_and_why_in_its_message()
    {
        using var lms = Stack.Client();
        var refused = await Assert.ThrowsAsync<LmsApiException>(() => lms.Projects.CreateAsync(new() { Name = "   ", Owner = "not an e-mail" }));
        Assert.Equal(400, refused.Status);
        Assert.Contains(refused.Details, (detail) => detail.Path == "owner");
        foreach (var detail in refused.Details) Assert.Contains($"{detail.Path}: {detail.Message}", refused.Message, StringComparison.Ordinal);
        Assert.StartsWith(refused.ApiMessage, refused.Message, StringComparison.Ordinal);
        Assert.Contains(refused.RequestId!, refused.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Default_headers_bring_messages_in_japanese()
    {
        var japanese = new LmsClientOptions();
        japanese.Headers["Accept-Language"] = "ja";
        using var lms = Stack.Client(options: japanese);
        using var english = Stack.Client();
        var inJapanese = await Assert.ThrowsAsync<LmsNotFoundException>(() => lms.Projects.GetAsync("PRJ-999999999"));
        var inEnglish = await Assert.ThrowsAsync<LmsNotFoundException>(() => english.Projects.GetAsync("PRJ-999999999"));
        Assert.Matches(new Regex(@"[\p{IsHiragana}\p{IsKatakana}\p{IsCJKUnifiedIdeographs}]"), inJapanese.ApiMessage);
        Assert.NotEqual(inEnglish.ApiMessage, inJapanese.ApiMessage);
        Assert.Equal("Not Found", inJapanese.Error);
    }

    [Fact]
    public async Task Another_tenant_sees_nothing_of_the_first_and_a_role_without_the_permission_is_refused()
    {
        using var lms = Stack.Client();
        using var other = Stack.Client(otherTenant: true);
        using var reader = Stack.Client(role: "LMS.Reader");
        var project = (await lms.Projects.CreateAsync(new() { Name = "Home tenant only", Owner = Stack.UniqueEmail("dotnet-tenant") })).Value;

        await Assert.ThrowsAsync<LmsNotFoundException>(() => other.Projects.GetAsync(project.Id));
        await Assert.ThrowsAsync<LmsNotFoundException>(() => other.Projects.UpdateAsync(project.Id, new() { Name = "Taken over" }));
        Assert.DoesNotContain(project.Id, (await other.Projects.ListAsync(new() { Owner = project.Owner }).ToListAsync()).Select((listed) => listed.Id));

        var forbidden = await Assert.ThrowsAsync<LmsForbiddenException>(() => reader.Projects.CreateAsync(new() { Name = "Not allowed" }));
        Assert.Equal(403, forbidden.Status);
        Assert.Equal(project, (await reader.Projects.GetAsync(project.Id)).Value);
        await lms.Projects.DeleteAsync(project.Id);
    }

    [Fact]
    public async Task A_bad_token_is_a_401_with_its_challenge()
    {
        using var lms = new LmsClient(Stack.ApiBaseUrl, "not-a-token");
        var refused = await Assert.ThrowsAsync<LmsUnauthorizedException>(() => lms.Users.MeAsync());
        Assert.StartsWith("Bearer", refused.Headers["WWW-Authenticate"], StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_token_callback_is_asked_before_every_request()
    {
        var asked = 0;
        using var lms = new LmsClient(Stack.ApiBaseUrl, async (cancellationToken) =>
        {
            Interlocked.Increment(ref asked);
            return await Stack.TokenAsync(cancellationToken: cancellationToken);
        });
        var me = await lms.Users.MeAsync();
        await lms.Users.MeAsync();
        await lms.Projects.ListAsync(new() { Limit = 1, Owner = Stack.UniqueEmail("nobody") }).ToListAsync();
        Assert.Equal(3, asked);
        Assert.Equal("dotnet-client@contoso.test", me.Value.Email);
        Assert.Contains(UserRole.LMSAdmin, me.Value.Roles);
        Assert.Contains(me.Value.Id, (await lms.Users.ListAsync(new() { Q = "dotnet-client" }).ToListAsync()).Select((user) => user.Id));
    }

    [Fact]
    public async Task A_rebuild_is_followed_to_its_end()
    {
        using var lms = Stack.Client();
        var project = (await lms.Projects.CreateAsync(new() { Name = "C# index", Owner = Stack.UniqueEmail("dotnet-rag") })).Value;
        var started = await Rebuild(lms, new() { ProjectIds = [project.Id] });
        Assert.Equal(202, started.Status);
        Assert.Equal(RagJobStatus.Queued, started.Value.Status);
        Assert.EndsWith($"/rag/jobs/{started.Value.JobId}", started.Location!.AbsolutePath, StringComparison.Ordinal);

        using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        var ended = await lms.Rag.Jobs.WaitAsync(started.Value.JobId, TimeSpan.FromMilliseconds(200), deadline.Token);
        Assert.Equal(RagJobStatus.Succeeded, ended.Value.Status);
        Assert.NotNull(ended.Value.Counts);
        Assert.Contains(started.Value.JobId, (await lms.Rag.Jobs.ListAsync(new() { Limit = 20 }).AsPages().FirstAsync()).Items.Select((job) => job.JobId));
        await lms.Projects.DeleteAsync(project.Id);
    }

    /// <summary>Starts a rebuild; while another test's job of the tenant runs (a 409 naming it), waits for that one first.</summary>
    internal static async Task<LmsResponse<RagJob>> Rebuild(LmsClient lms, StartRagIndexRequest request)
    {
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                return await lms.Rag.RebuildAsync(request);
            }
            catch (LmsConflictException busy) when (busy.Body?.ActiveJobId is { } active && attempt < 10)
            {
                using var deadline = new CancellationTokenSource(TimeSpan.FromMinutes(3));
                await lms.Rag.Jobs.WaitAsync(active, TimeSpan.FromMilliseconds(200), deadline.Token);
            }
        }
    }
}

internal static class AsyncEnumerables
{
    public static async Task<T> FirstAsync<T>(this IAsyncEnumerable<T> items)
    {
        await foreach (var item in items) return item;
        throw new InvalidOperationException("No item");
    }
}
