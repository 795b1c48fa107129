using System;
using System.Text.Json;
using System.Text.Json.Serialization;
using System.Text.Json.Serialization.Metadata;

namespace Lms.Platform.Api;

/// <summary>
/// A field of a request that may be left out or set, null included: <c>Assignee = null</c> clears a
/// task's assignee, while leaving <c>Assignee</c> unset keeps it.
/// </summary>
/// <typeparam name="T">The field's type.</typeparam>
public readonly struct Optional<T> : IEquatable<Optional<T>>
{
    /// <summary>A field set to <paramref name="value"/>, null included.</summary>
    public Optional(T value)
    {
        Value = value;
        IsSet = true;
    }

    /// <summary>Whether the field is sent.</summary>
    public bool IsSet { get; }

    /// <summary>The value sent, when <see cref="IsSet"/>.</summary>
    public T Value { get; }

    /// <summary>A field set to <paramref name="value"/>.</summary>
    public static implicit operator Optional<T>(T value) => new(value);

    /// <inheritdoc />
    public bool Equals(Optional<T> other) => IsSet == other.IsSet && Equals(Value, other.Value);

    /// <inheritdoc />
    public override bool Equals(object? obj) => obj is Optional<T> other && Equals(other);

    /// <inheritdoc />
    public override int GetHashCode() => IsSet ? Value?.GetHashCode() ?? 1 : 0;

    /// <summary>The value, "null", or "(not set)".</summary>
    public override string ToString() => IsSet ? Value?.ToString() ?? "null" : "(not set)";

    /// <summary>Whether both are unset, or set to equal values.</summary>
    public static bool operator ==(Optional<T> left, Optional<T> right) => left.Equals(right);

    /// <summary>Whether they differ.</summary>
    public static bool operator !=(Optional<T> left, Optional<T> right) => !left.Equals(right);
}

/// <summary>Writes an <see cref="Optional{T}"/> as its value; the property's <c>JsonIgnore</c> leaves an unset one out.</summary>
internal sealed class OptionalConverter<T> : JsonConverter<Optional<T?>>
{
    public override Optional<T?> Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        new(JsonSerializer.Deserialize(ref reader, TypeInfo(options)));

    public override void Write(Utf8JsonWriter writer, Optional<T?> value, JsonSerializerOptions options)
    {
        if (value.Value is null) writer.WriteNullValue();
        else JsonSerializer.Serialize(writer, value.Value, TypeInfo(options));
    }

    // The context's own metadata for T: no reflection, so trimming keeps what it needs.
    private static JsonTypeInfo<T?> TypeInfo(JsonSerializerOptions options) => (JsonTypeInfo<T?>)options.GetTypeInfo(typeof(T));
}
