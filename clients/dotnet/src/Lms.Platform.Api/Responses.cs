using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api;

/// <summary>An answer of the API: its status and headers.</summary>
public class LmsResponse
{
    internal LmsResponse(Answer answer)
    {
        Status = answer.Status;
        Headers = answer.Headers;
        var location = answer.Header("Location");
        Location = location is null ? null : new Uri(answer.Url, location);
    }

    /// <summary>The HTTP status: 200, 201, 202, 204.</summary>
    public int Status { get; }

    /// <summary>The answer's headers, by case-insensitive name (<c>Idempotent-Replayed</c>, <c>Retry-After</c>, …).</summary>
    public IReadOnlyDictionary<string, string> Headers { get; }

    /// <summary>The resource's version: send it back as <c>ifMatch</c> to change it only if nobody else has.</summary>
    public string? ETag => Headers.TryGetValue("ETag", out var value) ? value : null;

    /// <summary>A create's URL of what it made, absolute.</summary>
    public Uri? Location { get; }

    /// <summary>Identifies the request in the service's log.</summary>
    public string? RequestId => Headers.TryGetValue("X-Request-Id", out var value) ? value : null;
}

/// <summary>An answer of the API with its body: <see cref="Value"/>, and the answer's ETag and headers.</summary>
/// <typeparam name="T">The body's type.</typeparam>
public sealed class LmsResponse<T> : LmsResponse
{
    internal LmsResponse(Answer answer, T value)
        : base(answer)
    {
        Value = value;
    }

    /// <summary>The body.</summary>
    public T Value { get; }

    /// <summary>The body, where a <typeparamref name="T"/> is wanted.</summary>
    public static implicit operator T(LmsResponse<T> response) => (response ?? throw new ArgumentNullException(nameof(response))).Value;

    internal static LmsResponse<T> Read(Answer answer, JsonTypeInfo<T> type) =>
        new(answer, JsonSerializer.Deserialize(answer.Body, type) ?? throw new JsonException($"{answer.Url.AbsolutePath} answered null"));
}

/// <summary>One page of a list: its items, and the link to the next page.</summary>
/// <typeparam name="T">The items' type.</typeparam>
public sealed class LmsPage<T>
{
    internal LmsPage(IReadOnlyList<T> items, Uri? next, Answer answer)
    {
        Items = items;
        Next = next;
        Headers = answer.Headers;
    }

    /// <summary>The page's items, in the list's order.</summary>
    public IReadOnlyList<T> Items { get; }

    /// <summary>The next page's URL (its <c>Link: rel="next"</c>), or null on the last page.</summary>
    public Uri? Next { get; }

    /// <summary>The answer's headers.</summary>
    public IReadOnlyDictionary<string, string> Headers { get; }
}

/// <summary>
/// The items of a list, fetched a page at a time as <c>await foreach</c> reaches them, following
/// <c>Link: &lt;…&gt;; rel="next"</c> to the last page; <see cref="AsPages"/> gives the pages. Nothing is
/// sent until it is enumerated, and each enumeration starts from the first page again.
/// </summary>
/// <typeparam name="T">The items' type.</typeparam>
public sealed class LmsPageable<T> : IAsyncEnumerable<T>
{
    private readonly Pipeline _pipeline;
    private readonly Operation _operation;
    private readonly Uri _first;
    private readonly JsonTypeInfo<List<T>> _type;
    private readonly CancellationToken _cancellationToken;

    internal LmsPageable(Pipeline pipeline, Operation operation, Uri first, JsonTypeInfo<List<T>> type, CancellationToken cancellationToken)
    {
        _pipeline = pipeline;
        _operation = operation;
        _first = first;
        _type = type;
        _cancellationToken = cancellationToken;
    }

    /// <summary>Each page, until the last. A <c>Link</c> on another origin, or one already followed, ends it with <see cref="LmsUnsafeResponseException"/>.</summary>
    /// <param name="cancellationToken">Stops the paging (with the one the list was asked with).</param>
    public async IAsyncEnumerable<LmsPage<T>> AsPages([EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        using var both = CancellationTokenSource.CreateLinkedTokenSource(_cancellationToken, cancellationToken);
        var followed = new HashSet<string>(StringComparer.Ordinal) { _first.AbsoluteUri };
        for (Uri? page = _first; page is not null;)
        {
            var answer = await _pipeline.SendAsync(_operation, page, null, null, both.Token).ConfigureAwait(false);
            var items = JsonSerializer.Deserialize(answer.Body, _type) ?? throw new JsonException($"{page.AbsolutePath} answered null, not a list");
            var next = LinkHeader.Next(answer);
            if (next is not null)
            {
                _pipeline.EnsureSameOrigin(next, "Link");
                if (!followed.Add(next.AbsoluteUri)) throw new LmsUnsafeResponseException($"The answer's Link names {next.PathAndQuery}, a page already read: paging would never end.", next);
            }
            yield return new LmsPage<T>(items, next, answer);
            page = next;
        }
    }

    /// <summary>Every item of every page, read as the enumeration reaches it.</summary>
    /// <param name="cancellationToken">Stops the paging (with the one the list was asked with).</param>
    public async IAsyncEnumerator<T> GetAsyncEnumerator(CancellationToken cancellationToken = default)
    {
        await foreach (var page in AsPages(cancellationToken).ConfigureAwait(false))
        {
            foreach (var item in page.Items) yield return item;
        }
    }

    /// <summary>Every item of every page, in a list.</summary>
    /// <param name="cancellationToken">Stops the paging.</param>
    public async Task<List<T>> ToListAsync(CancellationToken cancellationToken = default)
    {
        var items = new List<T>();
        await foreach (var page in AsPages(cancellationToken).ConfigureAwait(false)) items.AddRange(page.Items);
        return items;
    }
}
