// max_pool2d_grad for 2x2 windows with stride 2 in AVX2 (see pool_grad_avx2.h): 8 windows at a time,
// their 32 inputs split into the four window positions by even/odd shuffles, the first maximum chosen
// by masks, and the grads written back interleaved. Each element is written once: no zero fill, no
// accumulation, no branch. The generic kernel in pool.cc recomputes the max per window and scans it
// element by element.
#include "cpu/ref/pool_grad_avx2.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/common/max_pool_rule.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH("avx2,fma")

namespace pd::kernels::reference {
namespace {

// max_pool2d's max: NaN wins and sticks.
inline __m256 nan_max(__m256 m, __m256 v) {
  return _mm256_blendv_ps(m, v, _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

// All ones where v is the max m (a NaN max matches a NaN).
inline __m256 is_max(__m256 v, __m256 m) {
  return _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_EQ_OQ),
                      _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(m, m, _CMP_UNORD_Q)));
}

// lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6 (a shuffle's lane order) -> lo0 lo2 lo4 lo6 | hi0 hi2 hi4 hi6.
inline __m256 in_order(__m256 v) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
}

// 16 consecutive floats -> the 8 at even and the 8 at odd positions.
inline void deinterleave(const float* p, __m256& even, __m256& odd) {
  const __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
  even = in_order(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
  odd = in_order(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The inverse: even e0..e7 and odd o0..o7 stored as e0 o0 e1 o1 ... e7 o7.
inline void interleave(float* p, __m256 even, __m256 odd) {
  const __m256 a = _mm256_unpacklo_ps(even, odd), b = _mm256_unpackhi_ps(even, odd);  // e0 o0 e1 o1 | e4 o4 e5 o5 ...
  _mm256_storeu_ps(p, _mm256_permute2f128_ps(a, b, 0x20));
  _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(a, b, 0x31));
}

}  // namespace

void max_pool2x2_grad_plane_avx2(const float* plane, const float* grad, int64_t H, int64_t W, float* dplane) {
  const int64_t oH = H / 2, oW = W / 2;
  const __m256 ones = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  for (int64_t oh = 0; oh < oH; ++oh) {
    const float* r0 = plane + 2 * oh * W;
    const float* r1 = r0 + W;
    float* d0 = dplane + 2 * oh * W;
    float* d1 = d0 + W;
    const float* grow = grad + oh * oW;
    int64_t ow = 0;
    for (; ow + 8 <= oW; ow += 8) {
      __m256 a, b, c, d;  // the window positions, row-major: a b / c d
      deinterleave(r0 + 2 * ow, a, b);
      deinterleave(r1 + 2 * ow, c, d);
      const __m256 m = nan_max(nan_max(a, c), nan_max(b, d));
      const __m256 gv = _mm256_loadu_ps(grow + ow);
      const __m256 ha = is_max(a, m);
      const __m256 hb = _mm256_andnot_ps(ha, is_max(b, m));
      const __m256 hab = _mm256_or_ps(ha, hb);
      const __m256 hc = _mm256_andnot_ps(hab, is_max(c, m));
      const __m256 hd = _mm256_andnot_ps(_mm256_or_ps(hab, hc), ones);
      interleave(d0 + 2 * ow, _mm256_and_ps(ha, gv), _mm256_and_ps(hb, gv));
      interleave(d1 + 2 * ow, _mm256_and_ps(hc, gv), _mm256_and_ps(hd, gv));
    }
    for (; ow < oW; ++ow) {
      const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
      const float m = cpu::nan_max(cpu::nan_max(a, c), cpu::nan_max(b, d)), gv = grow[ow];
      const bool ha = cpu::is_pool_max(a, m), hb = !ha & cpu::is_pool_max(b, m);
      const bool hc = !(ha | hb) & cpu::is_pool_max(c, m);
      d0[2 * ow] = cpu::keep_if(ha, gv);
      d0[2 * ow + 1] = cpu::keep_if(hb, gv);
      d1[2 * ow] = cpu::keep_if(hc, gv);
      d1[2 * ow + 1] = cpu::keep_if(!(ha | hb | hc), gv);
    }
  }
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: pd::cpu_has_avx2_fma() is false and pool.cc never calls this

namespace pd::kernels::reference {
void max_pool2x2_grad_plane_avx2(const float*, const float*, int64_t, int64_t, float*) {}
}  // namespace pd::kernels::reference

#endif
