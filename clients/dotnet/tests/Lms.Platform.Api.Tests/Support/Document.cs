using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace Lms.Platform.Api.Tests.Support;

/// <summary>An operation of openapi.json: its method, path template and header parameters.</summary>
public sealed record DocumentedOperation(string Id, string Method, string Template, IReadOnlyList<string> Headers)
{
    /// <summary>Whether a request path below <c>/api</c> is this operation's.</summary>
    public bool Matches(string method, string path) =>
        method == Method && Regex.IsMatch(path, "^/api" + Regex.Replace(Regex.Escape(Template), @"\\\{[^}]+}", "[^/?]+") + "$");
}

/// <summary>openapi.json at the repository's root, the document the client is generated from.</summary>
public static class Document
{
    private static readonly string[] Methods = ["get", "put", "post", "delete", "patch", "head", "options"];

    public static IReadOnlyList<DocumentedOperation> Operations { get; } = Read();

    private static List<DocumentedOperation> Read()
    {
        var folder = new DirectoryInfo(AppContext.BaseDirectory);
        while (folder is not null && !File.Exists(Path.Combine(folder.FullName, "openapi.json"))) folder = folder.Parent;
        using var document = JsonDocument.Parse(File.ReadAllText(Path.Combine(folder?.FullName ?? throw new FileNotFoundException("No openapi.json above the tests"), "openapi.json")));
        var root = document.RootElement;
        var operations = new List<DocumentedOperation>();
        foreach (var path in root.GetProperty("paths").EnumerateObject())
        {
            foreach (var method in Methods)
            {
                if (!path.Value.TryGetProperty(method, out var operation) || !operation.TryGetProperty("operationId", out var id)) continue;
                var headers = operation.TryGetProperty("parameters", out var parameters)
                    ? parameters.EnumerateArray().Select((parameter) => Resolve(root, parameter)).Where((parameter) => parameter.GetProperty("in").GetString() == "header").Select((parameter) => parameter.GetProperty("name").GetString()!).ToList()
                    : [];
                operations.Add(new DocumentedOperation(id.GetString()!, method.ToUpperInvariant(), path.Name, headers));
            }
        }
        return operations;
    }

    private static JsonElement Resolve(JsonElement root, JsonElement value)
    {
        if (!value.TryGetProperty("$ref", out var reference)) return value;
        var target = root;
        foreach (var part in reference.GetString()!.TrimStart('#', '/').Split('/')) target = target.GetProperty(part);
        return target;
    }
}
