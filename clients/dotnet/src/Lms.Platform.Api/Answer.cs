using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text.RegularExpressions;

namespace Lms.Platform.Api;

/// <summary>An answer as received: status, headers by case-insensitive name, the body's bytes, and the URL asked.</summary>
internal sealed record Answer(int Status, string Reason, IReadOnlyDictionary<string, string> Headers, byte[] Body, Uri Url)
{
    public string? Header(string name) => Headers.TryGetValue(name, out var value) ? value : null;
}

internal static class RetryAfterHeader
{
    /// <summary><c>Retry-After</c> as a wait: a number of seconds, or an HTTP date.</summary>
    public static TimeSpan? Parse(IReadOnlyDictionary<string, string> headers)
    {
        if (!headers.TryGetValue("Retry-After", out var value) || string.IsNullOrWhiteSpace(value)) return null;
        value = value.Trim();
        if (long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out var seconds)) return TimeSpan.FromSeconds(Math.Min(seconds, int.MaxValue));
        if (DateTimeOffset.TryParseExact(value, "r", CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var when))
        {
            var wait = when - DateTimeOffset.UtcNow;
            return wait > TimeSpan.Zero ? wait : TimeSpan.Zero;
        }
        return null;
    }
}

internal static class LinkHeader
{
    // One link-value of RFC 8288: `<target>` and its parameters, up to the comma before the next.
    private static readonly Regex LinkValue = new(@"<(?<target>[^>]*)>(?<parameters>[^,]*)", RegexOptions.CultureInvariant);
    private static readonly Regex NextRelation = new(@";\s*rel\s*=\s*(""[^""]*\bnext\b[^""]*""|next\b)", RegexOptions.CultureInvariant | RegexOptions.IgnoreCase);

    /// <summary>The target of <c>rel="next"</c>, resolved against the URL of the page that named it.</summary>
    public static Uri? Next(Answer answer)
    {
        var header = answer.Header("Link");
        if (header is null) return null;
        foreach (Match link in LinkValue.Matches(header))
        {
            if (NextRelation.IsMatch(link.Groups["parameters"].Value)) return new Uri(answer.Url, link.Groups["target"].Value.Trim());
        }
        return null;
    }
}
