using System;
using System.Text.Json;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>The generated records read what version 1 may send, and write requests as the API reads them.</summary>
public sealed class ModelTests
{
    private const string Project = """{"id":"PRJ-1001","name":"Read","description":"","status":"Paused","owner":"kim@contoso.test","members":["kim@contoso.test"],"createdAt":"2026-11-21T09:30:00.000Z","updatedAt":"2026-11-21T09:30:00.000Z","createdBy":"oid","etag":"\"v1\"","addedLater":{"any":"thing"}}""";

    [Fact]
    public void An_enum_value_added_later_reads_as_itself_and_fields_added_later_are_ignored()
    {
        var project = JsonSerializer.Deserialize(Project, LmsJsonContext.Default.Project)!;
        Assert.Equal("Paused", project.Status.ToString());
        Assert.NotEqual(ProjectStatus.Active, project.Status);
        Assert.Equal(new ProjectStatus("Paused"), project.Status);
        Assert.Equal(new DateTimeOffset(2026, 11, 21, 9, 30, 0, TimeSpan.Zero), project.CreatedAt);
        Assert.Contains("\"status\":\"Paused\"", JsonSerializer.Serialize(project, LmsJsonContext.Default.Project), StringComparison.Ordinal);
    }

    [Fact]
    public void A_required_field_that_is_missing_is_an_error_not_a_null()
    {
        var withoutName = Project.Replace("\"name\":\"Read\",", string.Empty, StringComparison.Ordinal);
        var refused = Assert.Throws<JsonException>(() => JsonSerializer.Deserialize(withoutName, LmsJsonContext.Default.Project));
        Assert.Contains("name", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void An_optional_field_is_sent_only_when_set_and_null_is_sent_as_null()
    {
        Assert.Equal("""{"title":"Only this"}""", JsonSerializer.Serialize(new UpdateTaskRequest { Title = "Only this" }, LmsJsonContext.Default.UpdateTaskRequest));
        Assert.Equal("""{"assignee":null}""", JsonSerializer.Serialize(new UpdateTaskRequest { Assignee = null }, LmsJsonContext.Default.UpdateTaskRequest));
        Assert.Equal("""{"dueDate":"2027-01-15"}""", JsonSerializer.Serialize(new UpdateTaskRequest { DueDate = "2027-01-15" }, LmsJsonContext.Default.UpdateTaskRequest));
        Assert.Equal("""{"active":false}""", JsonSerializer.Serialize(new UpdateWebhookRequest { Active = false }, LmsJsonContext.Default.UpdateWebhookRequest));
    }
}
