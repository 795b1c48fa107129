using System;
using System.Collections.Generic;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Net.Sockets;
using System.Runtime.ExceptionServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api;

/// <summary>
/// Sends one operation: its URL below the base URL, the token, the headers, the timeout and the retries.
///
/// Retries repeat only what the API cannot have done twice. A 429 means it did not act, so any
/// request is retried after one; so is a request that provably never left (no connection could be
/// made). A 503, a timeout or a connection lost after sending are retried only when a repeat is
/// harmless: GET, PUT, DELETE, and creates, which carry an <c>Idempotency-Key</c>. Waits follow
/// <c>Retry-After</c>, else grow from half a second; a wait longer than <c>MaxRetryDelay</c> is not
/// made, and the answer is given as it is.
///
/// The token goes to the base URL's origin only: the client follows no redirect, and a <c>Link</c>
/// or <c>Location</c> that points elsewhere is refused (<see cref="LmsUnsafeResponseException"/>).
/// </summary>
internal sealed class Pipeline : IDisposable
{
    private static readonly HashSet<string> RepeatableMethods = new(StringComparer.Ordinal) { "GET", "HEAD", "PUT", "DELETE" };
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(500);
    private static readonly string UserAgent = $"lms-platform-api-dotnet/{LmsClient.ApiVersion}";
    private readonly Uri _baseUrl;
    private readonly Func<CancellationToken, ValueTask<string>> _token;
    private readonly HttpClient _http;
    private readonly bool _ownsHttp;
    private readonly KeyValuePair<string, string>[] _headers;
    private readonly TimeSpan _timeout;
    private readonly int _maxRetries;
    private readonly TimeSpan _maxRetryDelay;
    private readonly Random _jitter = new();

    public Pipeline(Uri baseUrl, Func<CancellationToken, ValueTask<string>> token, LmsClientOptions options)
    {
        if (!baseUrl.IsAbsoluteUri || (baseUrl.Scheme != Uri.UriSchemeHttp && baseUrl.Scheme != Uri.UriSchemeHttps))
        {
            throw new ArgumentException($"The base URL must be an absolute http(s) URL, with /api: not {baseUrl}", nameof(baseUrl));
        }
        if (options.MaxRetries < 0) throw new ArgumentOutOfRangeException(nameof(options), "MaxRetries cannot be negative.");
        if (options.Timeout <= TimeSpan.Zero && options.Timeout != Timeout.InfiniteTimeSpan) throw new ArgumentOutOfRangeException(nameof(options), "Timeout must be positive.");
        _baseUrl = new Uri(baseUrl.GetLeftPart(UriPartial.Path).TrimEnd('/') + "/");
        _token = token;
        _ownsHttp = options.HttpClient is null;
        _http = options.HttpClient ?? new HttpClient(NewHandler()) { Timeout = Timeout.InfiniteTimeSpan };
        _headers = options.Headers.ToArray();
        _timeout = options.Timeout;
        _maxRetries = options.MaxRetries;
        _maxRetryDelay = options.MaxRetryDelay;
    }

    public void Dispose()
    {
        if (_ownsHttp) _http.Dispose();
    }

    /// <summary>The URL of an operation: its path below the base URL with each parameter escaped, and its query.</summary>
    public Uri UrlOf(Operation operation, IEnumerable<KeyValuePair<string, string>>? path = null, IEnumerable<KeyValuePair<string, string>>? query = null)
    {
        var route = new StringBuilder(operation.Path.TrimStart('/'));
        foreach (var parameter in path ?? Enumerable.Empty<KeyValuePair<string, string>>())
        {
            if (string.IsNullOrEmpty(parameter.Value)) throw new ArgumentException($"{parameter.Key} cannot be empty.", parameter.Key);
            route.Replace("{" + parameter.Key + "}", Uri.EscapeDataString(parameter.Value));
        }
        var pairs = (query ?? Enumerable.Empty<KeyValuePair<string, string>>()).Select((pair) => Uri.EscapeDataString(pair.Key) + "=" + Uri.EscapeDataString(pair.Value)).ToList();
        if (pairs.Count > 0) route.Append('?').Append(string.Join("&", pairs));
        return new Uri(_baseUrl, route.ToString());
    }

    /// <summary>Refuses a URL an answer named on another origin than the base URL's, so the token never goes there.</summary>
    public void EnsureSameOrigin(Uri target, string named)
    {
        if (Uri.Compare(target, _baseUrl, UriComponents.SchemeAndServer, UriFormat.Unescaped, StringComparison.OrdinalIgnoreCase) != 0)
        {
            throw new LmsUnsafeResponseException($"The answer's {named} points at {target.GetLeftPart(UriPartial.Authority)}, not at the base URL's origin {_baseUrl.GetLeftPart(UriPartial.Authority)}: the client does not follow it, so that the token goes nowhere else.", target);
        }
    }

    /// <summary>Sends an operation with its retries and gives its answer; one that is not 2xx is thrown as <see cref="LmsApiException"/>.</summary>
    public async Task<Answer> SendAsync(Operation operation, Uri url, byte[]? body, IEnumerable<KeyValuePair<string, string?>>? headers, CancellationToken cancellationToken, bool acceptNotModified = false)
    {
        EnsureSameOrigin(url, "URL");
        var given = (headers ?? Enumerable.Empty<KeyValuePair<string, string?>>()).Where((header) => header.Value is not null).Select((header) => new KeyValuePair<string, string>(header.Key, header.Value!)).ToList();
        if (operation.IdempotencyKey && !given.Any((header) => IsNamed(header.Key, "Idempotency-Key")))
        {
            // A key of the client's own makes the create safe to retry: the API answers a repeat with the first result.
            given.Add(new("Idempotency-Key", Guid.NewGuid().ToString()));
        }
        var repeatable = RepeatableMethods.Contains(operation.Method) || given.Any((header) => IsNamed(header.Key, "Idempotency-Key"));
        var answer = await SendWithRetriesAsync(operation.Method, url, body, given, repeatable, cancellationToken).ConfigureAwait(false);
        if (answer.Status is >= 200 and < 300 || (answer.Status == 304 && acceptNotModified))
        {
            if (answer.Header("Location") is { } location) EnsureSameOrigin(new Uri(answer.Url, location), "Location");
            return answer;
        }
        throw LmsApiException.FromAnswer(answer);
    }

    private async Task<Answer> SendWithRetriesAsync(string method, Uri url, byte[]? body, List<KeyValuePair<string, string>> headers, bool repeatable, CancellationToken cancellationToken)
    {
        var request = $"{method} {url.GetLeftPart(UriPartial.Path)}";
        for (var attempt = 0; ; attempt++)
        {
            cancellationToken.ThrowIfCancellationRequested();
            Answer? answer = null;
            ExceptionDispatchInfo? failure = null;
            string reason;
            bool retriable;
            try
            {
                answer = await SendOnceAsync(method, url, body, headers, cancellationToken).ConfigureAwait(false);
                reason = answer.Status.ToString(System.Globalization.CultureInfo.InvariantCulture);
                retriable = answer.Status == 429 || (answer.Status == 503 && repeatable);
            }
            catch (OperationCanceledException timedOut) when (!cancellationToken.IsCancellationRequested)
            {
                failure = ExceptionDispatchInfo.Capture(new TimeoutException($"{request} had no answer within {_timeout.TotalSeconds:0.###} s.", timedOut));
                reason = "a timeout";
                retriable = repeatable;
            }
            catch (HttpRequestException lost)
            {
                failure = ExceptionDispatchInfo.Capture(lost);
                var notSent = NeverSent(lost);
                reason = notSent ? "a connection that could not be made" : "a connection lost after sending";
                retriable = repeatable || notSent;
            }

            if (!retriable || attempt >= _maxRetries)
            {
                if (retriable) LmsClientEventSource.Log.RetriesExhausted(request, reason, attempt);
                failure?.Throw();
                return answer!;
            }
            var delay = (answer is null ? null : RetryAfterHeader.Parse(answer.Headers)) ?? Backoff(attempt);
            if (delay > _maxRetryDelay)
            {
                LmsClientEventSource.Log.RetryDeclined(request, reason, (long)delay.TotalMilliseconds);
                return answer!;
            }
            LmsClientEventSource.Log.Retrying(request, reason, attempt + 1, (long)delay.TotalMilliseconds);
            await Task.Delay(delay, cancellationToken).ConfigureAwait(false);
        }
    }

    private async Task<Answer> SendOnceAsync(string method, Uri url, byte[]? body, List<KeyValuePair<string, string>> headers, CancellationToken cancellationToken)
    {
        using var message = new HttpRequestMessage(new HttpMethod(method), url);
        message.Headers.TryAddWithoutValidation("Accept", "application/json");
        message.Headers.TryAddWithoutValidation("User-Agent", UserAgent);
        foreach (var header in _headers.Concat(headers))
        {
            message.Headers.Remove(header.Key);
            message.Headers.TryAddWithoutValidation(header.Key, header.Value);
        }
        // Asked before each attempt, so a provider that refreshes tokens (Azure.Identity, MSAL) gives a live one.
        var token = await _token(cancellationToken).ConfigureAwait(false);
        message.Headers.Authorization = new AuthenticationHeaderValue("Bearer", token);
        if (body is not null)
        {
            message.Content = new ByteArrayContent(body);
            message.Content.Headers.ContentType = new MediaTypeHeaderValue("application/json") { CharSet = "utf-8" };
        }

        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        if (_timeout != Timeout.InfiniteTimeSpan) attempt.CancelAfter(_timeout);
        using var response = await _http.SendAsync(message, HttpCompletionOption.ResponseContentRead, attempt.Token).ConfigureAwait(false);
        if (response.RequestMessage?.RequestUri is { } asked && asked != url)
        {
            // Only an injected HttpClient whose handler follows redirects gets here.
            throw new LmsUnsafeResponseException($"The HttpClient followed a redirect from {url} to {asked}; give LmsClient an HttpClient whose handler has AllowAutoRedirect = false.", asked);
        }
        var content = await response.Content.ReadAsByteArrayAsync().ConfigureAwait(false);
        var received = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (var header in response.Headers.Concat(response.Content.Headers)) received[header.Key] = string.Join(", ", header.Value);
        return new Answer((int)response.StatusCode, response.ReasonPhrase ?? response.StatusCode.ToString(), received, content, url);
    }

    /// <summary>Whether the request provably never left: no connection could be made, so the API cannot have acted on it.</summary>
    private static bool NeverSent(HttpRequestException failure)
    {
#if NET8_0_OR_GREATER
        return failure.HttpRequestError is HttpRequestError.NameResolutionError or HttpRequestError.ConnectionError or HttpRequestError.SecureConnectionError or HttpRequestError.ProxyTunnelError;
#else
        for (Exception? cause = failure; cause is not null; cause = cause.InnerException)
        {
            if (cause is SocketException { SocketErrorCode: SocketError.ConnectionRefused or SocketError.HostNotFound or SocketError.HostUnreachable or SocketError.NetworkUnreachable or SocketError.TryAgain or SocketError.AddressNotAvailable })
            {
                return true;
            }
        }
        return false;
#endif
    }

    /// <summary>Half a second, then doubling, each with jitter so that many clients do not retry in step.</summary>
    private TimeSpan Backoff(int attempt)
    {
        var ceiling = Math.Min(_maxRetryDelay.TotalMilliseconds, FirstBackoff.TotalMilliseconds * Math.Pow(2, attempt));
        double share;
        lock (_jitter) share = 0.5 + (_jitter.NextDouble() / 2);
        return TimeSpan.FromMilliseconds(ceiling * share);
    }

    private static bool IsNamed(string name, string wanted) => string.Equals(name, wanted, StringComparison.OrdinalIgnoreCase);

    private static HttpMessageHandler NewHandler()
    {
#if NET8_0_OR_GREATER
        // The API never redirects; anything that does is not followed with the token. Pooled
        // connections are renewed so that a DNS change (a slot swap) is seen.
        return new SocketsHttpHandler { AllowAutoRedirect = false, UseCookies = false, AutomaticDecompression = DecompressionMethods.All, PooledConnectionLifetime = TimeSpan.FromMinutes(5) };
#else
        return new HttpClientHandler { AllowAutoRedirect = false, UseCookies = false, AutomaticDecompression = DecompressionMethods.GZip | DecompressionMethods.Deflate };
#endif
    }
}
