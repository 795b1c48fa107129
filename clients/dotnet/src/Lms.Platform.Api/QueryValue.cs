using System;
using System.Globalization;

namespace Lms.Platform.Api;

/// <summary>A query parameter's value as the API reads it.</summary>
internal static class QueryValue
{
    public static string Of(string value) => value;

    public static string Of(int value) => value.ToString(CultureInfo.InvariantCulture);

    public static string Of(long value) => value.ToString(CultureInfo.InvariantCulture);

    public static string Of(double value) => value.ToString("R", CultureInfo.InvariantCulture);

    public static string Of(bool value) => value ? "true" : "false";

    /// <summary>UTC with milliseconds, the API's one spelling of a time.</summary>
    public static string Of(DateTimeOffset value) => value.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture);

    /// <summary>An enum: its value as the API spells it.</summary>
    public static string Of<T>(T value)
        where T : struct => value.ToString() ?? string.Empty;
}

/// <summary>An operation of the API's document; Schema.g.cs lists them all.</summary>
internal sealed record Operation(string Id, string Method, string Path, bool IdempotencyKey);
