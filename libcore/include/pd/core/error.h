// pd::Error — the one exception type libcore throws.
//
//   PD_CHECK(x.dim() == 4, ErrorCode::kShape,
//            "conv2d: argument 'x' must be 4-D [N, C, H, W], but received shape {}", shape_str(x.shape()));
//
// Every message names the op, the argument, what was expected and what came.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace pd {

enum class ErrorCode {
  kInvalidArgument,  // a value the caller passed is not acceptable
  kShape,            // shapes do not fit the op's rule
  kDType,            // a dtype the op does not accept
  kOutOfRange,       // an index or axis outside its range
  kNotImplemented,   // no kernel for this (op, backend, dtype)
  kParse,            // a text/YAML/file format error
  kIO,               // file system failures
  kInternal,         // a bug in paddle-cpp
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Args>
[[noreturn]] void raise(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace pd

#define PD_CHECK(cond, code, ...)          \
  do {                                     \
    if (!(cond)) ::pd::raise(code, __VA_ARGS__); \
  } while (0)
