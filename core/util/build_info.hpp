#pragma once

#include <string_view>

// What this build is: written at build time by cmake/Version.cmake (its rules for the version are
// there), so that `dedupctl version`, the SARIF driver and the Debian package name one version.
namespace dedupctl::core::build {

// "0.1.0" at the release's tag, "0.1.0+3.g0547d2e" after it, "0.1.0~412.g0547d2e" before it is
// tagged; ".dirty" when the tree had uncommitted changes.
std::string_view version();
// CMAKE_BUILD_TYPE: "Release", "RelWithDebInfo", "Debug".
std::string_view build_type();
// The compiler and its version: "GNU 12.2.0".
std::string_view compiler();

} // namespace dedupctl::core::build
