using System;
using System.Diagnostics.CodeAnalysis;
using System.Diagnostics.Tracing;

namespace Lms.Platform.Api;

/// <summary>
/// The client's log: each retry and its wait, as the Azure SDK logs, through an EventSource, which
/// every target's base library has (so no logging package to depend on) and which EventListener,
/// dotnet-trace, dotnet-monitor and Azure.Core's AzureEventSourceListener read (its trait
/// <c>AzureEventSource</c> is what the last looks for). Never the token, the query or a body.
/// </summary>
[EventSource(Name = SourceName)]
internal sealed class LmsClientEventSource : EventSource
{
    public const string SourceName = "Lms-Platform-Api";

    public static readonly LmsClientEventSource Log = new();

    private LmsClientEventSource()
        : base(EventSourceSettings.EtwSelfDescribingEventFormat, "AzureEventSource", "true")
    {
    }

    [Event(1, Level = EventLevel.Warning, Message = "{0}: retry {2} after {1}, in {3} ms")]
    public void Retrying(string request, string reason, int attempt, long delayMilliseconds)
    {
        if (IsEnabled(EventLevel.Warning, EventKeywords.All)) WriteEvent(1, request, reason, attempt, delayMilliseconds);
    }

    [Event(2, Level = EventLevel.Warning, Message = "{0}: not retried after {1}: Retry-After asks for {2} ms, more than MaxRetryDelay")]
    public void RetryDeclined(string request, string reason, long delayMilliseconds)
    {
        if (IsEnabled(EventLevel.Warning, EventKeywords.All)) WriteEvent(2, request, reason, delayMilliseconds);
    }

    [Event(3, Level = EventLevel.Warning, Message = "{0}: gave up after {1}, with {2} retries made")]
    public void RetriesExhausted(string request, string reason, int retries)
    {
        if (IsEnabled(EventLevel.Warning, EventKeywords.All)) WriteEvent(3, request, reason, retries);
    }

    // The typed WriteEvent overloads stop at three arguments of these kinds; these write the events
    // without boxing them into an object array (which trimming cannot follow).
    [NonEvent]
#if NET8_0_OR_GREATER
    [UnconditionalSuppressMessage("ReflectionAnalysis", "IL2026", Justification = "Strings and integers only: nothing for trimming to remove.")]
#endif
    private unsafe void WriteEvent(int eventId, string first, string second, int third, long fourth)
    {
        fixed (char* firstChars = first)
        fixed (char* secondChars = second)
        {
            var data = stackalloc EventData[4];
            data[0] = new EventData { DataPointer = (IntPtr)firstChars, Size = (first.Length + 1) * sizeof(char) };
            data[1] = new EventData { DataPointer = (IntPtr)secondChars, Size = (second.Length + 1) * sizeof(char) };
            data[2] = new EventData { DataPointer = (IntPtr)(&third), Size = sizeof(int) };
            data[3] = new EventData { DataPointer = (IntPtr)(&fourth), Size = sizeof(long) };
            WriteEventCore(eventId, 4, data);
        }
    }

    [NonEvent]
#if NET8_0_OR_GREATER
    [UnconditionalSuppressMessage("ReflectionAnalysis", "IL2026", Justification = "Strings and integers only: nothing for trimming to remove.")]
#endif
    private unsafe void WriteEvent(int eventId, string first, string second, long third)
    {
        fixed (char* firstChars = first)
        fixed (char* secondChars = second)
        {
            var data = stackalloc EventData[3];
            data[0] = new EventData { DataPointer = (IntPtr)firstChars, Size = (first.Length + 1) * sizeof(char) };
            data[1] = new EventData { DataPointer = (IntPtr)secondChars, Size = (second.Length + 1) * sizeof(char) };
            data[2] = new EventData { DataPointer = (IntPtr)(&third), Size = sizeof(long) };
            WriteEventCore(eventId, 3, data);
        }
    }

    [NonEvent]
#if NET8_0_OR_GREATER
    [UnconditionalSuppressMessage("ReflectionAnalysis", "IL2026", Justification = "Strings and integers only: nothing for trimming to remove.")]
#endif
    private unsafe void WriteEvent(int eventId, string first, string second, int third)
    {
        fixed (char* firstChars = first)
        fixed (char* secondChars = second)
        {
            var data = stackalloc EventData[3];
            data[0] = new EventData { DataPointer = (IntPtr)firstChars, Size = (first.Length + 1) * sizeof(char) };
            data[1] = new EventData { DataPointer = (IntPtr)secondChars, Size = (second.Length + 1) * sizeof(char) };
            data[2] = new EventData { DataPointer = (IntPtr)(&third), Size = sizeof(int) };
            WriteEventCore(eventId, 3, data);
        }
    }
}
