// fused_conv2d_maxpool's direct kernel vectorised over output columns (see conv_maxpool.cc): suits
// wide rows and few input channels (LeNet's first conv). A template on the instruction set S
// (conv_maxpool_simd.h), instantiated by isa/conv_maxpool_rows.cc under its
// target pragmas; include it only there, after every other header.
#pragma once
#include <algorithm>
#include <limits>
#include <vector>

#include "cpu/ref/conv_maxpool_block.h"
#include "cpu/ref/conv_maxpool_simd.h"

namespace pd::kernels::reference::direct {

// L adjacent conv columns of one conv row: where its input starts in the padded rows, its first
// column, and whether its row is the first of the pooling window (which stores instead of maxing, so
// the row buffer needs no -inf fill).
struct Unit {
  int64_t off, col;
  bool first;
};

// Two units times CB output channels: 2 * CB accumulators stay in registers over all C * KH * KW taps;
// then bias (the initial value), activation, and a max into each channel's pooled-row buffer.
template <typename S, int CB>
void unit_pair(const Geom& g, const float* xp, int64_t plane, const Unit& u0, const Unit& u1, const float* w,
               const float* b, float* vmax, int64_t vstride) {
  typename S::V acc0[CB], acc1[CB];
#pragma GCC unroll 8
  for (int c = 0; c < CB; ++c) acc0[c] = acc1[c] = S::broadcast(b + c);
  for (int64_t ci = 0; ci < g.C; ++ci)
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const float* r0 = xp + ci * plane + kh * g.Wp + u0.off;
      const float* r1 = xp + ci * plane + kh * g.Wp + u1.off;
      for (int64_t kw = 0; kw < g.KW; ++kw, w += CB) {
        const auto a0 = S::load(r0 + kw), a1 = S::load(r1 + kw);
#pragma GCC unroll 8
        for (int c = 0; c < CB; ++c) {
          const auto wv = S::broadcast(w + c);
          acc0[c] = S::fmadd(a0, wv, acc0[c]);
          acc1[c] = S::fmadd(a1, wv, acc1[c]);
        }
      }
    }
#pragma GCC unroll 8
  for (int c = 0; c < CB; ++c) {
    float* m0 = vmax + c * vstride + u0.col;
    float* m1 = vmax + c * vstride + u1.col;
    const auto v0 = S::activate(g, acc0[c]), v1 = S::activate(g, acc1[c]);
    S::store(m0, u0.first ? v0 : S::nan_max(S::load(m0), v0));
    S::store(m1, u1.first ? v1 : S::nan_max(S::load(m1), v1));  // m1 may be m0: max is idempotent
  }
}

// Each pooled column maxes its window of the channel's row buffer, clipped to the conv output. The
// common 2-wide stride-2 window without padding is a vectorisable pairwise max.
template <typename S>
void pool_columns(const Geom& g, const float* vmax, int64_t vstride, float* dst) {
  constexpr int L = S::L;
  const bool pairs = g.pkw == 2 && g.psw == 2 && g.ppw == 0 && 2 * g.POW <= g.OW;
  for (int64_t co = 0; co < g.Co; ++co, dst += g.POH * g.POW) {
    const float* row = vmax + co * vstride;
    if (g.pkw == 1 && g.psw == 1 && g.ppw == 0) {  // no pooling across columns
      std::copy(row, row + g.POW, dst);
      continue;
    }
    if (pairs) {  // 2L buffer columns -> L outputs; the buffer is padded so the last block may overread
      for (int64_t q = 0; q < g.POW; q += L) {
        const auto m = S::pair_max(S::load(row + 2 * q), S::load(row + 2 * q + L));
        if (q + L <= g.POW) {
          S::store(dst + q, m);
        } else {
          float tail[L];
          S::store(tail, m);
          std::copy(tail, tail + (g.POW - q), dst + q);
        }
      }
      continue;
    }
    for (int64_t q = 0; q < g.POW; ++q) {
      const int64_t start = q * g.psw - g.ppw;
      const int64_t c0 = std::max<int64_t>(start, 0), c1 = std::min(start + g.pkw, g.OW);
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t c = c0; c < c1; ++c) m = nan_max(m, row[c]);
      dst[q] = m;
    }
  }
}

template <typename S, int CB>
void pooled_rows_cb(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  constexpr int L = S::L;
  thread_local std::vector<float> xp, vmax;
  thread_local std::vector<Unit> units;
  const auto conv_rows = [&](int64_t p) {  // conv rows of pooled row p's window, clipped to the output
    const int64_t start = p * g.psh - g.pph;
    return std::pair<int64_t, int64_t>{std::max<int64_t>(start, 0), std::min(start + g.pkh, g.OH)};
  };
  const int64_t R0 = conv_rows(p0).first, R1 = std::max(conv_rows(p1 - 1).second, R0);
  fill_padded(g, n, R0, R1 + g.KH - 1, xp);
  const int64_t plane = (R1 + g.KH - 1 - R0) * g.Wp, vstride = g.OWv * L;
  const int64_t taps = g.C * g.KH * g.KW;
  vmax.resize(static_cast<size_t>(g.blocks * CB * vstride + 2 * L));  // + pool_columns' overread
  for (int64_t p = p0; p < p1; ++p) {
    const auto [lo, hi] = conv_rows(p);
    units.clear();  // the window's conv rows times the units of a row; an odd count repeats the last
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t u = 0; u < g.OWv; ++u) units.push_back({(r - R0) * g.Wp + u * L, u * L, r == lo});
    if (units.size() % 2) units.push_back(units.back());
    if (units.empty()) std::fill(vmax.begin(), vmax.end(), -std::numeric_limits<float>::infinity());  // all padding
    for (int64_t blk = 0; blk < g.blocks; ++blk)
      for (size_t i = 0; i < units.size(); i += 2)
        unit_pair<S, CB>(g, xp.data(), plane, units[i], units[i + 1], g.w + blk * taps * CB, g.b + blk * CB,
                         vmax.data() + blk * CB * vstride, vstride);
    pool_columns<S>(g, vmax.data(), vstride, g.out + (n * g.Co * g.POH + p) * g.POW);
  }
}

template <typename S>
void pooled_rows_by_columns(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  switch (g.cb) {
    case 1: return pooled_rows_cb<S, 1>(g, n, p0, p1);
    case 2: return pooled_rows_cb<S, 2>(g, n, p0, p1);
    case 3: return pooled_rows_cb<S, 3>(g, n, p0, p1);
    case 4: return pooled_rows_cb<S, 4>(g, n, p0, p1);
    case 5: return pooled_rows_cb<S, 5>(g, n, p0, p1);
    default: return pooled_rows_cb<S, 6>(g, n, p0, p1);
  }
}

}  // namespace pd::kernels::reference::direct
