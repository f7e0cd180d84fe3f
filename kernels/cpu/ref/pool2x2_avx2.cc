// max_pool2d and max_pool2d_grad for 2x2 windows with stride 2 in AVX2 (see pool2x2_avx2.h), and the
// two steps of pool.cc's row-buffer kernel for the other shapes (ResNet's 3x3 / stride 2): 8 windows
// at a time, their 32 inputs split into the four window positions by even/odd shuffles. The forward
// takes the max of the four; the gradient chooses the first maximum by masks and writes the grads back
// interleaved. Each element is written once: no zero fill, no accumulation, no branch. The generic
// kernels in pool.cc reduce rows into a buffer and scan windows element by element.
#include "cpu/ref/pool2x2_avx2.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "cpu/common/max_pool_rule.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH("avx2,fma")

namespace pd::kernels::reference {
namespace {

// max_pool2d's max: NaN wins and sticks.
inline __m256 nan_max(__m256 m, __m256 v) {
  // vmaxps gives its second operand unless the first is greater: m when either is NaN, m on ties.
  return _mm256_blendv_ps(_mm256_max_ps(v, m), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
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

// The grads of 8 windows: r0 and r1 hold their 16 + 16 inputs (two rows), g their 8 grads; d0 and d1
// get each input's grad, to the first maximum of its window (row-major).
inline void window_grads(const float* r0, const float* r1, const float* g, float* d0, float* d1) {
  __m256 a, b, c, d;  // the window positions, row-major: a b / c d
  deinterleave(r0, a, b);
  deinterleave(r1, c, d);
  const __m256 m = nan_max(nan_max(a, c), nan_max(b, d));
  const __m256 gv = _mm256_loadu_ps(g);
  const __m256 ha = is_max(a, m);
  const __m256 hb = _mm256_andnot_ps(ha, is_max(b, m));
  const __m256 hab = _mm256_or_ps(ha, hb);
  const __m256 hc = _mm256_andnot_ps(hab, is_max(c, m));
  const __m256 hd = _mm256_andnot_ps(_mm256_or_ps(hab, hc), _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
  interleave(d0, _mm256_and_ps(ha, gv), _mm256_and_ps(hb, gv));
  interleave(d1, _mm256_and_ps(hc, gv), _mm256_and_ps(hd, gv));
}

// n (< 16) floats into a 16-float buffer, the rest -inf (they fill windows whose results are dropped).
inline void pad_copy(const float* src, int64_t n, float* buf) {
  std::fill(std::copy(src, src + n, buf), buf + 16, -std::numeric_limits<float>::infinity());
}

}  // namespace

void max_pool2x2_plane_avx2(const float* plane, int64_t H, int64_t W, float* out) {
  const int64_t oH = H / 2, oW = W / 2;
  for (int64_t oh = 0; oh < oH; ++oh) {
    const float* r0 = plane + 2 * oh * W;
    const float* r1 = r0 + W;
    float* orow = out + oh * oW;
    int64_t ow = 0;
    for (; ow + 8 <= oW; ow += 8) {
      __m256 a, b, c, d;
      deinterleave(r0 + 2 * ow, a, b);
      deinterleave(r1 + 2 * ow, c, d);
      _mm256_storeu_ps(orow + ow, nan_max(nan_max(a, c), nan_max(b, d)));
    }
    if (ow < oW) {  // the last windows of the row through padded copies (scalar code with branches was slower)
      const int64_t rem = oW - ow;
      alignas(32) float t0[16], t1[16], o[8];
      pad_copy(r0 + 2 * ow, 2 * rem, t0);
      pad_copy(r1 + 2 * ow, 2 * rem, t1);
      __m256 a, b, c, d;
      deinterleave(t0, a, b);
      deinterleave(t1, c, d);
      _mm256_store_ps(o, nan_max(nan_max(a, c), nan_max(b, d)));
      std::copy(o, o + rem, orow + ow);
    }
  }
}

void max_into_avx2(float* acc, const float* row, int64_t n) {
  int64_t w = 0;
  for (; w + 8 <= n; w += 8) _mm256_storeu_ps(acc + w, nan_max(_mm256_loadu_ps(acc + w), _mm256_loadu_ps(row + w)));
  for (; w < n; ++w) acc[w] = cpu::nan_max(acc[w], row[w]);
}

namespace {
template <bool Prefetch>
void max_rows(const float* const* rows, int64_t count, int64_t n, float* out) {
  int64_t w = 0;
  for (; w + 8 <= n; w += 8) {
    if (Prefetch && w % 16 == 0)
      for (int64_t r = 0; r < count; ++r) _mm_prefetch(reinterpret_cast<const char*>(rows[r] + w) + 2048, _MM_HINT_T0);
    __m256 m = _mm256_loadu_ps(rows[0] + w);
    for (int64_t r = 1; r < count; ++r) m = nan_max(m, _mm256_loadu_ps(rows[r] + w));
    _mm256_storeu_ps(out + w, m);
  }
  for (; w < n; ++w) {
    float m = rows[0][w];
    for (int64_t r = 1; r < count; ++r) m = cpu::nan_max(m, rows[r][w]);
    out[w] = m;
  }
}
}  // namespace

void max_rows_avx2(const float* const* rows, int64_t count, int64_t n, float* out) { max_rows<false>(rows, count, n, out); }
void max_rows_prefetch_avx2(const float* const* rows, int64_t count, int64_t n, float* out) { max_rows<true>(rows, count, n, out); }

void max_columns_stride2_avx2(const float* row, int64_t kw, int64_t oW, float* out) {
  for (int64_t ow = 0; ow < oW; ow += 8) {
    __m256 even, odd, next, unused;
    deinterleave(row + 2 * ow, even, odd);  // row[2 ow + 0], row[2 ow + 1] for 8 windows
    __m256 m = nan_max(even, odd);
    if (kw == 3) {
      deinterleave(row + 2 * ow + 2, next, unused);  // row[2 ow + 2]
      m = nan_max(m, next);
    }
    if (ow + 8 <= oW) {
      _mm256_storeu_ps(out + ow, m);
    } else {
      alignas(32) float o[8];
      _mm256_store_ps(o, m);
      std::copy(o, o + (oW - ow), out + ow);
    }
  }
}

void max_pixels_avx2(const float* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, float* out) {
  for (int64_t ow = 0; ow < oW; ++ow) {
    const float* t = row + ow * sw * C;
    for (int64_t c = 0; c < C; c += 8) {
      __m256 m = _mm256_loadu_ps(t + c);
      for (int64_t j = 1; j < kw; ++j) m = nan_max(m, _mm256_loadu_ps(t + j * C + c));
      _mm256_storeu_ps(out + ow * C + c, m);
    }
  }
}

void max_pool2x2_grad_plane_avx2(const float* plane, const float* grad, int64_t H, int64_t W, float* dplane) {
  const int64_t oH = H / 2, oW = W / 2;
  for (int64_t oh = 0; oh < oH; ++oh) {
    const float* r0 = plane + 2 * oh * W;
    const float* r1 = r0 + W;
    float* d0 = dplane + 2 * oh * W;
    float* d1 = d0 + W;
    const float* grow = grad + oh * oW;
    int64_t ow = 0;
    for (; ow + 8 <= oW; ow += 8) window_grads(r0 + 2 * ow, r1 + 2 * ow, grow + ow, d0 + 2 * ow, d1 + 2 * ow);
    if (ow < oW) {  // the last windows of the row through padded copies
      const int64_t rem = oW - ow;
      alignas(32) float t0[16], t1[16], g[8] = {}, u0[16], u1[16];
      pad_copy(r0 + 2 * ow, 2 * rem, t0);
      pad_copy(r1 + 2 * ow, 2 * rem, t1);
      std::copy(grow + ow, grow + oW, g);
      window_grads(t0, t1, g, u0, u1);
      std::copy(u0, u0 + 2 * rem, d0 + 2 * ow);
      std::copy(u1, u1 + 2 * rem, d1 + 2 * ow);
    }
  }
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: pd::cpu_has_avx2_fma() is false and pool.cc never calls this

namespace pd::kernels::reference {
void max_pool2x2_plane_avx2(const float*, int64_t, int64_t, float*) {}
void max_pool2x2_grad_plane_avx2(const float*, const float*, int64_t, int64_t, float*) {}
void max_into_avx2(float*, const float*, int64_t) {}
void max_rows_avx2(const float* const*, int64_t, int64_t, float*) {}
void max_rows_prefetch_avx2(const float* const*, int64_t, int64_t, float*) {}
void max_columns_stride2_avx2(const float*, int64_t, int64_t, float*) {}
void max_pixels_avx2(const float*, int64_t, int64_t, int64_t, int64_t, float*) {}
}  // namespace pd::kernels::reference

#endif
