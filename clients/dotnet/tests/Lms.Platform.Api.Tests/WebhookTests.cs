using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Text.Json;
using System.Threading.Tasks;
using Lms.Platform.Api.Tests.Support;
using Microsoft.AspNetCore.Http;
using StandardWebhooks;
using Xunit;
using ReferenceFailure = StandardWebhooks.Diagnostics.WebhookVerificationException;

namespace Lms.Platform.Api.Tests;

/// <summary>
/// WebhookVerifier against the StandardWebhooks package (the reference .NET implementation): the same
/// deliveries, signed by it, must pass or fail alike in both; then real deliveries from the API.
/// </summary>
public sealed class WebhookTests
{
    // The example of the Standard Webhooks libraries, recorded at its own time.
    private const string ExampleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    private const string ExampleBody = """{"test": 2432232314}""";
    private static readonly Dictionary<string, string> ExampleHeaders = new()
    {
        ["webhook-id"] = "msg_p5jXN8AQM9LWM0D4loKWxJek",
        ["webhook-timestamp"] = "1614265330",
        ["webhook-signature"] = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    };

    private const string Secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    private const string Body = """{"type":"project.created","timestamp":"2026-11-21T09:30:00.000Z","data":{"id":"PRJ-1001","name":"日本語のプロジェクト"}}""";
    private const string MessageId = "msg_0123456789abcdef0123456789abcdef";

    [Fact]
    public void The_specification_example_verifies_at_its_time()
    {
        var sent = DateTimeOffset.FromUnixTimeSeconds(1614265330);
        var delivered = Assert.Throws<WebhookPayloadInvalidException>(() => WebhookVerifier.Verify(ExampleSecret, ExampleHeaders, ExampleBody, now: sent));
        // Signed correctly, but not an event of this API: the signature passed, the reading did not.
        Assert.IsType<KeyNotFoundException>(delivered.InnerException);
        Assert.Throws<WebhookSignatureMismatchException>(() => WebhookVerifier.Verify(ExampleSecret, ExampleHeaders, ExampleBody.Replace("2432232314", "2432232315", StringComparison.Ordinal), now: sent));
        Assert.Throws<WebhookTimestampTooOldException>(() => WebhookVerifier.Verify(ExampleSecret, ExampleHeaders, ExampleBody));
    }

    public static TheoryData<string, string> Cases() => new()
    {
        { "as signed", "pass" },
        { "one of several signatures", "pass" },
        { "header names in capitals", "pass" },
        { "a changed body", nameof(WebhookSignatureMismatchException) },
        { "another message id", nameof(WebhookSignatureMismatchException) },
        { "another timestamp", nameof(WebhookSignatureMismatchException) },
        { "a v2 signature", nameof(WebhookSignatureMismatchException) },
        { "another secret", nameof(WebhookSignatureMismatchException) },
        { "no signature header", nameof(WebhookHeaderMissingException) },
        { "no id header", nameof(WebhookHeaderMissingException) },
        { "a timestamp six minutes old", nameof(WebhookTimestampTooOldException) },
        { "a timestamp six minutes ahead", nameof(WebhookTimestampTooNewException) },
        { "a timestamp that is not a number", nameof(WebhookTimestampInvalidException) },
    };

    [Theory]
    [MemberData(nameof(Cases))]
    public void Each_delivery_passes_or_fails_as_in_the_reference_library(string change, string outcome)
    {
        var now = DateTimeOffset.UtcNow;
        var sentAt = change switch
        {
            "a timestamp six minutes old" => now.AddMinutes(-6),
            "a timestamp six minutes ahead" => now.AddMinutes(6),
            _ => now,
        };
        var signature = new StandardWebhook(Secret).Sign(MessageId, sentAt, Body);
        var headers = new Dictionary<string, string>
        {
            ["webhook-id"] = MessageId,
            ["webhook-timestamp"] = sentAt.ToUnixTimeSeconds().ToString(System.Globalization.CultureInfo.InvariantCulture),
            ["webhook-signature"] = signature,
        };
        var body = Body;
        var secret = Secret;
        switch (change)
        {
            case "one of several signatures": headers["webhook-signature"] = $"v1,bm90IHRoaXMgb25l {signature} v1a,other"; break;
            case "header names in capitals": headers = headers.ToDictionary((header) => header.Key.ToUpperInvariant(), (header) => header.Value); break;
            case "a changed body": body = Body.Replace("PRJ-1001", "PRJ-1002", StringComparison.Ordinal); break;
            case "another message id": headers["webhook-id"] = "msg_ffffffffffffffffffffffffffffffff"; break;
            case "another timestamp": headers["webhook-timestamp"] = (sentAt.ToUnixTimeSeconds() + 1).ToString(System.Globalization.CultureInfo.InvariantCulture); break;
            case "a v2 signature": headers["webhook-signature"] = "v2," + signature[3..]; break;
            case "another secret": secret = "whsec_" + Convert.ToBase64String(Encoding.ASCII.GetBytes("another secret of 24 byte")); break;
            case "no signature header": headers.Remove("webhook-signature"); break;
            case "no id header": headers.Remove("webhook-id"); break;
            case "a timestamp that is not a number": headers["webhook-timestamp"] = "yesterday"; break;
        }

        var referenceHeaders = new HeaderDictionary();
        foreach (var header in headers) referenceHeaders[header.Key] = header.Value;
        var reference = Record.Exception(() => new StandardWebhook(secret).Verify(body, referenceHeaders));
        var ours = Record.Exception(() => WebhookVerifier.Verify(secret, headers, Encoding.UTF8.GetBytes(body)));
        if (outcome == "pass")
        {
            Assert.Null(reference);
            Assert.Null(ours);
            var verified = WebhookVerifier.Verify(secret, (name) => headers.FirstOrDefault((header) => string.Equals(header.Key, name, StringComparison.OrdinalIgnoreCase)).Value, body);
            Assert.Equal((MessageId, EventType.ProjectCreated), (verified.Id, verified.Type));
            Assert.Equal("日本語のプロジェクト", verified.Data.GetProperty("name").GetString());
        }
        else
        {
            Assert.IsType<ReferenceFailure>(reference);
            Assert.Equal(outcome, ours?.GetType().Name);
            Assert.IsAssignableFrom<WebhookVerificationException>(ours);
        }
    }

    [Fact]
    public async Task A_real_delivery_verifies_a_tampered_one_does_not_and_a_rotation_signs_with_both_secrets()
    {
        await using var receiver = new TestServer((_, _) => Plan.Empty(204));
        using var lms = Stack.Client();
        var subscription = (await lms.Webhooks.CreateAsync(new() { Url = $"{receiver.Url}/hook", Events = [EventType.ProjectCreated], Description = "C# client test" })).Value;
        try
        {
            var project = (await lms.Projects.CreateAsync(new() { Name = "C# delivery", Owner = Stack.UniqueEmail("dotnet-hook") })).Value;
            // A deadline for a loaded machine, where the shared stack's queue may be slow: this is no speed test.
            var delivery = await Stack.WaitFor(() => Task.FromResult(receiver.Received.FirstOrDefault((request) => About(request, project.Id))), TimeSpan.FromSeconds(120), "the project.created delivery");
            var verified = WebhookVerifier.Verify(subscription.Secret, delivery.Headers, delivery.Body);
            Assert.Equal(EventType.ProjectCreated, verified.Type);
            Assert.Equal(delivery.Header("webhook-id"), verified.Id);
            Assert.Equal(project, verified.Data.Deserialize(LmsJsonContext.Default.Project));
            var referenceHeaders = new HeaderDictionary();
            foreach (var header in delivery.Headers) referenceHeaders[header.Key] = header.Value;
            new StandardWebhook(subscription.Secret).Verify(delivery.Text, referenceHeaders);

            var tampered = Encoding.UTF8.GetBytes(delivery.Text.Replace("C# delivery", "C# forgery", StringComparison.Ordinal));
            Assert.Throws<WebhookSignatureMismatchException>(() => WebhookVerifier.Verify(subscription.Secret, delivery.Headers, tampered));

            var rotated = (await lms.Webhooks.RotateSecretAsync(subscription.Id)).Value;
            var ping = (await lms.Webhooks.PingAsync(subscription.Id)).Value;
            var signedTwice = await Stack.WaitFor(() => Task.FromResult(receiver.Received.FirstOrDefault((request) => request.Header("webhook-id") == ping.EventId)), TimeSpan.FromSeconds(120), "the ping");
            Assert.Equal(2, signedTwice.Header("webhook-signature")!.Split(' ').Length);
            foreach (var secret in new[] { subscription.Secret, rotated.Secret })
            {
                Assert.Equal(EventType.WebhookPing, WebhookVerifier.Verify(secret, signedTwice.Headers, signedTwice.Body).Type);
            }
        }
        finally
        {
            await lms.Webhooks.DeleteAsync(subscription.Id);
        }
    }

    private static bool About(Received request, string projectId)
    {
        using var body = JsonDocument.Parse(request.Body);
        return body.RootElement.GetProperty("data").TryGetProperty("id", out var id) && id.GetString() == projectId;
    }
}
