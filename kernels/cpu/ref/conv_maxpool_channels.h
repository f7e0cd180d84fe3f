// fused_conv2d_maxpool's direct kernel vectorised over output channels (see conv_maxpool.cc): suits
// narrow rows and 8 or more output channels (LeNet's second conv: 10 columns would fill two 8-column
// registers to 62%). The conv pixels of one pooling window are computed a few at a time with every
// output channel in registers, activated and max-reduced there; only the pooled values are stored.
// A template on the instruction set S (conv_maxpool_simd.h), instantiated by isa/conv_maxpool_rows.cc
// under its target pragmas; include it only there, after every other header.
#pragma once
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/ref/conv_maxpool_block.h"
#include "cpu/ref/conv_maxpool_simd.h"

namespace pd::kernels::reference::direct {

// Pixels per register block: (P + 1) * CV + 1 registers must fit in AVX2's 16.
template <int CV>
constexpr int kPixels = CV <= 2 ? 4 : 2;

// P pixels (offsets into the padded input rows) x CV channel vectors: the accumulators stay in
// registers over all C * KH * KW taps; then bias (the initial value), activation, and a max into m.
// With fewer than 8 accumulators (one 16-channel AVX-512 vector) the even and odd kw taps go to two
// sets, added at the end: a single set would wait on the FMA latency (LeNet's second conv at batch 64:
// 0.135 -> 0.10 ms).
template <typename S, int CV>
void pixel_block(const Geom& g, const float* xp, int64_t plane, const int64_t* off, typename S::V (&m)[CV]) {
  constexpr int P = kPixels<CV>, L = S::L, kSets = P * CV < 8 ? 2 : 1;
  typename S::V acc[kSets][P][CV];
#pragma GCC unroll 4
  for (int c = 0; c < CV; ++c) {
    const auto bias = S::load(g.b + c * L);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      acc[0][p][c] = bias;
      if constexpr (kSets == 2) acc[1][p][c] = S::set1(0.0f);
    }
  }
  const auto tap = [&](auto set, const float* row, const float* w) {
    typename S::V wv[CV];
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) wv[c] = S::load(w + c * L);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const auto xv = S::broadcast(row + off[p]);
#pragma GCC unroll 4
      for (int c = 0; c < CV; ++c) acc[set][p][c] = S::fmadd(xv, wv[c], acc[set][p][c]);
    }
  };
  const float* w = g.w;
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const float* row = xp + ci * plane + kh * g.Wp;
      int64_t kw = 0;
      if constexpr (kSets == 2)
        for (; kw + 1 < g.KW; kw += 2, w += 2 * CV * L) {
          tap(std::integral_constant<int, 0>{}, row + kw, w);
          tap(std::integral_constant<int, kSets - 1>{}, row + kw + 1, w + CV * L);
        }
      for (; kw < g.KW; ++kw, w += CV * L) tap(std::integral_constant<int, 0>{}, row + kw, w);
    }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int c = 0; c < CV; ++c) {
      auto v = acc[0][p][c];
      if constexpr (kSets == 2) v = v + acc[1][p][c];
      m[c] = S::nan_max(m[c], S::activate(g, v));
    }
}

template <typename S, int CV>
void pooled_rows_cv(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  constexpr int P = kPixels<CV>, L = S::L;
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
  float lanes[CV * L];
  for (int64_t p = p0; p < p1; ++p) {
    const auto [r0, r1] = window(p, g.psh, g.pkh, g.pph, g.OH);
    for (int64_t q = 0; q < g.POW; ++q) {
      const auto [c0, c1] = window(q, g.psw, g.pkw, g.ppw, g.OW);
      pixels.clear();  // the window's conv pixels; a partial block repeats the last (max is idempotent)
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) pixels.push_back((r - R0) * g.Wp + c);
      while (!pixels.empty() && pixels.size() % P) pixels.push_back(pixels.back());
      typename S::V m[CV];
      for (auto& v : m) v = S::set1(-std::numeric_limits<float>::infinity());  // an all-padding window
      for (size_t i = 0; i < pixels.size(); i += P) pixel_block<S, CV>(g, xp.data(), plane, pixels.data() + i, m);
      for (int c = 0; c < CV; ++c) S::store(lanes + c * L, m[c]);
      float* dst = g.out + (n * g.Co * g.POH + p) * g.POW + q;
      for (int64_t co = 0; co < g.Co; ++co) dst[co * g.POH * g.POW] = lanes[co];
    }
  }
}

template <typename S>
void pooled_rows_by_channels(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  switch (g.cv) {
    case 1: return pooled_rows_cv<S, 1>(g, n, p0, p1);
    case 2: return pooled_rows_cv<S, 2>(g, n, p0, p1);
    case 3: return pooled_rows_cv<S, 3>(g, n, p0, p1);
    default: return pooled_rows_cv<S, 4>(g, n, p0, p1);
  }
}

}  // namespace pd::kernels::reference::direct
