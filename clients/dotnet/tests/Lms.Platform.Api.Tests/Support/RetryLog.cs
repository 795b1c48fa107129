using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Globalization;
using System.Linq;

namespace Lms.Platform.Api.Tests.Support;

/// <summary>One event of the client's EventSource.</summary>
public sealed record LoggedEvent(string Name, string Request, string Reason, IReadOnlyDictionary<string, object?> Fields)
{
    public long Delay => Convert.ToInt64(Fields["delayMilliseconds"], CultureInfo.InvariantCulture);
}

/// <summary>Listens to the client's EventSource, as a logging bridge would, and keeps what it writes.</summary>
public sealed class RetryLog : EventListener
{
    private ConcurrentQueue<LoggedEvent>? _events;

    /// <summary>The events about requests to a server of a test's own.</summary>
    public IReadOnlyList<LoggedEvent> About(TestServer server) => About(server.Port);

    /// <summary>The events about requests to a port of loopback.</summary>
    public IReadOnlyList<LoggedEvent> About(int port) =>
        (_events ?? new()).Where((logged) => logged.Request.Contains($"//127.0.0.1:{port}/", StringComparison.Ordinal)).ToList();

    protected override void OnEventSourceCreated(EventSource eventSource)
    {
        if (eventSource.Name == "Lms-Platform-Api") EnableEvents(eventSource, EventLevel.Verbose);
    }

    protected override void OnEventWritten(EventWrittenEventArgs eventData)
    {
        var fields = (eventData.PayloadNames ?? []).Zip(eventData.Payload ?? []).ToDictionary((field) => field.First, (field) => field.Second);
        _events ??= new ConcurrentQueue<LoggedEvent>();
        _events.Enqueue(new LoggedEvent(eventData.EventName ?? string.Empty, (string)fields["request"]!, (string)fields["reason"]!, fields));
    }
}
