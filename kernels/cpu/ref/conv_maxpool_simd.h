// The vector operations fused_conv2d_maxpool's direct kernels are written in, for two instruction sets:
// Avx2 (8 floats a register) and Avx512 (16): simd.h's, plus the pooling and activation rules. The
// kernels (conv_maxpool_columns.h, _channels.h) are templates on one of these; isa/conv_maxpool_rows.cc
// instantiates them once per set, and conv_maxpool.cc calls the widest the CPU has (widest.h).
// Every function carries its target attribute, so this header may be included anywhere; x86-64 only.
#pragma once
#include <immintrin.h>

#include <cmath>

#include "cpu/common/max_pool_rule.h"
#include "cpu/common/simd.h"
#include "cpu/ref/conv_maxpool_block.h"
#include "elementwise_ops.h"

namespace pd::kernels::reference::direct {

using cpu::nan_max;  // the scalar rule (max_pool_rule.h); the vector forms are Avx2 / Avx512::nan_max

// Activations without a vector form here, lane by lane with their ops' formulas (elementwise_ops.h).
[[gnu::noinline]] inline void activate_lanes(Activation act, float alpha, float* lanes, int n) {
  for (int i = 0; i < n; ++i) lanes[i] = activate(act, lanes[i], alpha);
}

#define PD_AVX2 [[gnu::target("avx2,fma"), gnu::always_inline]] static inline
struct Avx2 : simd::Avx2 {
  // max_pool2d's rule: NaN wins and sticks (a compare and a blend; MAXPS alone would drop a NaN).
  PD_AVX2 V nan_max(V m, V v) {
    return _mm256_blendv_ps(m, v, _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
  // The max of each adjacent pair of the 16 values a, b (a 2-wide, stride-2 pooling window).
  PD_AVX2 V pair_max(V a, V b) {
    const V even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
    const V odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(nan_max(even, odd)), _MM_SHUFFLE(3, 1, 2, 0)));
  }
  // The activation of the reference kernels, so that the fused op matches the composition.
  PD_AVX2 V activate(const Geom& g, V v) {
    const V zero = _mm256_setzero_ps();
    switch (g.act) {
      case Activation::none: return v;
      case Activation::relu:  // v if v > 0 or NaN, else +0
        return _mm256_blendv_ps(zero, v, _mm256_or_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
      case Activation::leaky_relu:
        return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(g.alpha)), v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
      default: {
        alignas(32) float lanes[L];
        _mm256_store_ps(lanes, v);
        activate_lanes(g.act, g.alpha, lanes, L);
        return _mm256_load_ps(lanes);
      }
    }
  }
};
#undef PD_AVX2

#define PD_AVX512 [[gnu::target("avx512f,avx2,fma"), gnu::always_inline]] static inline
struct Avx512 : simd::Avx512 {
  PD_AVX512 V nan_max(V m, V v) {
    const __mmask16 take = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take, m, v);
  }
  PD_AVX512 V pair_max(V a, V b) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return nan_max(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
  }
  PD_AVX512 V activate(const Geom& g, V v) {
    const V zero = _mm512_setzero_ps();
    switch (g.act) {
      case Activation::none: return v;
      case Activation::relu:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), zero, v);
      case Activation::leaky_relu:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), _mm512_mul_ps(v, _mm512_set1_ps(g.alpha)), v);
      default: {
        alignas(64) float lanes[L];
        _mm512_store_ps(lanes, v);
        activate_lanes(g.act, g.alpha, lanes, L);
        return _mm512_load_ps(lanes);
      }
    }
  }
};
#undef PD_AVX512

}  // namespace pd::kernels::reference::direct
