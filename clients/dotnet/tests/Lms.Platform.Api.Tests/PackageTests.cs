using System;
using System.Reflection;
using System.Runtime.Versioning;
using Xunit;

namespace Lms.Platform.Api.Tests;

/// <summary>What the test run has loaded.</summary>
public sealed class PackageTests
{
    [Fact]
    public void The_run_tests_the_build_it_names()
    {
        // LMS_TEST_CLIENT_TARGET names the package's build the run was asked for; unset, the one for net10.0.
        var wanted = Environment.GetEnvironmentVariable("LMS_TEST_CLIENT_TARGET") is { Length: > 0 } given ? given : "net10.0";
        var loaded = typeof(LmsClient).Assembly.GetCustomAttribute<TargetFrameworkAttribute>()!.FrameworkName;
        var expected = wanted switch
        {
            "netstandard2.0" => ".NETStandard,Version=v2.0",
            "net8.0" => ".NETCoreApp,Version=v8.0",
            _ => ".NETCoreApp,Version=v10.0",
        };
        Assert.Equal(expected, loaded);
    }

    [Fact]
    public void The_package_version_is_the_api_version()
    {
        Assert.Equal(LmsClient.ApiVersion, typeof(LmsClient).Assembly.GetName().Version!.ToString(3));
    }
}
