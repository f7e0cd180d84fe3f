// Range checks for numeric command-line options. CLI11's own (PositiveNumber, Range) print their bound
// as a 309-digit DBL_MAX and let CLI11 clamp a number too large for the option's type; these parse the
// text as the option's own type, so "--epochs 99999999999999999999" is an error naming the limit, and a
// tolerance of nan or inf is refused.
//
//   app.add_option("--epochs", epochs, "...")->check(pd::tools::positive<int64_t>());
//   app.add_option("--rtol", rtol, "...")->check(pd::tools::non_negative_number());
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

namespace pd::tools {

// An integer option within [lo, hi]; `what` completes "must be ..." (e.g. "a positive integer").
template <typename T>
CLI::Validator integer_in(T lo, T hi, std::string what) {
  auto check = [lo, hi, what](std::string& text) -> std::string {
    const char* first = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
    const char* last = text.data() + text.size();
    if constexpr (std::is_unsigned_v<T>)  // from_chars reads no sign for an unsigned type
      if (first != last && *first == '-') return fmt::format("must be {}, got {}", what, text);
    T v{};
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range) {
      const bool negative = first != last && *first == '-';
      return fmt::format("must be {}, got {}: too {} (the {} allowed is {})", what, text, negative ? "small" : "large",
                         negative ? "smallest" : "largest", negative ? lo : hi);
    }
    if (ec != std::errc() || end != last || first == last) return fmt::format("must be {}, got '{}'", what, text);
    if (v < lo || v > hi) return fmt::format("must be {}, got {}", what, text);
    return "";
  };
  return CLI::Validator(check, hi == std::numeric_limits<T>::max() ? fmt::format("INT>={}", lo) : fmt::format("INT in [{}, {}]", lo, hi));
}

template <typename T>
CLI::Validator positive() {
  return integer_in<T>(1, std::numeric_limits<T>::max(), "a positive integer");
}

template <typename T>
CLI::Validator non_negative() {
  return integer_in<T>(0, std::numeric_limits<T>::max(), "a non-negative integer");
}

// A finite floating-point option within [lo, hi] (or (lo, hi] when `open_low`).
inline CLI::Validator number_in(double lo, double hi, std::string what, bool open_low = false) {
  auto check = [lo, hi, what, open_low](std::string& text) -> std::string {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') return fmt::format("must be {}, got '{}'", what, text);
    if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) >= 1)) return fmt::format("must be {}, got {} (not a finite number)", what, text);
    if (v < lo || v > hi || (open_low && v == lo)) return fmt::format("must be {}, got {}", what, text);
    return "";
  };
  return CLI::Validator(check, "NUMBER");
}

inline CLI::Validator non_negative_number() {
  return number_in(0, std::numeric_limits<double>::max(), "a finite number >= 0");
}

inline CLI::Validator positive_number() {
  return number_in(0, std::numeric_limits<double>::max(), "a finite number > 0", true);
}

}  // namespace pd::tools
