// The direct int8 kernels requantize without a division (kernels/cpu/ref/quantized_direct_epilogue.h:
// y * (1 / s), corrected once by the exact remainder). The kernels' op tests compare whole results; this
// checks the quotient itself against the division, bit for bit but for the sign of a zero (-0 / s comes
// out +0, which rounding to an integer cannot see), on random pairs across the exponent range the
// epilogue meets and on the edges (overflow, NaN, infinities, zeros).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/ref/quantized_direct_epilogue.h"
#include "pd/core/cpu_features.h"

#if defined(__x86_64__)
namespace {

using namespace pd::kernels::reference::int8_direct;

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

bool same_value(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a == 0 && b == 0) || (std::isnan(a) && std::isnan(b)); }

// y / s for 16 values of y through the AVX-512 form (8 at a time through the AVX2 form).
PD_VNNI_TARGET void divide_avx512(const float* y, float s, float* q) {
  _mm512_storeu_ps(q, vnni_divide(_mm512_loadu_ps(y), s, 1.0f / s));
}
PD_AVX2_TARGET void divide_avx2(const float* y, float s, float* q) {
  _mm256_storeu_ps(q, avx2_divide(_mm256_loadu_ps(y), s, 1.0f / s));
  _mm256_storeu_ps(q + 8, avx2_divide(_mm256_loadu_ps(y + 8), s, 1.0f / s));
}

PD_VNNI_TARGET void hardswish_avx512(const float* y, float* out) { _mm512_storeu_ps(out, vnni_hardswish(_mm512_loadu_ps(y))); }
PD_AVX2_TARGET void hardswish_avx2(const float* y, float* out) {
  _mm256_storeu_ps(out, avx2_hardswish(_mm256_loadu_ps(y)));
  _mm256_storeu_ps(out + 8, avx2_hardswish(_mm256_loadu_ps(y + 8)));
}

}  // namespace

TEST_CASE("int8 requantization divides without vdivps and rounds as the division does", "[quant]") {
  const bool avx512 = pd::cpu_has_avx512() && __builtin_cpu_supports("avx512bw"), avx2 = pd::cpu_has_avx2_fma();
  if (!avx2) {
    WARN("no AVX2 on this CPU: the vector epilogues do not run here");
    return;
  }
  std::mt19937 rng(7);
  // Scales 2^-20 .. 2^4 (requantization scales), values 2^-30 .. 2^30 of either sign.
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1), scale_exp(107, 131), value_exp(97, 157);
  std::vector<float> y(16), got(16);
  int64_t compared = 0;
  auto check = [&](float s) {
    for (int form = 0; form < 2; ++form) {
      if (form == 0 && !avx512) continue;
      (form == 0 ? divide_avx512 : divide_avx2)(y.data(), s, got.data());
      for (int i = 0; i < 16; ++i) {
        INFO((form == 0 ? "AVX-512" : "AVX2") << ": " << y[i] << " / " << s);
        REQUIRE(same_value(got[i], y[i] / s));
        ++compared;
      }
    }
  };
  for (int round = 0; round < 20000; ++round) {
    const float s = from_bits(mantissa(rng) | scale_exp(rng) << 23);
    for (float& v : y) v = from_bits(mantissa(rng) | value_exp(rng) << 23 | (rng() & 1u) << 31);
    check(s);
  }
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  y = {big, -big, inf, -inf, std::nanf(""), 0.0f, -0.0f, 1.0f, 3.0f, 1e-30f, -7.5f, 0.5f, 2.5f, 1e30f, -1e30f, 255.0f};
  for (float s : {1e-10f, 0.01f, 0.1f, 1.0f, 3.0f}) check(s);  // y / 1e-10 overflows: inf, as the division gives
  CHECK(compared >= 320000);
}
#endif

#if defined(__x86_64__)
// The direct kernels' hardswish is the reference's bit for bit (its / 6 through the corrected
// reciprocal), so an int8 result requantized after it equals the reference kernel's. Normal floats only:
// where y (y + 3) is subnormal the correction can miss the last bit, of a value that requantizes to the
// zero point either way.
TEST_CASE("int8 epilogues' hardswish is the reference's, bit for bit", "[quant]") {
  const bool avx512 = pd::cpu_has_avx512() && __builtin_cpu_supports("avx512bw"), avx2 = pd::cpu_has_avx2_fma();
  if (!avx2) {
    WARN("no AVX2 on this CPU: the vector epilogues do not run here");
    return;
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> around(-4.0f, 4.0f);
  std::uniform_int_distribution<uint32_t> mantissa(0, (1u << 23) - 1), normal_exp(1, 254);
  std::vector<float> y(16), got(16);
  int64_t compared = 0;
  for (int round = 0; round < 40000; ++round) {
    for (int i = 0; i < 16; ++i)  // the curve, and any normal float
      y[i] = i < 12 ? around(rng) : from_bits(mantissa(rng) | normal_exp(rng) << 23 | (rng() & 1u) << 31);
    if (round == 0) y = {-3.0f, 3.0f, -0.0f, 0.0f, std::nanf(""), -3.0000002f, 2.9999998f, 1e38f, -1e38f, 1.5f, -1.5f, 0.1f, -2.9f, 6.0f, -6.0f, 1e-30f};
    for (int form = 0; form < 2; ++form) {
      if (form == 0 && !avx512) continue;
      (form == 0 ? hardswish_avx512 : hardswish_avx2)(y.data(), got.data());
      for (int i = 0; i < 16; ++i) {
        INFO((form == 0 ? "AVX-512" : "AVX2") << ": hardswish(" << y[i] << ")");
        REQUIRE(same_value(got[i], pd::scalar::hardswish(y[i])));
        ++compared;
      }
    }
  }
  CHECK(compared >= 640000);
}
#endif
