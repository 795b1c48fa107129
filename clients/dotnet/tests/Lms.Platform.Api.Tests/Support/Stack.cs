using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net.Http;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json;
using System.Threading;
using System.Threading.Tasks;

namespace Lms.Platform.Api.Tests.Support;

/// <summary>
/// The running API the tests call, and tokens from its identity provider, as a real client gets them.
///
/// <c>npm test</c> runs these tests against the local stack it starts (test/openapi/dotnet-client.stack.test.ts)
/// and gives them through the environment: LMS_TEST_API_BASE_URL (the API, <c>/api</c> included),
/// LMS_TEST_AUTHORITY_HOST (the local identity provider), LMS_TEST_CA_CERT (the certificate it
/// serves), LMS_TEST_CLIENT_ID, and LMS_TEST_HOME_TENANT and LMS_TEST_OTHER_TENANT (the two local
/// tenants). Against <c>npm start</c>, take them from .local/identity/provider.json.
/// </summary>
public static class Stack
{
    private static readonly ConcurrentDictionary<(string Tenant, string Role), Lazy<Task<string>>> Tokens = new();
    private static readonly Lazy<HttpClient> IdentityProvider = new(TrustingTheProvider);

    public static Uri ApiBaseUrl => new(Setting("LMS_TEST_API_BASE_URL"));

    /// <summary>The API's scheme and host, where a test server forwards to.</summary>
    public static string ApiOrigin => ApiBaseUrl.GetLeftPart(UriPartial.Authority);

    /// <summary>A client of the home tenant whose token is a callback, as Azure.Identity's would be.</summary>
    public static LmsClient Client(string role = "LMS.Admin", bool otherTenant = false, Uri? baseUrl = null, LmsClientOptions? options = null) =>
        new(baseUrl ?? ApiBaseUrl, (cancellationToken) => new ValueTask<string>(TokenAsync(role, otherTenant, cancellationToken)), options);

    /// <summary>An access token from the local identity provider's token endpoint; kept for reuse.</summary>
    public static Task<string> TokenAsync(string role = "LMS.Admin", bool otherTenant = false, CancellationToken cancellationToken = default)
    {
        var tenant = Setting(otherTenant ? "LMS_TEST_OTHER_TENANT" : "LMS_TEST_HOME_TENANT");
        return Tokens.GetOrAdd((tenant, role), (key) => new Lazy<Task<string>>(() => FetchTokenAsync(key.Tenant, key.Role))).Value.WaitAsync(cancellationToken);
    }

    /// <summary>An owner no other test uses, so a test can list exactly its own projects.</summary>
    public static string UniqueEmail(string label) => $"{label}-{Guid.NewGuid().ToString("N")[..8]}@contoso.test";

    /// <summary>The first non-null result of <paramref name="condition"/>, tried until the deadline.</summary>
    public static async Task<T> WaitFor<T>(Func<Task<T?>> condition, TimeSpan timeout, string what)
        where T : class
    {
        var clock = Stopwatch.StartNew();
        while (true)
        {
            if (await condition().ConfigureAwait(false) is { } result) return result;
            if (clock.Elapsed > timeout) throw new TimeoutException($"Waited {timeout.TotalSeconds} s for {what}");
            await Task.Delay(50).ConfigureAwait(false);
        }
    }

    private static async Task<string> FetchTokenAsync(string tenant, string role)
    {
        var clientId = Setting("LMS_TEST_CLIENT_ID");
        using var form = new FormUrlEncodedContent(new Dictionary<string, string>
        {
            ["grant_type"] = "password",
            ["client_id"] = clientId,
            ["username"] = "dotnet-client@contoso.test",
            ["password"] = "local",
            ["scope"] = $"api://{clientId}/access_as_user",
            ["roles"] = role,
        });
        using var answer = await IdentityProvider.Value.PostAsync(new Uri($"{Setting("LMS_TEST_AUTHORITY_HOST")}/{tenant}/oauth2/v2.0/token"), form).ConfigureAwait(false);
        var body = await answer.Content.ReadAsStringAsync().ConfigureAwait(false);
        if (!answer.IsSuccessStatusCode) throw new InvalidOperationException($"The token endpoint answered {(int)answer.StatusCode}: {body}");
        using var document = JsonDocument.Parse(body);
        return document.RootElement.GetProperty("access_token").GetString()!;
    }

    /// <summary>An HttpClient that trusts the identity provider's own certificate, and nothing else it was not already trusting.</summary>
    private static HttpClient TrustingTheProvider()
    {
        var authority = X509Certificate2.CreateFromPem(File.ReadAllText(Setting("LMS_TEST_CA_CERT")));
        var handler = new SocketsHttpHandler();
        handler.SslOptions.RemoteCertificateValidationCallback = (_, certificate, _, errors) =>
        {
            if (errors == SslPolicyErrors.None) return true;
            if (certificate is null || errors != SslPolicyErrors.RemoteCertificateChainErrors) return false;
            using var chain = new X509Chain();
            chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
            chain.ChainPolicy.CustomTrustStore.Add(authority);
            chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
            return chain.Build(new X509Certificate2(certificate));
        };
        return new HttpClient(handler);
    }

    private static string Setting(string name) =>
        Environment.GetEnvironmentVariable(name) is { Length: > 0 } value
            ? value
            : throw new InvalidOperationException($"{name} is not set: run these tests through `npm test`, or set what Support/Stack.cs names.");
}
