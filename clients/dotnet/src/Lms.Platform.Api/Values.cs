using System.Collections.Generic;
using System.Linq;
using System.Text.Json;

namespace Lms.Platform.Api;

/// <summary>The equality of the generated records that hold lists or raw JSON: by content, not by reference.</summary>
internal static class Values
{
    public static bool Equal<T>(IReadOnlyList<T>? left, IReadOnlyList<T>? right) =>
        ReferenceEquals(left, right) || (left is not null && right is not null && left.SequenceEqual(right));

    public static bool Equal(JsonElement left, JsonElement right) =>
        left.ValueKind == right.ValueKind && (left.ValueKind == JsonValueKind.Undefined || left.GetRawText() == right.GetRawText());

    public static bool Equal(JsonElement? left, JsonElement? right) =>
        left is null ? right is null : right is not null && Equal(left.Value, right.Value);

    public static int Hash(params object?[] values)
    {
        unchecked
        {
            var hash = 17;
            foreach (var value in values) hash = (hash * 31) + (value?.GetHashCode() ?? 0);
            return hash;
        }
    }
}
