// AVX2 helpers shared by fused_conv2d_maxpool's two direct kernels: max_pool2d's NaN-propagating max
// and the reference kernels' activations. Each carries its own target attribute, so it may be called
// only from AVX2+FMA code (after pd::cpu_has_avx2_fma()); x86-64 only.
#pragma once
#include <immintrin.h>

#include <cmath>

#include "cpu/common/scalar_math.h"
#include "cpu/ref/conv_maxpool_block.h"

namespace pd::kernels::reference::direct {

// max_pool2d's rule: NaN wins and sticks (a compare and a blend; MAXPS alone would drop a NaN).
[[gnu::target("avx2,fma")]] inline __m256 nan_max(__m256 m, __m256 v) {
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(m, v, take);
}

inline float nan_max(float m, float v) { return (v > m) | (v != v) ? v : m; }

// The transcendental activations lane by lane with the reference kernels' formulas (scalar_math.h).
[[gnu::target("avx2,fma"), gnu::noinline]] inline __m256 activate_lanes(FusedAct act, __m256 v) {
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, v);
  for (float& e : lanes) {
    if (act == FusedAct::gelu) e = cpu::scalar::gelu(e);
    else if (act == FusedAct::silu) e = cpu::scalar::silu(e);
    else if (act == FusedAct::sigmoid) e = cpu::scalar::sigmoid(e);
    else e = std::tanh(e);
  }
  return _mm256_load_ps(lanes);
}

// The activation of the reference kernels, so that the fused op matches the composition.
[[gnu::target("avx2,fma")]] inline __m256 activate(const Geom& g, __m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  switch (g.act) {
    case FusedAct::none: return v;
    case FusedAct::relu:  // v if v > 0 or NaN, else +0
      return _mm256_blendv_ps(zero, v, _mm256_or_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    case FusedAct::leaky_relu:
      return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(g.alpha)), v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
    default: return activate_lanes(g.act, v);
  }
}

}  // namespace pd::kernels::reference::direct
