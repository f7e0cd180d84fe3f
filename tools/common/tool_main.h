// The exit-code contract of every tool (DESIGN.md): "pd-TOOL: error: ..." on stderr, 2 for usage and
// input errors, 1 for runtime failures. Parses the command line, then runs `body` under that mapping.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "pd/core/error.h"

namespace pd::tools {

template <typename Body>
int run_tool(const char* tool, CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    fmt::print(stderr, "{}: error: {}\n", tool, e.what());
    return 2;
  }
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
