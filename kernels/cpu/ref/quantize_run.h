// quantize_linear's loop over a run of values that share one scale and zero point, gated_quantize's,
// and dequantize_linear's. quantize.cc splits a tensor into runs across threads; the loops are compiled
// again for AVX2 and AVX-512 (isa/quantize_runs.cc) and taken when the CPU has them: the same
// operations in the same order, so every form gives the same bits. Static, so that each including file
// keeps its own copy for its own instruction set.
#pragma once
#include <cstdint>
#include <limits>

namespace pd::kernels::reference {

// Rounds v half to even with the default rounding mode's own addition: once |v| < 2^22 (2^51 for
// double), v + 1.5 * 2^23 has no fraction bits left, so the sum rounds v and the subtraction is exact.
// Unlike std::nearbyint this is plain arithmetic, which vectorises.
template <typename T>
static inline T round_half_even(T v) {
  constexpr T magic = sizeof(T) == 4 ? T(12582912.0) : T(6755399441055744.0);
  return (v + magic) - magic;
}

template <typename T, typename Q>
static constexpr T lowest_q = static_cast<T>(std::numeric_limits<Q>::min());
template <typename T, typename Q>
static constexpr T highest_q = static_cast<T>(std::numeric_limits<Q>::max());

// saturate(round_half_even(v) + z) of a quotient v = x / s, NaN -> z (lo_z, hi_z: Q's range minus z).
// v is clamped before rounding (to keep the rounding trick in its range), as x86's max and min compute
// (`a > b ? a : b`, one instruction each; a NaN comes out as the bound), and a NaN is replaced by z with
// a select, not a branch. The files compiling this build with -fno-trapping-math, without which GCC
// keeps the NaN test (an unordered compare) scalar and the whole loop with it.
template <typename T, typename Q>
static inline Q quantize_value(T v, T lo_z, T hi_z, T z) {
  const T above = v > lo_z ? v : lo_z;
  const T clamped = above < hi_z ? above : hi_z;
  const T q = round_half_even(clamped) + z;
  return static_cast<Q>(static_cast<int32_t>(v != v ? z : q));  // through int32, which vectorises
}

// out[i] = quantize(x[i]): quantize_linear's loop over a run that shares one scale and zero point.
template <typename T, typename Q>
static void quantize_run(const T* __restrict x, Q* __restrict out, int64_t n, T s, T z) {
  const T lo_z = lowest_q<T, Q> - z, hi_z = highest_q<T, Q> - z;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = quantize_value<T, Q>(x[i] / s, lo_z, hi_z, z);
}

// out[i] = quantize(x[i] * gate[i]): gated_quantize's loop over one pixel's channels, the product
// rounded to T first, as a mul and then a quantize_linear would.
template <typename T, typename Q>
static void quantize_gated_run(const T* __restrict x, const T* __restrict gate, Q* __restrict out, int64_t n, T s, T z) {
  const T lo_z = lowest_q<T, Q> - z, hi_z = highest_q<T, Q> - z;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T product = x[i] * gate[i];
    out[i] = quantize_value<T, Q>(product / s, lo_z, hi_z, z);
  }
}

// out[i] = (x[i] - z) * s: dequantize_linear's loop, and an int8 residual widened for an f32 sum.
template <typename Q>
static void dequantize_run(const Q* __restrict x, float* __restrict out, int64_t n, float s, int32_t z) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<int32_t>(x[i]) - z) * s;
}

}  // namespace pd::kernels::reference
