// scaled_dot_product_attention's float kernels on vector tiles: one forward item (a block of query rows
// of one head, streaming over key blocks with an online softmax) and one backward item (a batch entry's
// kv head: every query block against every key block, the weights recomputed from the row log-sum-exp).
// The products of a tile are small (rows of 16-128 floats), too small for a library GEMM to pay its
// packing and dispatch: they run on one register-blocked kernel, `gemm`, whose B operand and result rows
// are padded to 16 floats. Templates on the instruction set S (simd.h), instantiated by
// isa/attention_rows.cc under its target pragmas; include this header only there, after every other.
#pragma once
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/common/small_gemm.h"
#include "cpu/ref/attention_common.h"

namespace pd::kernels::reference::attention {

using cpu::gemm;

// dst[r][0, width) = src[r][0, cols) * factor, zero beyond cols (rows ld_src and ld_dst apart).
static inline void copy_padded(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float factor, float* dst,
                               int64_t ld_dst, int64_t width) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dst[r * ld_dst + c] = src[r * ld_src + c] * factor;
    for (int64_t c = cols; c < width; ++c) dst[r * ld_dst + c] = 0.f;
  }
}

// dst[c][r] = src[r][c] for r < rows, c < cols; dst's rows are ld_dst >= rows long, zero beyond rows.
static inline void transpose_padded(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
    for (int64_t r = rows; r < ld_dst; ++r) dst[c * ld_dst + r] = 0.f;
  }
}

// row[0, n) = exp(row - m) (n a multiple of S::L); returns their sum.
template <class S>
static inline float exp_row(float* row, int64_t n, float m) {
  const typename S::V mv = S::set1(m);
  typename S::V sum = S::zero();
  for (int64_t c = 0; c < n; c += S::L) {
    const typename S::V e = S::exp(S::sub(S::load(row + c), mv));
    S::store(row + c, e);
    sum = S::add(sum, e);
  }
  return S::reduce_add(sum);
}

template <class S>
static inline float max_row(const float* row, int64_t n) {
  typename S::V m = S::set1(-std::numeric_limits<float>::infinity());
  for (int64_t c = 0; c < n; c += S::L) m = S::max(m, S::load(row + c));
  return S::reduce_max(m);
}

template <class S>
static inline void scale_row(float* row, int64_t n, float factor) {
  const typename S::V f = S::set1(factor);
  for (int64_t c = 0; c < n; c += S::L) S::store(row + c, S::mul(S::load(row + c), f));
}

// One forward item: query rows [i0, i0 + rows) of head nh = n * H + h, through the tensors' strides.
template <class S>
static inline void forward_item(const Geometry& g, const Tensors& t, int64_t nh, int64_t i0, float* scratch) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int64_t n = nh / g.H, h = nh % g.H, hk = h / g.group();
  const int64_t rows = std::min(kQueryBlock, g.Lq - i0);
  const int64_t Ep = padded(g.E), Evp = padded(g.Ev), KB = kKeyBlock;
  float* qs = scratch;                   // [rows][Ep], q * scale
  float* kt = qs + kQueryBlock * Ep;     // [E][KB], the key block transposed
  float* vb = kt + g.E * KB;             // [KB][Evp]
  float* s = vb + KB * Evp;              // [rows][KB], scores then weights
  float* z = s + kQueryBlock * KB;       // [rows][KB], dropout factors
  float* acc = z + kQueryBlock * KB;     // [rows][Evp]
  float* row_max = acc + kQueryBlock * Evp;
  float* row_sum = row_max + kQueryBlock;
  copy_padded(t.q + n * t.qs.n + h * t.qs.h + i0 * t.qs.l, t.qs.l, rows, g.E, static_cast<float>(g.scale), qs, Ep, Ep);
  std::memset(acc, 0, sizeof(float) * rows * Evp);
  for (int64_t r = 0; r < rows; ++r) row_max[r] = neg_inf, row_sum[r] = 0.f;
  const int64_t end = key_end(g, i0, rows);
  for (int64_t j0 = 0; j0 < end; j0 += KB) {
    const int64_t cols = std::min(KB, g.Lk - j0), cols_p = padded(cols);
    transpose_padded(t.k + n * t.ks.n + hk * t.ks.h + j0 * t.ks.l, t.ks.l, cols, g.E, kt, cols_p);
    const float* v_rows = t.v + n * t.vs.n + hk * t.vs.h + j0 * t.vs.l;  // in place when its rows fit the kernel
    if (g.Ev != Evp || t.vs.l != Evp) {
      copy_padded(v_rows, t.vs.l, cols, g.Ev, 1.f, vb, Evp, Evp);
      v_rows = vb;
    }
    gemm<S>(rows, cols_p, g.E, qs, Ep, 1, kt, cols_p, s, KB, false);
    mask_tile(g, n, h, i0, j0, s, rows, cols, KB);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * KB;
      for (int64_t c = cols; c < cols_p; ++c) row[c] = neg_inf;
      const float m = std::max(row_max[r], max_row<S>(row, cols_p));
      if (m == neg_inf) {  // everything so far is masked
        std::memset(row, 0, sizeof(float) * cols_p);
        continue;
      }
      const float correction = std::exp(row_max[r] - m);
      row_sum[r] = row_sum[r] * correction + exp_row<S>(row, cols_p, m);
      if (correction != 1.f) scale_row<S>(acc + r * Evp, Evp, correction);
      row_max[r] = m;
    }
    if (g.dropout > 0) {
      dropout_tile(g, n, h, i0, j0, z, rows, cols, KB);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) s[r * KB + c] *= z[r * KB + c];
    }
    gemm<S>(rows, Evp, cols, s, KB, 1, v_rows, Evp, acc, Evp, true);
  }
  float* o = t.out + n * t.os.n + h * t.os.h + i0 * t.os.l;
  for (int64_t r = 0; r < rows; ++r) {
    const bool empty = row_sum[r] == 0.f;
    const float inv = empty ? 0.f : 1.f / row_sum[r];
#pragma omp simd
    for (int64_t c = 0; c < g.Ev; ++c) o[r * t.os.l + c] = acc[r * Evp + c] * inv;
    if (t.lse) t.lse[nh * g.Lq + i0 + r] = empty ? neg_inf : row_max[r] + std::log(row_sum[r]);
  }
}

// One backward item: batch entry n's kv head (item = n * Hk + kv head), owning its dk and dv rows and the
// dq rows of the query heads that share it. dS = P * (dP - delta) with delta = rowsum(grad * out); the
// scale enters dq and dk through the scaled q.
template <class S>
static inline void backward_item(const Geometry& g, const Tensors& t, int64_t item, float* scratch) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int64_t n = item / g.Hk, KB = kKeyBlock;
  const int64_t Ep = padded(g.E), Evp = padded(g.Ev), keys = padded(g.Lk);
  float* kt = scratch;                   // [E][keys], every key of this kv head, transposed
  float* kb = kt + g.E * keys;           // [Lk][Ep]
  float* vt = kb + g.Lk * Ep;            // [Ev][keys]
  float* dk = vt + g.Ev * keys;          // [Lk][Ep], accumulated over the query heads and blocks
  float* dv = dk + g.Lk * Ep;            // [Lk][Evp]
  float* qs = dv + g.Lk * Evp;           // [rows][Ep], q * scale
  float* go = qs + kQueryBlock * Ep;     // [rows][Evp], the incoming gradient
  float* dq = go + kQueryBlock * Evp;    // [rows][Ep]
  float* delta = dq + kQueryBlock * Ep;  // [rows]
  float* s = delta + kQueryBlock;        // [rows][KB], weights P, then dS
  float* dp = s + kQueryBlock * KB;      // [rows][KB]
  float* pz = dp + kQueryBlock * KB;     // [rows][KB], dropout factors, then P with dropout
  const float* k_src = t.k + item * g.Lk * g.E;
  const float* v_src = t.v + item * g.Lk * g.Ev;
  transpose_padded(k_src, g.E, g.Lk, g.E, kt, keys);
  const float* k_rows = k_src;  // used in place when its rows are padded already
  if (g.E != Ep) {
    copy_padded(k_src, g.E, g.Lk, g.E, 1.f, kb, Ep, Ep);
    k_rows = kb;
  }
  transpose_padded(v_src, g.Ev, g.Lk, g.Ev, vt, keys);
  std::memset(dk, 0, sizeof(float) * g.Lk * Ep);
  std::memset(dv, 0, sizeof(float) * g.Lk * Evp);
  const float sc = static_cast<float>(g.scale);
  for (int64_t h = (item % g.Hk) * g.group(); h < (item % g.Hk + 1) * g.group(); ++h) {
    const int64_t nh = n * g.H + h;
    for (int64_t i0 = 0; i0 < g.Lq; i0 += kQueryBlock) {
      const int64_t rows = std::min(kQueryBlock, g.Lq - i0);
      const float* go_src = t.grad + (nh * g.Lq + i0) * g.Ev;
      const float* o_src = t.o + (nh * g.Lq + i0) * g.Ev;
      const float* row_lse = t.lse_in + nh * g.Lq + i0;
      copy_padded(t.q + (nh * g.Lq + i0) * g.E, g.E, rows, g.E, sc, qs, Ep, Ep);
      const float* go_rows = go_src;  // used in place when its rows are padded already
      if (g.Ev != Evp) {
        copy_padded(go_src, g.Ev, rows, g.Ev, 1.f, go, Evp, Evp);
        go_rows = go;
      }
      for (int64_t r = 0; r < rows; ++r) {
        float d = 0.f;
        for (int64_t c = 0; c < g.Ev; ++c) d += go_src[r * g.Ev + c] * o_src[r * g.Ev + c];
        delta[r] = d;
      }
      std::memset(dq, 0, sizeof(float) * rows * Ep);
      const int64_t end = key_end(g, i0, rows);
      for (int64_t j0 = 0; j0 < end; j0 += KB) {
        const int64_t cols = std::min(KB, g.Lk - j0), cols_p = padded(cols);
        gemm<S>(rows, cols_p, g.E, qs, Ep, 1, kt + j0, keys, s, KB, false);
        mask_tile(g, n, h, i0, j0, s, rows, cols, KB);
        for (int64_t r = 0; r < rows; ++r) {  // the weights P, from the forward's log-sum-exp
          float* row = s + r * KB;
          if (row_lse[r] == neg_inf) std::memset(row, 0, sizeof(float) * cols_p);
          else exp_row<S>(row, cols_p, row_lse[r]);
        }
        gemm<S>(rows, cols_p, g.Ev, go_rows, Evp, 1, vt + j0, keys, dp, KB, false);
        const float* p_used = s;  // the weights as the forward applied them
        if (g.dropout > 0) {
          dropout_tile(g, n, h, i0, j0, pz, rows, cols, KB);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              dp[r * KB + c] *= pz[r * KB + c];
              pz[r * KB + c] *= s[r * KB + c];
            }
          p_used = pz;
        }
        gemm<S>(cols, Evp, rows, p_used, 1, KB, go_rows, Evp, dv + j0 * Evp, Evp, true);
        for (int64_t r = 0; r < rows; ++r) {
          const typename S::V d = S::set1(delta[r]);
          float* srow = s + r * KB;
          const float* dprow = dp + r * KB;
          for (int64_t c = 0; c < cols_p; c += S::L)
            S::store(srow + c, S::mul(S::load(srow + c), S::sub(S::load(dprow + c), d)));
        }
        gemm<S>(rows, Ep, cols, s, KB, 1, k_rows + j0 * Ep, Ep, dq, Ep, true);
        gemm<S>(cols, Ep, rows, s, 1, KB, qs, Ep, dk + j0 * Ep, Ep, true);
      }
      float* dq_out = t.dq + (nh * g.Lq + i0) * g.E;
      for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
        for (int64_t c = 0; c < g.E; ++c) dq_out[r * g.E + c] = dq[r * Ep + c] * sc;
      }
    }
  }
  float* dk_out = t.dk + item * g.Lk * g.E;
  float* dv_out = t.dv + item * g.Lk * g.Ev;
  for (int64_t j = 0; j < g.Lk; ++j) {
    for (int64_t c = 0; c < g.E; ++c) dk_out[j * g.E + c] = dk[j * Ep + c];
    for (int64_t c = 0; c < g.Ev; ++c) dv_out[j * g.Ev + c] = dv[j * Evp + c];
  }
}

}  // namespace pd::kernels::reference::attention
