// AVX2/FMA direct convolution + activation + max pooling for fused_conv2d_maxpool (see
// conv_maxpool.cc). The build targets baseline x86-64, so this file's compute functions are compiled
// for AVX2+FMA by a target pragma and only called after the runtime check in has_avx2_fma().
#include "cpu/ref/conv_maxpool_block.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/common/scalar_math.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace pd::kernels::reference::direct {

bool has_avx2_fma() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace {

// max_pool2d's rule: NaN wins and sticks (a compare and a blend; MAXPS alone would drop a NaN).
inline __m256 nan_max(__m256 m, __m256 v) {
  const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_ps(m, v, take);
}

inline float nan_max(float m, float v) { return (v > m) | (v != v) ? v : m; }

// The activation of the reference kernels (scalar_math.h), so the fused op matches the composition.
inline __m256 activate(const Geom& g, __m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  switch (g.act) {
    case FusedAct::none: return v;
    case FusedAct::relu:  // v if v > 0 or NaN, else +0
      return _mm256_blendv_ps(zero, v, _mm256_or_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    case FusedAct::leaky_relu:
      return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(g.alpha)), v, _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
    default: break;
  }
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, v);
  for (float& e : lanes) {
    if (g.act == FusedAct::gelu) e = cpu::scalar::gelu(e);
    else if (g.act == FusedAct::silu) e = cpu::scalar::silu(e);
    else if (g.act == FusedAct::sigmoid) e = cpu::scalar::sigmoid(e);
    else e = std::tanh(e);
  }
  return _mm256_load_ps(lanes);
}

// Two units (8 conv columns each, at offsets off0 / off1 into the padded input rows) times CB output
// channels: 2 * CB accumulators stay in registers over all C * KH * KW taps; then bias (the initial
// value), activation, and a max into each channel's pooled-row buffer at column col0 / col1.
template <int CB>
void unit_pair(const Geom& g, const float* xp, int64_t plane, int64_t off0, int64_t off1, const float* w,
               const float* b, float* vmax, int64_t vstride, int64_t col0, int64_t col1) {
  __m256 acc0[CB], acc1[CB];
#pragma GCC unroll 8
  for (int c = 0; c < CB; ++c) acc0[c] = acc1[c] = _mm256_broadcast_ss(b + c);
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const float* r0 = xp + ci * plane + kh * g.Wp + off0;
      const float* r1 = xp + ci * plane + kh * g.Wp + off1;
      for (int64_t kw = 0; kw < g.KW; ++kw, w += CB) {
        const __m256 a0 = _mm256_loadu_ps(r0 + kw), a1 = _mm256_loadu_ps(r1 + kw);
#pragma GCC unroll 8
        for (int c = 0; c < CB; ++c) {
          const __m256 wv = _mm256_broadcast_ss(w + c);
          acc0[c] = _mm256_fmadd_ps(a0, wv, acc0[c]);
          acc1[c] = _mm256_fmadd_ps(a1, wv, acc1[c]);
        }
      }
    }
#pragma GCC unroll 8
  for (int c = 0; c < CB; ++c) {
    float* m0 = vmax + c * vstride + col0;
    float* m1 = vmax + c * vstride + col1;
    _mm256_storeu_ps(m0, nan_max(_mm256_loadu_ps(m0), activate(g, acc0[c])));
    _mm256_storeu_ps(m1, nan_max(_mm256_loadu_ps(m1), activate(g, acc1[c])));  // m1 may equal m0: max is idempotent
  }
}

// Padded-input rows [r0, r1) of image n (row r of the conv's zero-padded input), each Wp long so that
// every unit's 8-wide loads stay inside.
void fill_padded(const Geom& g, int64_t n, int64_t r0, int64_t r1, std::vector<float>& xp) {
  const int64_t rows = r1 - r0;
  xp.assign(static_cast<size_t>(g.C * rows * g.Wp), 0.0f);
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ih = r - g.ph;
      if (ih < 0 || ih >= g.H) continue;
      const float* src = g.x + ((n * g.C + ci) * g.H + ih) * g.W;
      std::copy(src, src + g.W, xp.data() + (ci * rows + (r - r0)) * g.Wp + g.pw);
    }
}

template <int CB>
void pooled_rows_cb(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  thread_local std::vector<float> xp, vmax;
  thread_local std::vector<int64_t> units;
  const auto conv_rows = [&](int64_t p) {  // conv rows of pooled row p's window, clipped to the output
    const int64_t start = p * g.psh - g.pph;
    return std::pair<int64_t, int64_t>{std::max<int64_t>(start, 0), std::min(start + g.pkh, g.OH)};
  };
  const int64_t R0 = conv_rows(p0).first, R1 = std::max(conv_rows(p1 - 1).second, R0);
  fill_padded(g, n, R0, R1 + g.KH - 1, xp);
  const int64_t plane = (R1 + g.KH - 1 - R0) * g.Wp, vstride = g.OWv * kLanes;
  const int64_t taps = g.C * g.KH * g.KW;
  vmax.resize(static_cast<size_t>(g.blocks * CB * vstride));
  for (int64_t p = p0; p < p1; ++p) {
    const auto [lo, hi] = conv_rows(p);
    units.clear();  // (row, unit) pairs of the window as input offsets; odd counts repeat the last
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t u = 0; u < g.OWv; ++u) units.push_back((r - R0) * g.Wp + u * kLanes);
    if (units.size() % 2) units.push_back(units.back());
    std::fill(vmax.begin(), vmax.end(), -std::numeric_limits<float>::infinity());
    for (int64_t blk = 0; blk < g.blocks; ++blk)
      for (size_t i = 0; i < units.size(); i += 2)
        unit_pair<CB>(g, xp.data(), plane, units[i], units[i + 1], g.w + blk * taps * CB, g.b + blk * CB,
                      vmax.data() + blk * CB * vstride, vstride, units[i] % g.Wp, units[i + 1] % g.Wp);
    // Columns: each pooled column maxes its window of the row buffer, clipped to the conv output.
    for (int64_t co = 0; co < g.Co; ++co) {
      const float* row = vmax.data() + co * vstride;
      float* dst = g.out + ((n * g.Co + co) * g.POH + p) * g.POW;
      for (int64_t q = 0; q < g.POW; ++q) {
        const int64_t start = q * g.psw - g.ppw;
        const int64_t c0 = std::max<int64_t>(start, 0), c1 = std::min(start + g.pkw, g.OW);
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t c = c0; c < c1; ++c) m = nan_max(m, row[c]);
        dst[q] = m;
      }
    }
  }
}

}  // namespace

void pooled_rows(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  switch (g.cb) {
    case 1: return pooled_rows_cb<1>(g, n, p0, p1);
    case 2: return pooled_rows_cb<2>(g, n, p0, p1);
    case 3: return pooled_rows_cb<3>(g, n, p0, p1);
    case 4: return pooled_rows_cb<4>(g, n, p0, p1);
    case 5: return pooled_rows_cb<5>(g, n, p0, p1);
    default: return pooled_rows_cb<6>(g, n, p0, p1);
  }
}
#pragma GCC pop_options

}  // namespace pd::kernels::reference::direct

#else  // not x86-64: the composition always runs

namespace pd::kernels::reference::direct {
bool has_avx2_fma() { return false; }
void pooled_rows(const Geom&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference::direct

#endif
