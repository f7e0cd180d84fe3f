// DType: the element types a Tensor can hold, and the helpers to switch on them.
//
//   PD_DISPATCH_FLOATING(t.dtype(), "softmax", [&]<typename T>() { run<T>(...); });
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "pd/core/error.h"

namespace pd {

enum class DType : uint8_t { f32, f64, f16, bf16, i8, u8, i32, i64, boolean };
inline constexpr int kNumDTypes = 9;

// IEEE half and bfloat16 as storage types; arithmetic goes through float.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f);
  explicit operator float() const;
};
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f);
  explicit operator float() const;
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);       // "f32", "bool", ...
DType dtype_from_name(std::string_view name);  // throws pd::Error listing the valid names
bool is_floating(DType t);             // f32 f64 f16 bf16
bool is_integral(DType t);             // i8 u8 i32 i64 (not bool)

template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Calls fn.template operator()<T>() with the C++ type of `t`.
template <typename Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn.template operator()<float>();
    case DType::f64: return fn.template operator()<double>();
    case DType::f16: return fn.template operator()<float16>();
    case DType::bf16: return fn.template operator()<bfloat16>();
    case DType::i8: return fn.template operator()<int8_t>();
    case DType::u8: return fn.template operator()<uint8_t>();
    case DType::i32: return fn.template operator()<int32_t>();
    case DType::i64: return fn.template operator()<int64_t>();
    case DType::boolean: return fn.template operator()<bool>();
  }
  raise(ErrorCode::kInternal, "visit_dtype: corrupt dtype value {}", static_cast<int>(t));
}

// A float to an integer type, truncated toward zero, saturating at the type's range, NaN to 0 (as Rust's
// `as`). C++ leaves out-of-range conversions undefined, and a user's data or a full(1e30) reaches here.
template <typename To, typename From>
inline To saturating_float_to_int(From v) {
  using Limits = std::numeric_limits<To>;
  if (!(v == v)) return To(0);
  // lowest() is 0 or minus a power of two, exact in From; max() may round up to the next power of
  // two, which is then itself out of range, so >= is right either way.
  if (v <= static_cast<From>(Limits::lowest())) return Limits::lowest();
  if (v >= static_cast<From>(Limits::max())) return Limits::max();
  return static_cast<To>(v);
}

// Converts between element types through double (or float for the 16-bit types).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return saturating_float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace pd
