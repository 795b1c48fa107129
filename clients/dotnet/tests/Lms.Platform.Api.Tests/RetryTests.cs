using System;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Net.Sockets;
using System.Threading.Tasks;
using Lms.Platform.Api.Tests.Support;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>
/// Retries repeat only what the API cannot have done twice, through a proxy of the test's own that
/// fails on cue: 429 for anything, 503 and lost answers only for GET, PUT, DELETE and creates, and a
/// request that never left for anything.
/// </summary>
public sealed class RetryTests : IDisposable
{
    private const string ProjectJson = """{"id":"PRJ-1001","name":"Retried","description":"","status":"Active","owner":"kim@contoso.test","members":["kim@contoso.test"],"createdAt":"2026-11-21T09:30:00.000Z","updatedAt":"2026-11-21T09:30:00.000Z","createdBy":"oid"}""";
    private const string WebhookJson = """{"id":"WHK-1001","url":"https://example.test/hook","events":["project.created"],"description":"","active":true,"disabledReason":null,"createdAt":"2026-11-21T09:30:00.000Z","updatedAt":"2026-11-21T09:30:00.000Z","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}""";
    private readonly RetryLog _log = new();

    public void Dispose() => _log.Dispose();

    [Fact]
    public async Task A_create_whose_answer_is_cut_after_sending_is_sent_again_with_the_same_key_and_creates_one_project()
    {
        var owner = Stack.UniqueEmail("dotnet-retry");
        await using var proxy = new TestServer((index, _) => index == 0 ? new Plan.Drop() : new Plan.Forward(), Stack.ApiOrigin);
        using var lms = Stack.Client(baseUrl: new Uri($"{proxy.Url}/api"));
        var created = await lms.Projects.CreateAsync(new() { Name = "Created once", Owner = owner });

        Assert.Equal(2, proxy.Received.Count);
        var key = proxy.Received[0].Header("Idempotency-Key");
        Assert.False(string.IsNullOrEmpty(key));
        Assert.Equal(key, proxy.Received[1].Header("Idempotency-Key"));
        Assert.Equal("true", created.Headers["Idempotent-Replayed"]);
        using var direct = Stack.Client();
        Assert.Equal(created.Value.Id, Assert.Single(await direct.Projects.ListAsync(new() { Owner = owner }).ToListAsync()).Id);
        var retry = Assert.Single(_log.About(proxy), (logged) => logged.Name == "Retrying");
        Assert.Equal("a connection lost after sending", retry.Reason);
    }

    [Fact]
    public async Task A_key_given_by_the_caller_is_the_one_sent()
    {
        await using var server = new TestServer((_, _) => Plan.Json(201, ProjectJson));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        await lms.Projects.CreateAsync(new() { Name = "Keyed" }, idempotencyKey: "onboarding-2027");
        Assert.Equal("onboarding-2027", Assert.Single(server.Received).Header("Idempotency-Key"));
    }

    [Fact]
    public async Task A_503_on_a_read_is_retried_after_the_wait_retry_after_asks_and_logged()
    {
        await using var server = new TestServer((index, _) => index == 0 ? Plan.Error(503, "Service Unavailable", ("Retry-After", "1")) : Plan.Json(200, ProjectJson));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        var clock = System.Diagnostics.Stopwatch.StartNew();
        var project = await lms.Projects.GetAsync("PRJ-1001");
        Assert.True(clock.Elapsed >= TimeSpan.FromSeconds(0.9), $"retried after {clock.Elapsed}, before the second Retry-After asked for");
        Assert.Equal("PRJ-1001", project.Value.Id);
        Assert.Equal(2, server.Received.Count);
        var retry = Assert.Single(_log.About(server));
        Assert.Equal(("Retrying", "503", 1000L), (retry.Name, retry.Reason, retry.Delay));
    }

    [Fact]
    public async Task A_429_is_retried_even_for_a_post_without_a_key_for_the_api_did_not_act()
    {
        await using var server = new TestServer((index, _) => index == 0 ? Plan.Error(429, "Too Many Requests", ("Retry-After", "0")) : Plan.Json(200, WebhookJson));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        var rotated = await lms.Webhooks.RotateSecretAsync("WHK-1001");
        Assert.StartsWith("whsec_", rotated.Value.Secret, StringComparison.Ordinal);
        Assert.Equal(2, server.Received.Count);
    }

    [Fact]
    public async Task Retries_are_bounded_by_max_retries_and_the_last_answer_is_thrown()
    {
        await using var server = new TestServer((_, _) => Plan.Error(503, "Service Unavailable", ("Retry-After", "0")));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token", new LmsClientOptions { MaxRetries = 2 });
        var thrown = await Assert.ThrowsAsync<LmsApiException>(() => lms.Projects.GetAsync("PRJ-1001"));
        Assert.Equal(503, thrown.Status);
        Assert.Equal(3, server.Received.Count);
        Assert.Equal(["Retrying", "Retrying", "RetriesExhausted"], _log.About(server).Select((logged) => logged.Name));
    }

    [Fact]
    public async Task A_wait_longer_than_max_retry_delay_is_not_made()
    {
        await using var server = new TestServer((_, _) => Plan.Error(429, "Too Many Requests", ("Retry-After", "120")));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        var thrown = await Assert.ThrowsAsync<LmsThrottledException>(() => lms.Projects.GetAsync("PRJ-1001"));
        Assert.Equal(TimeSpan.FromSeconds(120), thrown.RetryAfter);
        Assert.Single(server.Received);
        Assert.Equal("RetryDeclined", Assert.Single(_log.About(server)).Name);
    }

    [Theory]
    [InlineData(500)]
    [InlineData(400)]
    [InlineData(409)]
    public async Task Other_errors_are_never_retried(int status)
    {
        await using var server = new TestServer((_, _) => Plan.Error(status, "Refused"));
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        var thrown = await Assert.ThrowsAnyAsync<LmsApiException>(() => lms.Projects.UpdateAsync("PRJ-1001", new() { Name = "x" }));
        Assert.Equal(status, thrown.Status);
        Assert.Single(server.Received);
    }

    [Fact]
    public async Task A_post_without_a_key_whose_answer_is_lost_is_not_sent_again()
    {
        await using var server = new TestServer((_, _) => new Plan.Drop());
        using var lms = new LmsClient(new Uri($"{server.Url}/api"), "token");
        await Assert.ThrowsAsync<HttpRequestException>(() => lms.Webhooks.PingAsync("WHK-1001"));
        Assert.Single(server.Received);
        Assert.Empty(_log.About(server));
    }

    [Fact]
    public async Task A_post_that_could_not_be_sent_is_retried_for_the_api_never_saw_it()
    {
        var closed = new TcpListener(IPAddress.Loopback, 0);
        closed.Start();
        var port = ((IPEndPoint)closed.LocalEndpoint).Port;
        closed.Stop();
        using var lms = new LmsClient(new Uri($"http://127.0.0.1:{port}/api"), "token", new LmsClientOptions { MaxRetries = 2 });
        await Assert.ThrowsAsync<HttpRequestException>(() => lms.Webhooks.RotateSecretAsync("WHK-1001"));
        var logged = _log.About(port);
        Assert.Equal(["Retrying", "Retrying", "RetriesExhausted"], logged.Select((entry) => entry.Name));
        Assert.All(logged, (entry) => Assert.Equal("a connection that could not be made", entry.Reason));
    }
}
