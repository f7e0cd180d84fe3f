// The readers and error helpers every part of the ops.yaml parser shares (parse_helpers.h).
#include "parse_helpers.h"

#include <fmt/format.h>

namespace pd::codegen {
namespace {
std::string g_file;
}  // namespace

const std::string& parse_file() { return g_file; }
void set_parse_file(const std::string& file) { g_file = file; }

[[noreturn]] void fail(const YAML::Mark& m, const std::string& msg) {
  throw CodegenError(fmt::format("{}:{}:{}: {}", parse_file(), m.line + 1, m.column + 1, msg));
}
[[noreturn]] void fail(const YAML::Node& n, const std::string& msg) { fail(n.Mark(), msg); }
Pos pos_of(const YAML::Node& n) { return {n.Mark().line + 1, n.Mark().column + 1}; }

std::string scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) fail(n, fmt::format("{} must be a single value", what));
  return n.Scalar();
}

const std::set<std::string> kDTypes = {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool"};

std::vector<std::string> expand_dtypes(const YAML::Node& list) {
  if (!list.IsSequence()) fail(list, "kernel dtypes must be a list such as [f32, f64]");
  std::vector<std::string> out;
  for (const auto& d : list) {
    std::string s = scalar(d, "a dtype");
    if (s == "float") {
      out.insert(out.end(), {"f32", "f64"});
    } else if (s == "int") {
      out.insert(out.end(), {"i32", "i64"});
    } else if (s == "all") {
      out.insert(out.end(), {"f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool"});
    } else if (kDTypes.count(s)) {
      out.push_back(s);
    } else {
      fail(d, fmt::format("unknown dtype '{}': expected one of f32 f64 f16 bf16 i8 u8 i32 i64 bool, or a group "
                          "float, int, all", s));
    }
  }
  return out;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace pd::codegen
