using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Http;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api.Tests.Support;

/// <summary>One request a test server got, as it came on the wire.</summary>
public sealed record Received(string Method, string Target, IReadOnlyDictionary<string, string> Headers, byte[] Body)
{
    public string Path => Target.Split('?')[0];

    public string Query => Target.Contains('?', StringComparison.Ordinal) ? Target[(Target.IndexOf('?', StringComparison.Ordinal) + 1)..] : string.Empty;

    public string? Header(string name) => Headers.TryGetValue(name, out var value) ? value : null;

    public string Text => Encoding.UTF8.GetString(Body);
}

/// <summary>What a test server does with a request.</summary>
public abstract record Plan
{
    /// <summary>Answers this.</summary>
    public sealed record Answer(int Status, IReadOnlyDictionary<string, string> Headers, string Body) : Plan;

    /// <summary>Passes the request to the API and sends back its answer.</summary>
    public sealed record Forward : Plan;

    /// <summary>Passes the request to the API (when the server forwards), then closes the connection without answering: a network failure after the API acted.</summary>
    public sealed record Drop : Plan;

    /// <summary>Never answers.</summary>
    public sealed record Hang : Plan;

    public static Plan Json(int status, string body, params (string Name, string Value)[] headers) =>
        new Answer(status, headers.Append((Name: "Content-Type", Value: "application/json")).ToDictionary((header) => header.Name, (header) => header.Value, StringComparer.OrdinalIgnoreCase), body);

    public static Plan Error(int status, string error, params (string Name, string Value)[] headers) =>
        Json(status, $$"""{"error":"{{error}}","message":"A test server's {{status}}.","status":{{status}},"requestId":"test-{{status}}"}""", headers);

    public static Plan Empty(int status, params (string Name, string Value)[] headers) =>
        new Answer(status, headers.ToDictionary((header) => header.Name, (header) => header.Value, StringComparer.OrdinalIgnoreCase), string.Empty);
}

/// <summary>
/// A real HTTP/1.1 server on loopback that records each request and does what the plan says with
/// it (the n-th request from 0). It closes the connection after each answer, so every request of a
/// client comes on a connection of its own.
/// </summary>
public sealed class TestServer : IAsyncDisposable
{
    private static readonly HttpClient Api = new(new SocketsHttpHandler { AllowAutoRedirect = false, UseCookies = false });
    private readonly Func<int, Received, Plan> _plan;
    private readonly string? _forwardTo;
    private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
    private readonly CancellationTokenSource _stopping = new();
    private readonly ConcurrentQueue<Received> _received = new();
    private readonly Task _accepting;
    private int _count;

    public TestServer(Func<int, Received, Plan> plan, string? forwardTo = null)
    {
        _plan = plan;
        _forwardTo = forwardTo;
        _listener.Start();
        _accepting = AcceptAsync();
    }

    public int Port => ((IPEndPoint)_listener.LocalEndpoint).Port;

    public string Url => $"http://127.0.0.1:{Port}";

    public IReadOnlyList<Received> Received => _received.ToArray();

    public async ValueTask DisposeAsync()
    {
        await _stopping.CancelAsync();
        _listener.Stop();
        await _accepting.ConfigureAwait(false);
        _stopping.Dispose();
    }

    private async Task AcceptAsync()
    {
        var connections = new List<Task>();
        try
        {
            while (true)
            {
                var client = await _listener.AcceptTcpClientAsync(_stopping.Token).ConfigureAwait(false);
                connections.Add(ServeAsync(client));
            }
        }
        catch (Exception stopped) when (stopped is OperationCanceledException or SocketException or ObjectDisposedException)
        {
        }
        await Task.WhenAll(connections).ConfigureAwait(false);
    }

    private async Task ServeAsync(TcpClient client)
    {
        using (client)
        {
            try
            {
                var stream = client.GetStream();
                var request = await ReadAsync(stream).ConfigureAwait(false);
                if (request is null) return;
                var index = Interlocked.Increment(ref _count) - 1;
                _received.Enqueue(request);
                switch (_plan(index, request))
                {
                    case Plan.Answer answer:
                        await WriteAsync(stream, answer.Status, answer.Headers, Encoding.UTF8.GetBytes(answer.Body)).ConfigureAwait(false);
                        break;
                    case Plan.Forward:
                        var (status, headers, body) = await ForwardAsync(request).ConfigureAwait(false);
                        await WriteAsync(stream, status, headers, body).ConfigureAwait(false);
                        break;
                    case Plan.Drop:
                        if (_forwardTo is not null) await ForwardAsync(request).ConfigureAwait(false);
                        client.Client.Close(0);
                        break;
                    case Plan.Hang:
                        await Task.Delay(Timeout.Infinite, _stopping.Token).ConfigureAwait(false);
                        break;
                }
            }
            catch (Exception ended) when (ended is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
            {
                // The client went away, or the server is stopping.
            }
        }
    }

    private static async Task<Received?> ReadAsync(NetworkStream stream)
    {
        var head = new List<byte>();
        var one = new byte[1];
        while (!(head.Count >= 4 && head[^4] == '\r' && head[^3] == '\n' && head[^2] == '\r' && head[^1] == '\n'))
        {
            if (await stream.ReadAsync(one).ConfigureAwait(false) == 0) return null;
            head.Add(one[0]);
        }
        var lines = Encoding.ASCII.GetString(head.ToArray()).Split("\r\n", StringSplitOptions.RemoveEmptyEntries);
        var start = lines[0].Split(' ');
        var headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (var line in lines.Skip(1))
        {
            var colon = line.IndexOf(':', StringComparison.Ordinal);
            var name = line[..colon].Trim();
            var value = line[(colon + 1)..].Trim();
            headers[name] = headers.TryGetValue(name, out var earlier) ? $"{earlier}, {value}" : value;
        }
        var length = headers.TryGetValue("Content-Length", out var given) ? int.Parse(given, CultureInfo.InvariantCulture) : 0;
        var body = new byte[length];
        await stream.ReadExactlyAsync(body).ConfigureAwait(false);
        return new Received(start[0], start[1], headers, body);
    }

    private static async Task WriteAsync(NetworkStream stream, int status, IReadOnlyDictionary<string, string> headers, byte[] body)
    {
        var head = new StringBuilder().Append(CultureInfo.InvariantCulture, $"HTTP/1.1 {status} {Reason(status)}\r\n");
        foreach (var header in headers) head.Append(CultureInfo.InvariantCulture, $"{header.Key}: {header.Value}\r\n");
        head.Append(CultureInfo.InvariantCulture, $"Content-Length: {body.Length}\r\nConnection: close\r\n\r\n");
        await stream.WriteAsync(Encoding.UTF8.GetBytes(head.ToString())).ConfigureAwait(false);
        await stream.WriteAsync(body).ConfigureAwait(false);
        await stream.FlushAsync().ConfigureAwait(false);
    }

    private async Task<(int Status, IReadOnlyDictionary<string, string> Headers, byte[] Body)> ForwardAsync(Received request)
    {
        // Host goes along, as a reverse proxy keeps it: the API's answer then names this server, as the client called it.
        var hop = new HashSet<string>(StringComparer.OrdinalIgnoreCase) { "Connection", "Content-Length", "Transfer-Encoding", "Keep-Alive", "Content-Type" };
        using var outgoing = new HttpRequestMessage(new HttpMethod(request.Method), new Uri(new Uri(_forwardTo ?? throw new InvalidOperationException("This server forwards nowhere.")), request.Target));
        foreach (var header in request.Headers.Where((header) => !hop.Contains(header.Key))) outgoing.Headers.TryAddWithoutValidation(header.Key, header.Value);
        if (request.Body.Length > 0 || request.Headers.ContainsKey("Content-Type"))
        {
            outgoing.Content = new ByteArrayContent(request.Body);
            if (request.Header("Content-Type") is { } type) outgoing.Content.Headers.TryAddWithoutValidation("Content-Type", type);
        }
        using var answer = await Api.SendAsync(outgoing).ConfigureAwait(false);
        var end = new HashSet<string>(StringComparer.OrdinalIgnoreCase) { "Connection", "Content-Length", "Transfer-Encoding", "Keep-Alive", "Date", "Server" };
        var headers = answer.Headers.Concat(answer.Content.Headers).Where((header) => !end.Contains(header.Key)).ToDictionary((header) => header.Key, (header) => string.Join(", ", header.Value), StringComparer.OrdinalIgnoreCase);
        return ((int)answer.StatusCode, headers, await answer.Content.ReadAsByteArrayAsync().ConfigureAwait(false));
    }

    private static string Reason(int status) => status switch
    {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        404 => "Not Found",
        409 => "Conflict",
        412 => "Precondition Failed",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Status",
    };
}
