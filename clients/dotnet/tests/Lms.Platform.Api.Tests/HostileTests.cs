using System;
using System.Linq;
using System.Net.Http;
using System.Threading;
using System.Threading.Tasks;
using Lms.Platform.Api.Tests.Support;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>
/// Answers that try to steer the client: the token goes to the base URL's origin only, a redirect is
/// never followed, paging ends, and a server that never answers does not hold the caller forever.
/// Each test has an "elsewhere" server and checks that the token never reached it.
/// </summary>
public sealed class HostileTests
{
    private const string Page = """[{"id":"PRJ-1001","name":"Bait","description":"","status":"Active","owner":"kim@contoso.test","members":["kim@contoso.test"],"createdAt":"2026-11-21T09:30:00.000Z","updatedAt":"2026-11-21T09:30:00.000Z","createdBy":"oid","etag":"\"1\""}]""";
    private static readonly string Project = Page[1..^1];

    [Fact]
    public async Task A_link_to_another_origin_is_refused_and_never_followed()
    {
        await using var elsewhere = new TestServer((_, _) => Plan.Json(200, "[]"));
        await using var api = new TestServer((_, _) => Plan.Json(200, Page, ("Link", $"<{elsewhere.Url}/api/projects?cursor=stolen>; rel=\"next\"")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "secret-token");
        var refused = await Assert.ThrowsAsync<LmsUnsafeResponseException>(() => lms.Projects.ListAsync().ToListAsync());
        Assert.Equal(elsewhere.Port, refused.Target!.Port);
        Assert.Single(api.Received);
        Assert.Empty(elsewhere.Received);
    }

    [Fact]
    public async Task A_scheme_relative_link_to_another_host_is_refused()
    {
        await using var elsewhere = new TestServer((_, _) => Plan.Json(200, "[]"));
        await using var api = new TestServer((_, _) => Plan.Json(200, Page, ("Link", $"<//127.0.0.1:{elsewhere.Port}/api/projects?cursor=stolen>; rel=\"next\"")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "secret-token");
        await Assert.ThrowsAsync<LmsUnsafeResponseException>(async () =>
        {
            await foreach (var _ in lms.Projects.ListAsync())
            {
            }
        });
        Assert.Empty(elsewhere.Received);
    }

    [Fact]
    public async Task A_link_already_followed_ends_paging_with_an_error()
    {
        // From the fifth request on the server gives the last page, so a client that loops ends all the same, and fails here.
        await using var api = new TestServer((index, _) => index < 5 ? Plan.Json(200, Page, ("Link", "</api/projects?cursor=again>; rel=\"next\"")) : Plan.Json(200, "[]"));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "token");
        var refused = await Assert.ThrowsAsync<LmsUnsafeResponseException>(() => lms.Projects.ListAsync().ToListAsync());
        Assert.Contains("already read", refused.Message, StringComparison.Ordinal);
        Assert.Equal(2, api.Received.Count);

        await using var loop = new TestServer((index, _) => index < 5 ? Plan.Json(200, Page, ("Link", "</api/projects?limit=1>; rel=\"next\"")) : Plan.Json(200, "[]"));
        using var looping = new LmsClient(new Uri($"{loop.Url}/api"), "token");
        await Assert.ThrowsAsync<LmsUnsafeResponseException>(() => looping.Projects.ListAsync(new() { Limit = 1 }).ToListAsync());
        Assert.Single(loop.Received);
    }

    [Fact]
    public async Task A_redirect_is_not_followed_but_thrown()
    {
        await using var elsewhere = new TestServer((_, _) => Plan.Json(201, Project));
        await using var api = new TestServer((_, _) => Plan.Empty(307, ("Location", $"{elsewhere.Url}/api/projects")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "secret-token");
        var thrown = await Assert.ThrowsAsync<LmsApiException>(() => lms.Projects.CreateAsync(new() { Name = "Not elsewhere" }));
        Assert.Equal(307, thrown.Status);
        Assert.Contains(elsewhere.Url, thrown.Message, StringComparison.Ordinal);
        Assert.Empty(elsewhere.Received);
    }

    [Fact]
    public async Task A_redirect_an_injected_http_client_followed_is_refused()
    {
        await using var elsewhere = new TestServer((_, _) => Plan.Json(200, Project));
        await using var api = new TestServer((_, _) => Plan.Empty(307, ("Location", $"{elsewhere.Url}/api/projects/PRJ-1001")));
        using var following = new HttpClient(new HttpClientHandler { AllowAutoRedirect = true });
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "secret-token", new LmsClientOptions { HttpClient = following });
        var refused = await Assert.ThrowsAsync<LmsUnsafeResponseException>(() => lms.Projects.GetAsync("PRJ-1001"));
        Assert.Contains("AllowAutoRedirect", refused.Message, StringComparison.Ordinal);
        // .NET's handler drops the token when it redirects; the client refuses the answer all the same.
        Assert.All(elsewhere.Received, (request) => Assert.Null(request.Header("Authorization")));
    }

    [Fact]
    public async Task A_location_on_another_origin_is_refused()
    {
        await using var api = new TestServer((_, _) => Plan.Json(201, Project, ("Location", "https://elsewhere.example/api/projects/PRJ-1001")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "token");
        var refused = await Assert.ThrowsAsync<LmsUnsafeResponseException>(() => lms.Projects.CreateAsync(new() { Name = "Located" }));
        Assert.Equal("elsewhere.example", refused.Target!.Host);
    }

    [Fact]
    public async Task A_503_on_rotate_secret_is_not_retried_for_the_api_may_have_rotated()
    {
        await using var api = new TestServer((_, _) => Plan.Error(503, "Service Unavailable", ("Retry-After", "0")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "token");
        var thrown = await Assert.ThrowsAsync<LmsApiException>(() => lms.Webhooks.RotateSecretAsync("WHK-1001"));
        Assert.Equal(503, thrown.Status);
        Assert.Single(api.Received);
    }

    [Fact]
    public async Task A_server_that_never_answers_times_out_and_only_a_read_is_tried_again()
    {
        await using var hung = new TestServer((_, _) => new Plan.Hang());
        using var lms = new LmsClient(new Uri($"{hung.Url}/api"), "token", new LmsClientOptions { Timeout = TimeSpan.FromSeconds(1), MaxRetries = 1 });
        var read = lms.Projects.GetAsync("PRJ-1001");
        // A watchdog, so that a client that waits forever fails this test rather than hanging the run.
        Assert.Same(read, await Task.WhenAny(read, Task.Delay(TimeSpan.FromMinutes(1))));
        var timedOut = await Assert.ThrowsAsync<TimeoutException>(() => read);
        Assert.Contains("no answer within 1 s", timedOut.Message, StringComparison.Ordinal);
        Assert.Equal(2, hung.Received.Count);

        await Assert.ThrowsAsync<TimeoutException>(() => lms.Webhooks.PingAsync("WHK-1001"));
        Assert.Equal(3, hung.Received.Count);
    }

    [Fact]
    public async Task Cancelling_stops_a_call_at_once_and_is_no_timeout()
    {
        await using var hung = new TestServer((_, _) => new Plan.Hang());
        using var lms = new LmsClient(new Uri($"{hung.Url}/api"), "token");
        using var cancel = new CancellationTokenSource();
        var call = lms.Projects.GetAsync("PRJ-1001", cancel.Token);
        await Stack.WaitFor(() => Task.FromResult(hung.Received.Count > 0 ? hung.Received : null), TimeSpan.FromSeconds(30), "the request");
        await cancel.CancelAsync();
        // A cancel, not the 30 s timeout's TimeoutException.
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => call);
        Assert.Single(hung.Received);

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => lms.Projects.CreateAsync(new() { Name = "Never sent" }, cancellationToken: cancel.Token));
        Assert.Single(hung.Received);
    }

    [Fact]
    public async Task Cancelling_a_list_stops_its_paging()
    {
        await using var api = new TestServer((index, _) => Plan.Json(200, Page, ("Link", $"</api/projects?cursor=c{index}>; rel=\"next\"")));
        using var lms = new LmsClient(new Uri($"{api.Url}/api"), "token");
        using var cancel = new CancellationTokenSource();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () =>
        {
            await foreach (var _ in lms.Projects.ListAsync(cancellationToken: cancel.Token)) await cancel.CancelAsync();
        });
        Assert.Single(api.Received);
    }
}
