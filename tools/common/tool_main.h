// The exit-code contract of every tool (DESIGN.md): "pd-TOOL: error: ..." on stderr, 2 for usage and
// input errors, 1 for runtime failures. Parses the command line (with the --version every tool has), then
// runs `body` under that mapping.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <optional>

#include "pd/core/error.h"
#include "pd_version.h"

namespace pd::tools {

// "pd-opt 0.1.0 (git fe0ba78)": the project version and, when built from a git checkout, its commit.
inline std::string version_line(const char* tool) { return fmt::format("{} {}", tool, PD_VERSION_STRING); }

// Adds --version and parses. Returns the exit code when the tool must stop here: 0 after --help or
// --version, 2 for a usage error (printed); nullopt to go on.
inline std::optional<int> parse_command_line(const char* tool, CLI::App& app, int argc, char** argv) {
  app.set_version_flag("--version", version_line(tool), "print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 2;
  }
  return std::nullopt;
}

template <typename Body>
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, Body&& body) {
  if (auto rc = parse_command_line(tool, app, argc, argv)) return *rc;
  try {
    return body();
  } catch (const pd::Error& e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return e.code() == pd::ErrorCode::kInternal ? 1 : 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 1;
  }
}

}  // namespace pd::tools
