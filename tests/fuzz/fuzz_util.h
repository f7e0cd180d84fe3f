// Shared by the fuzz targets (docs/testing.md). A target feeds bytes to one reader of outside input; a
// pd::Error (or the reader's documented error type) is the expected answer to bad input, and anything
// else (another exception, a crash, a sanitizer report, a hang) is a finding. Other exceptions are left
// to escape on purpose: libFuzzer and the standalone driver both report them with the input.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     return pd_fuzz::run([&] { pd::data::parse_npy(pd_fuzz::bytes(data, size), "fuzz.npy"); });
//   }
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "pd/core/error.h"

namespace pd_fuzz {

inline std::string bytes(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// How many inputs the reader accepted and refused; the standalone driver prints them, so that a corpus
// whose seeds are all refused (a target that tests nothing) shows.
struct Outcomes {
  uint64_t accepted = 0, refused = 0;
};
inline Outcomes& outcomes() {
  static Outcomes o;
  return o;
}

template <typename ErrorT = pd::Error, typename F>
int run(F&& f) {
  try {
    f();
    ++outcomes().accepted;
  } catch (const ErrorT&) {
    ++outcomes().refused;
  }
  return 0;
}

// A per-process directory for readers that take a path; removed at exit.
inline const std::filesystem::path& temp_dir() {
  // Never destroyed, so that the exit handler can still read it.
  static const std::filesystem::path* dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "pd-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      std::perror("pd-fuzz: mkdtemp");
      std::abort();
    }
    auto* made = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir(), ec);
    });
    return made;
  }();
  return *dir;
}

// Writes `content` to temp_dir()/name (overwriting) and returns the path.
inline std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = (temp_dir() / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(content.data(), 1, content.size(), f) != content.size() || std::fclose(f) != 0) {
    std::perror("pd-fuzz: writing a temp file");
    std::abort();
  }
  return path;
}

// Splits an input made of two files: `first`, then `marker`, then `second` (absent: empty). Lets one input
// carry a model and its params.
inline std::pair<std::string, std::string> split(const std::string& input, const std::string& marker) {
  const size_t at = input.find(marker);
  if (at == std::string::npos) return {input, ""};
  return {input.substr(0, at), input.substr(at + marker.size())};
}

}  // namespace pd_fuzz
