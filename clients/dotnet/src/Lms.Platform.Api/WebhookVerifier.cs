using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;

namespace Lms.Platform.Api;

/// <summary>
/// Checks a webhook delivery as the Standard Webhooks specification says
/// (https://www.standardwebhooks.com/): an HMAC-SHA256 of <c>{webhook-id}.{webhook-timestamp}.{body}</c>
/// keyed with the subscription's <c>whsec_</c> secret; any one of the space-separated signatures may
/// match (after a rotation the API signs with the old and the new secret for 24 hours); the
/// timestamp within 5 minutes of now, either way. Give it the body's bytes as received, before any
/// JSON parsing: a body written out again no longer matches its signature.
/// </summary>
public static class WebhookVerifier
{
    /// <summary>How far a delivery's <c>webhook-timestamp</c> may be from now, either way: an older one may be a replay.</summary>
    public static readonly TimeSpan DefaultTolerance = TimeSpan.FromMinutes(5);

    private const string SecretPrefix = "whsec_";

    /// <summary>
    /// The event a delivery carries, once its signature is checked: its <c>Id</c> is the <c>webhook-id</c>
    /// (de-duplicate on it), as <c>GET /api/events</c> lists it. Throws a <see cref="WebhookVerificationException"/> otherwise.
    /// </summary>
    /// <param name="secret">The subscription's secret, <c>whsec_…</c>.</param>
    /// <param name="headers">Reads a header of the request by name (any case): <c>name =&gt; Request.Headers[name]</c> in ASP.NET Core.</param>
    /// <param name="body">The request's body, as received.</param>
    /// <param name="tolerance">How far the timestamp may be from now (5 minutes by default).</param>
    /// <param name="now">The time to check against, for a delivery recorded earlier (now by default).</param>
    public static Event Verify(string secret, Func<string, string?> headers, byte[] body, TimeSpan? tolerance = null, DateTimeOffset? now = null)
    {
        if (headers is null) throw new ArgumentNullException(nameof(headers));
        if (body is null) throw new ArgumentNullException(nameof(body));
        var key = Key(secret);
        var id = Required(headers, "webhook-id");
        var timestamp = Required(headers, "webhook-timestamp");
        var signatures = Required(headers, "webhook-signature");
        if (!long.TryParse(timestamp, NumberStyles.None, CultureInfo.InvariantCulture, out var seconds) || seconds > DateTimeOffset.MaxValue.ToUnixTimeSeconds())
        {
            throw new WebhookTimestampInvalidException(timestamp);
        }
        var sentAt = DateTimeOffset.FromUnixTimeSeconds(seconds);
        var allowed = tolerance ?? DefaultTolerance;
        var current = now ?? DateTimeOffset.UtcNow;
        if (sentAt < current - allowed) throw new WebhookTimestampTooOldException(sentAt, allowed);
        if (sentAt > current + allowed) throw new WebhookTimestampTooNewException(sentAt, allowed);

        var expected = Encoding.ASCII.GetBytes(Convert.ToBase64String(Sign(key, $"{id}.{timestamp}.", body)));
        var matched = false;
        foreach (var signature in signatures.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries))
        {
            var comma = signature.IndexOf(',');
            if (comma < 0 || signature.Substring(0, comma) != "v1") continue;
            // Every signature is compared, in constant time, so the time taken tells nothing of the secret.
            matched |= FixedTimeEquals(Encoding.ASCII.GetBytes(signature.Substring(comma + 1)), expected);
        }
        if (!matched) throw new WebhookSignatureMismatchException();
        return Read(id, body);
    }

    /// <summary>The event a delivery carries, once its signature is checked; see the other overloads.</summary>
    /// <param name="secret">The subscription's secret, <c>whsec_…</c>.</param>
    /// <param name="headers">Reads a header of the request by name (any case).</param>
    /// <param name="body">The request's body, as received (UTF-8).</param>
    /// <param name="tolerance">How far the timestamp may be from now (5 minutes by default).</param>
    /// <param name="now">The time to check against (now by default).</param>
    public static Event Verify(string secret, Func<string, string?> headers, string body, TimeSpan? tolerance = null, DateTimeOffset? now = null) =>
        Verify(secret, headers, Encoding.UTF8.GetBytes(body ?? throw new ArgumentNullException(nameof(body))), tolerance, now);

    /// <summary>The event a delivery carries, once its signature is checked; see the other overloads.</summary>
    /// <param name="secret">The subscription's secret, <c>whsec_…</c>.</param>
    /// <param name="headers">The request's headers, names in any case (a dictionary, say).</param>
    /// <param name="body">The request's body, as received.</param>
    /// <param name="tolerance">How far the timestamp may be from now (5 minutes by default).</param>
    /// <param name="now">The time to check against (now by default).</param>
    public static Event Verify(string secret, IEnumerable<KeyValuePair<string, string>> headers, byte[] body, TimeSpan? tolerance = null, DateTimeOffset? now = null) =>
        Verify(secret, Lookup(headers), body, tolerance, now);

    /// <summary>The event a delivery carries, once its signature is checked; see the other overloads.</summary>
    /// <param name="secret">The subscription's secret, <c>whsec_…</c>.</param>
    /// <param name="headers">The request's headers, names in any case.</param>
    /// <param name="body">The request's body, as received (UTF-8).</param>
    /// <param name="tolerance">How far the timestamp may be from now (5 minutes by default).</param>
    /// <param name="now">The time to check against (now by default).</param>
    public static Event Verify(string secret, IEnumerable<KeyValuePair<string, string>> headers, string body, TimeSpan? tolerance = null, DateTimeOffset? now = null) =>
        Verify(secret, Lookup(headers), body, tolerance, now);

    private static Func<string, string?> Lookup(IEnumerable<KeyValuePair<string, string>> headers)
    {
        if (headers is null) throw new ArgumentNullException(nameof(headers));
        var named = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (var header in headers) named[header.Key] = named.TryGetValue(header.Key, out var earlier) ? $"{earlier} {header.Value}" : header.Value;
        return (name) => named.TryGetValue(name, out var value) ? value : null;
    }

    private static string Required(Func<string, string?> headers, string name)
    {
        var value = headers(name);
        return string.IsNullOrWhiteSpace(value) ? throw new WebhookHeaderMissingException(name) : value!.Trim();
    }

    private static byte[] Key(string secret)
    {
        if (secret is null) throw new ArgumentNullException(nameof(secret));
        try
        {
            return Convert.FromBase64String(secret.StartsWith(SecretPrefix, StringComparison.Ordinal) ? secret.Substring(SecretPrefix.Length) : secret);
        }
        catch (FormatException)
        {
            throw new ArgumentException("The secret is not whsec_ and base64, as the API gives it.", nameof(secret));
        }
    }

    private static byte[] Sign(byte[] key, string prefix, byte[] body)
    {
        var signed = Encoding.UTF8.GetBytes(prefix).Concat(body).ToArray();
        using var hmac = new HMACSHA256(key);
        return hmac.ComputeHash(signed);
    }

    private static bool FixedTimeEquals(byte[] left, byte[] right)
    {
#if NET8_0_OR_GREATER
        return CryptographicOperations.FixedTimeEquals(left, right);
#else
        if (left.Length != right.Length) return false;
        var difference = 0;
        for (var index = 0; index < left.Length; index++) difference |= left[index] ^ right[index];
        return difference == 0;
#endif
    }

    private static Event Read(string id, byte[] body)
    {
        try
        {
            using var document = JsonDocument.Parse(body);
            var root = document.RootElement;
            return new Event
            {
                Id = id,
                Type = new EventType(root.GetProperty("type").GetString() ?? throw new JsonException("type is null")),
                Timestamp = root.GetProperty("timestamp").GetDateTimeOffset(),
                Data = root.GetProperty("data").Clone(),
            };
        }
        catch (Exception failure) when (failure is JsonException or KeyNotFoundException or InvalidOperationException or FormatException)
        {
            throw new WebhookPayloadInvalidException(failure);
        }
    }
}

/// <summary>A webhook delivery that did not pass <see cref="WebhookVerifier.Verify(string, Func{string, string}, byte[], TimeSpan?, DateTimeOffset?)"/>: answer it with a 400, and do not act on it.</summary>
public abstract class WebhookVerificationException : Exception
{
    /// <summary>A refused delivery.</summary>
    protected WebhookVerificationException(string message, Exception? inner = null)
        : base(message, inner)
    {
    }
}

/// <summary>The delivery lacks <c>webhook-id</c>, <c>webhook-timestamp</c> or <c>webhook-signature</c>.</summary>
public sealed class WebhookHeaderMissingException : WebhookVerificationException
{
    /// <summary>A delivery without <paramref name="header"/>.</summary>
    public WebhookHeaderMissingException(string header)
        : base($"The delivery has no {header} header.") => Header = header;

    /// <summary>The header missing.</summary>
    public string Header { get; }
}

/// <summary><c>webhook-timestamp</c> is not Unix seconds.</summary>
public sealed class WebhookTimestampInvalidException : WebhookVerificationException
{
    /// <summary>A delivery whose timestamp reads <paramref name="value"/>.</summary>
    public WebhookTimestampInvalidException(string value)
        : base($"webhook-timestamp is not Unix seconds: {value}.")
    {
    }
}

/// <summary><c>webhook-timestamp</c> is further in the past than the tolerance: it may be a replay.</summary>
public sealed class WebhookTimestampTooOldException : WebhookVerificationException
{
    /// <summary>A delivery sent at <paramref name="sentAt"/>.</summary>
    public WebhookTimestampTooOldException(DateTimeOffset sentAt, TimeSpan tolerance)
        : base($"webhook-timestamp {sentAt:O} is more than {tolerance.TotalSeconds:0} s in the past.") => SentAt = sentAt;

    /// <summary>When the delivery says it was sent.</summary>
    public DateTimeOffset SentAt { get; }
}

/// <summary><c>webhook-timestamp</c> is further in the future than the tolerance.</summary>
public sealed class WebhookTimestampTooNewException : WebhookVerificationException
{
    /// <summary>A delivery sent at <paramref name="sentAt"/>.</summary>
    public WebhookTimestampTooNewException(DateTimeOffset sentAt, TimeSpan tolerance)
        : base($"webhook-timestamp {sentAt:O} is more than {tolerance.TotalSeconds:0} s in the future.") => SentAt = sentAt;

    /// <summary>When the delivery says it was sent.</summary>
    public DateTimeOffset SentAt { get; }
}

/// <summary>No signature of the delivery matches the secret: it is not from the API, or it was changed on the way.</summary>
public sealed class WebhookSignatureMismatchException : WebhookVerificationException
{
    /// <summary>A delivery no signature of which matches.</summary>
    public WebhookSignatureMismatchException()
        : base("No signature of the delivery matches the secret.")
    {
    }
}

/// <summary>The signed body is not an event (<c>{ "type", "timestamp", "data" }</c>).</summary>
public sealed class WebhookPayloadInvalidException : WebhookVerificationException
{
    /// <summary>A signed body that could not be read.</summary>
    public WebhookPayloadInvalidException(Exception inner)
        : base($"The delivery's body is not an event: {inner?.Message}", inner)
    {
    }
}
