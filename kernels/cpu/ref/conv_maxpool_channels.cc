// fused_conv2d_maxpool's direct kernel vectorised over output channels (see conv_maxpool.cc): suits
// narrow rows and 8 or more output channels (LeNet's second conv: 10 columns would fill two 8-column
// registers to 62%). The conv pixels of one pooling window are computed a few at a time with every
// output channel in registers, activated and max-reduced there; only the pooled values are stored.
// Compiled for AVX2+FMA by a target pragma and only called after the runtime check in pd::cpu_has_avx2_fma().
#include <algorithm>
#include <limits>
#include <vector>

#include "cpu/ref/conv_maxpool_block.h"

#if defined(__x86_64__)
#include "cpu/ref/conv_maxpool_simd.h"

namespace pd::kernels::reference::direct {

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace {

// Pixels per register block: (P + 1) * CV + 1 registers must fit in 16.
template <int CV>
constexpr int kPixels = CV <= 2 ? 4 : 2;

// P pixels (offsets into the padded input rows) x CV channel vectors: the accumulators stay in
// registers over all C * KH * KW taps; then bias (the initial value), activation, and a max into m.
template <int CV>
void pixel_block(const Geom& g, const float* xp, int64_t plane, const int64_t* off, __m256 (&m)[CV]) {
  constexpr int P = kPixels<CV>;
  __m256 acc[P][CV];
#pragma GCC unroll 4
  for (int c = 0; c < CV; ++c) {
    const __m256 bias = _mm256_loadu_ps(g.b + c * kLanes);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[p][c] = bias;
  }
  const float* w = g.w;
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const float* row = xp + ci * plane + kh * g.Wp;
      for (int64_t kw = 0; kw < g.KW; ++kw, w += CV * kLanes) {
        __m256 wv[CV];
#pragma GCC unroll 4
        for (int c = 0; c < CV; ++c) wv[c] = _mm256_loadu_ps(w + c * kLanes);
#pragma GCC unroll 4
        for (int p = 0; p < P; ++p) {
          const __m256 xv = _mm256_broadcast_ss(row + off[p] + kw);
#pragma GCC unroll 4
          for (int c = 0; c < CV; ++c) acc[p][c] = _mm256_fmadd_ps(xv, wv[c], acc[p][c]);
        }
      }
    }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) m[c] = nan_max(m[c], activate(g, acc[p][c]));
}

template <int CV>
void pooled_rows_cv(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  constexpr int P = kPixels<CV>;
  thread_local std::vector<float> xp;
  thread_local std::vector<int64_t> pixels;
  const auto window = [](int64_t o, int64_t s, int64_t k, int64_t pad, int64_t size) {  // clipped to the conv output
    const int64_t start = o * s - pad;
    return std::pair<int64_t, int64_t>{std::max<int64_t>(start, 0), std::min(start + k, size)};
  };
  const int64_t R0 = window(p0, g.psh, g.pkh, g.pph, g.OH).first;
  const int64_t R1 = std::max(window(p1 - 1, g.psh, g.pkh, g.pph, g.OH).second, R0);
  fill_padded(g, n, R0, R1 + g.KH - 1, xp);
  const int64_t plane = (R1 + g.KH - 1 - R0) * g.Wp;
  alignas(32) float lanes[kMaxCV * kLanes];
  for (int64_t p = p0; p < p1; ++p) {
    const auto [r0, r1] = window(p, g.psh, g.pkh, g.pph, g.OH);
    for (int64_t q = 0; q < g.POW; ++q) {
      const auto [c0, c1] = window(q, g.psw, g.pkw, g.ppw, g.OW);
      pixels.clear();  // the window's conv pixels; a partial block repeats the last (max is idempotent)
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) pixels.push_back((r - R0) * g.Wp + c);
      while (!pixels.empty() && pixels.size() % P) pixels.push_back(pixels.back());
      __m256 m[CV];
      for (auto& v : m) v = _mm256_set1_ps(-std::numeric_limits<float>::infinity());  // an all-padding window
      for (size_t i = 0; i < pixels.size(); i += P) pixel_block<CV>(g, xp.data(), plane, pixels.data() + i, m);
      for (int c = 0; c < CV; ++c) _mm256_store_ps(lanes + c * kLanes, m[c]);
      float* dst = g.out + (n * g.Co * g.POH + p) * g.POW + q;
      for (int64_t co = 0; co < g.Co; ++co) dst[co * g.POH * g.POW] = lanes[co];
    }
  }
}

}  // namespace

void pooled_rows_by_channels(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  switch (g.cv) {
    case 1: return pooled_rows_cv<1>(g, n, p0, p1);
    case 2: return pooled_rows_cv<2>(g, n, p0, p1);
    case 3: return pooled_rows_cv<3>(g, n, p0, p1);
    default: return pooled_rows_cv<4>(g, n, p0, p1);
  }
}
#pragma GCC pop_options

}  // namespace pd::kernels::reference::direct

#else  // not x86-64: pd::cpu_has_avx2_fma() is false and the composition always runs

namespace pd::kernels::reference::direct {
void pooled_rows_by_channels(const Geom&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference::direct

#endif
