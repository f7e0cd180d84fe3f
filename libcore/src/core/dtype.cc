#include "pd/core/dtype.h"

#include <array>
#include <cmath>

namespace pd {
namespace {

struct DTypeInfo {
  const char* name;
  size_t size;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"f32", 4}, {"f64", 8}, {"f16", 2}, {"bf16", 2}, {"i8", 1}, {"u8", 1}, {"i32", 4}, {"i64", 8}, {"bool", 1},
}};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<size_t>(t)].size; }
const char* dtype_name(DType t) { return kInfo[static_cast<size_t>(t)].name; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  if (name == "float32" || name == "float") return DType::f32;
  if (name == "float64" || name == "double") return DType::f64;
  if (name == "float16") return DType::f16;
  if (name == "bfloat16") return DType::bf16;
  if (name == "int8") return DType::i8;
  if (name == "uint8") return DType::u8;
  if (name == "int32") return DType::i32;
  if (name == "int64") return DType::i64;
  raise(ErrorCode::kInvalidArgument,
        "unknown dtype '{}': expected one of f32, f64, f16, bf16, i8, u8, i32, i64, bool", name);
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16; }
bool is_integral(DType t) { return t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::i64; }

// Round to nearest even, NaN kept quiet; subnormals handled by the generic path.
float16::float16(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (mag >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (mag < 0x38800000u) {  // subnormal half or zero
    float a = bits_float(mag);
    // scale so that the half subnormal unit (2^-24) becomes 1, then round to nearest even
    float scaled = a * 16777216.0f;
    bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
    return;
  }
  uint32_t exp = ((mag >> 23) - 112) << 10;
  uint32_t mant = mag & 0x7fffffu;
  uint32_t h = exp | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  bits = static_cast<uint16_t>(sign | h);
}

float16::operator float() const {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

bfloat16::bfloat16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<uint16_t>((x + rounding) >> 16);
}

bfloat16::operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }

}  // namespace pd
