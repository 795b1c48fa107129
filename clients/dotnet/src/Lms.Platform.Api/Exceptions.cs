using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;
using System.Text.Json;

namespace Lms.Platform.Api;

/// <summary>
/// An answer of the API that is not 2xx (nor the 304 of a conditional read). The subclasses are the
/// answers a caller branches on: <see cref="LmsNotFoundException"/>, <see cref="LmsPreconditionFailedException"/>,
/// <see cref="LmsConflictException"/>, <see cref="LmsThrottledException"/>, <see cref="LmsUnauthorizedException"/>
/// and <see cref="LmsForbiddenException"/>. <see cref="Exception.Message"/> holds the API's message
/// (in Japanese when <c>Accept-Language</c> asked for it), each detail, the status and the request id.
/// </summary>
public class LmsApiException : Exception
{
    /// <summary>An error answer.</summary>
    public LmsApiException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(Describe(status, error, apiMessage, requestId, details))
    {
        Status = status;
        Error = error;
        ApiMessage = apiMessage;
        RequestId = requestId;
        Details = details;
        Body = body;
        Headers = headers;
    }

    /// <summary>The HTTP status: 404, 412, …</summary>
    public int Status { get; }

    /// <summary>The status's short name: <c>Not Found</c>, <c>Precondition Failed</c>, …</summary>
    public string Error { get; }

    /// <summary>The API's own message, alone (<see cref="Exception.Message"/> adds the details, status and request id).</summary>
    public string ApiMessage { get; }

    /// <summary>Identifies the request in the service's log: quote it when reporting a problem.</summary>
    public string? RequestId { get; }

    /// <summary>For a 400: each field or parameter refused, and why. Empty otherwise.</summary>
    public IReadOnlyList<ApiErrorDetail> Details { get; }

    /// <summary>The whole body, with the fields some errors add (<c>Claims</c>, <c>ActiveJobId</c>); null when the answer was not the API's (a proxy's page).</summary>
    public ApiError? Body { get; }

    /// <summary>The answer's headers (<c>Retry-After</c>, <c>WWW-Authenticate</c>), by case-insensitive name.</summary>
    public IReadOnlyDictionary<string, string> Headers { get; }

    /// <summary>How long the answer's <c>Retry-After</c> asks to wait, if it has one.</summary>
    public TimeSpan? RetryAfter => RetryAfterHeader.Parse(Headers);

    internal static LmsApiException FromAnswer(Answer answer)
    {
        var body = Parse(answer.Body);
        var requestId = body?.RequestId ?? answer.Header("X-Request-Id");
        if (body is not null)
        {
            return Create(answer.Status, body.Error, body.Message, requestId, body.Details ?? Array.Empty<ApiErrorDetail>(), body, answer.Headers);
        }
        var text = Encoding.UTF8.GetString(answer.Body).Trim();
        if (text.Length > 500) text = text.Substring(0, 500);
        if (answer.Status is >= 300 and < 400)
        {
            text = $"The client follows no redirect; this one pointed at {answer.Header("Location") ?? "no Location"}.";
        }
        var message = text.Length > 0 ? text : string.Format(CultureInfo.InvariantCulture, "HTTP {0}", answer.Status);
        return Create(answer.Status, answer.Reason, message, requestId, Array.Empty<ApiErrorDetail>(), null, answer.Headers);
    }

    private static LmsApiException Create(int status, string error, string message, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers) =>
        status switch
        {
            401 => new LmsUnauthorizedException(status, error, message, requestId, details, body, headers),
            403 => new LmsForbiddenException(status, error, message, requestId, details, body, headers),
            404 => new LmsNotFoundException(status, error, message, requestId, details, body, headers),
            409 => new LmsConflictException(status, error, message, requestId, details, body, headers),
            412 => new LmsPreconditionFailedException(status, error, message, requestId, details, body, headers),
            429 => new LmsThrottledException(status, error, message, requestId, details, body, headers),
            _ => new LmsApiException(status, error, message, requestId, details, body, headers),
        };

    private static ApiError? Parse(byte[] body)
    {
        if (body.Length == 0) return null;
        try
        {
            return JsonSerializer.Deserialize(body, LmsJsonContext.Default.ApiError);
        }
        catch (JsonException)
        {
            return null;
        }
    }

    private static string Describe(int status, string error, string message, string? requestId, IReadOnlyList<ApiErrorDetail> details)
    {
        var text = new StringBuilder(message);
        if (details.Count > 0) text.Append(' ').Append(string.Join("; ", details.Select((detail) => $"{detail.Path}: {detail.Message}")));
        text.Append(" (").Append(status.ToString(CultureInfo.InvariantCulture)).Append(' ').Append(error);
        if (requestId is not null) text.Append(", request ").Append(requestId);
        return text.Append(')').ToString();
    }
}

/// <summary>401: the token is missing, expired or not for this API (<c>WWW-Authenticate</c> says why).</summary>
public sealed class LmsUnauthorizedException : LmsApiException
{
    /// <inheritdoc />
    public LmsUnauthorizedException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>403: the caller's roles do not allow the operation.</summary>
public sealed class LmsForbiddenException : LmsApiException
{
    /// <inheritdoc />
    public LmsForbiddenException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>404: no such resource in the caller's tenant (another tenant's id is a 404 too).</summary>
public sealed class LmsNotFoundException : LmsApiException
{
    /// <inheritdoc />
    public LmsNotFoundException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>409: the resource's state forbids it (a status move, an archived project, an active RAG job: <c>Body.ActiveJobId</c>).</summary>
public sealed class LmsConflictException : LmsApiException
{
    /// <inheritdoc />
    public LmsConflictException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>412: <c>If-Match</c> named a version the resource no longer has: read it again, then decide.</summary>
public sealed class LmsPreconditionFailedException : LmsApiException
{
    /// <inheritdoc />
    public LmsPreconditionFailedException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>429, left after the client's retries: come back after <see cref="LmsApiException.RetryAfter"/>.</summary>
public sealed class LmsThrottledException : LmsApiException
{
    /// <inheritdoc />
    public LmsThrottledException(int status, string error, string apiMessage, string? requestId, IReadOnlyList<ApiErrorDetail> details, ApiError? body, IReadOnlyDictionary<string, string> headers)
        : base(status, error, apiMessage, requestId, details, body, headers)
    {
    }
}

/// <summary>
/// An answer the client refuses to act on, because acting would send the token, or the request, where
/// the base URL does not point: a <c>Link</c> or <c>Location</c> on another origin, a <c>Link</c>
/// already followed (paging would never end), or a redirect the injected <c>HttpClient</c> followed.
/// </summary>
public sealed class LmsUnsafeResponseException : Exception
{
    /// <summary>A refused answer.</summary>
    public LmsUnsafeResponseException(string message, Uri? target)
        : base(message)
    {
        Target = target;
    }

    /// <summary>Where the answer pointed.</summary>
    public Uri? Target { get; }
}
