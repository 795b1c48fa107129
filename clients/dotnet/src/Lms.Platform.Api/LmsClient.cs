using System;
using System.Collections.Generic;
using System.Net.Http;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api;

/// <summary>
/// The LMS Platform API: one property per resource (<see cref="Projects"/>, <see cref="Tasks"/>, …),
/// each method one operation. Make one client and keep it: it is safe to share between threads.
/// </summary>
public partial class LmsClient : IDisposable
{
    private readonly Pipeline _pipeline;

    /// <summary>A client that sends the same token with every request.</summary>
    /// <param name="baseUrl">The API's, <c>/api</c> included: <c>https://&lt;app&gt;.azurewebsites.net/api</c>, or <c>http://localhost:7071/api</c> with <c>npm start</c>.</param>
    /// <param name="token">An access token for the API.</param>
    /// <param name="options">Headers, timeout, retries, an HttpClient of your own.</param>
    public LmsClient(Uri baseUrl, string token, LmsClientOptions? options = null)
        : this(baseUrl, Constant(token ?? throw new ArgumentNullException(nameof(token))), options)
    {
    }

    /// <summary>
    /// A client that asks <paramref name="token"/> for a token before each request (each retry
    /// included): give it one that caches until the token nears expiry, as Azure.Identity's
    /// credentials and MSAL do.
    /// </summary>
    /// <param name="baseUrl">The API's, <c>/api</c> included.</param>
    /// <param name="token">Gives an access token for the API.</param>
    /// <param name="options">Headers, timeout, retries, an HttpClient of your own.</param>
    public LmsClient(Uri baseUrl, Func<CancellationToken, ValueTask<string>> token, LmsClientOptions? options = null)
    {
        if (baseUrl is null) throw new ArgumentNullException(nameof(baseUrl));
        if (token is null) throw new ArgumentNullException(nameof(token));
        _pipeline = new Pipeline(baseUrl, token, options ?? new LmsClientOptions());
        Projects = new ProjectsResource(_pipeline);
        Tasks = new TasksResource(_pipeline);
        Users = new UsersResource(_pipeline);
        Rag = new RagResource(_pipeline);
        Webhooks = new WebhooksResource(_pipeline);
        Events = new EventsResource(_pipeline);
        Docs = new DocsResource(_pipeline);
    }

    /// <summary>Projects: list, create, read, update, delete.</summary>
    public ProjectsResource Projects { get; }

    /// <summary>Tasks: list, create, read, update, delete.</summary>
    public TasksResource Tasks { get; }

    /// <summary>The tenant's users, and the caller.</summary>
    public UsersResource Users { get; }

    /// <summary>The RAG index: rebuilds and their jobs.</summary>
    public RagResource Rag { get; }

    /// <summary>Webhook subscriptions and their deliveries.</summary>
    public WebhooksResource Webhooks { get; }

    /// <summary>The tenant's events of the last 7 days.</summary>
    public EventsResource Events { get; }

    /// <summary>The API's description and reference page.</summary>
    public DocsResource Docs { get; }

    /// <summary>Releases the HttpClient the client made (one given in the options is yours to dispose).</summary>
    public void Dispose()
    {
        _pipeline.Dispose();
        GC.SuppressFinalize(this);
    }

    private static Func<CancellationToken, ValueTask<string>> Constant(string token) => _ => new ValueTask<string>(token);
}

/// <summary>How an <see cref="LmsClient"/> sends its requests.</summary>
public sealed class LmsClientOptions
{
    /// <summary>Headers sent with every request: <c>["Accept-Language"] = "ja"</c> for messages in Japanese.</summary>
    public IDictionary<string, string> Headers { get; } = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);

    /// <summary>How long each attempt may take, from sending to the whole answer (30 s by default); then it fails with a <see cref="TimeoutException"/>.</summary>
    public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How many times a request the client may repeat is retried (3 by default; 0 for never).</summary>
    public int MaxRetries { get; set; } = 3;

    /// <summary>The longest wait before a retry (30 s by default): an answer whose <c>Retry-After</c> asks for longer is given as it is.</summary>
    public TimeSpan MaxRetryDelay { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// An HttpClient of your own (from <c>IHttpClientFactory</c>, say). Its handler must not follow
    /// redirects (<c>AllowAutoRedirect = false</c>): the client refuses an answer that was redirected.
    /// Its own <c>Timeout</c> applies too. Left null, the client makes one and disposes it with itself.
    /// </summary>
    public HttpClient? HttpClient { get; set; }
}
