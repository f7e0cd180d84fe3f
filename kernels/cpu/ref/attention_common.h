// What scaled_dot_product_attention's two CPU paths share (attention.cc: the portable one on Eigen, any
// float type; isa/attention_rows.cc: float on AVX2 / AVX-512 tile kernels): the problem's geometry, the
// tile sizes, and the mask, causal limit and dropout applied to a tile of scores. The functions are
// static: each file that includes this header compiles its own copy, for its own instruction set.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

#include "pd/kernels/attention_dropout.h"

namespace pd::kernels::reference::attention {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 128;

enum class MaskKind { kNone, kBool, kAdditive };

struct Geometry {
  int64_t N = 0, H = 0, Hk = 0, Lq = 0, Lk = 0, E = 0, Ev = 0;
  double scale = 1, dropout = 0;
  bool causal = false;
  uint64_t seed = 0;
  MaskKind mask_kind = MaskKind::kNone;
  const void* mask = nullptr;
  int64_t mask_stride[4] = {0, 0, 0, 0};  // element strides over [N, H, Lq, Lk]; 0 where broadcast

  int64_t group() const { return H / Hk; }
};

// Element strides of a [N, heads, L, E] operand over its batch, head and row axes (E is contiguous): a
// contiguous tensor has {H L E, L E, E}; qkv_attention's packed rows [N, L, W] have {L W, E, W}.
struct HeadStrides {
  int64_t n = 0, h = 0, l = 0;
};
static inline HeadStrides contiguous_heads(int64_t heads, int64_t len, int64_t width) {
  return {heads * len * width, len * width, width};
}

// The float tensors of one call (forward: q k v out, lse when not null, through their strides;
// backward, all contiguous: q k v o lse_in grad dq dk dv).
struct Tensors {
  const float *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *lse_in = nullptr, *grad = nullptr;
  float *out = nullptr, *lse = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  HeadStrides qs, ks, vs, os;  // the forward's q, k, v and out
};

// The key blocks a query block [i0, i0 + rows) can see: all of them, or up to the diagonal when causal.
static inline int64_t key_end(const Geometry& g, int64_t i0, int64_t rows) {
  return g.causal ? std::min(g.Lk, i0 + rows) : g.Lk;
}

// Adds the mask and the causal limit to a tile of scores s[rows][ld] (query rows i0.., key columns
// j0.., the first `cols` columns of each row).
template <typename T>
static inline void mask_tile(const Geometry& g, int64_t n, int64_t h, int64_t i0, int64_t j0, T* s, int64_t rows,
                             int64_t cols, int64_t ld) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  if (g.mask_kind != MaskKind::kNone) {
    const int64_t* st = g.mask_stride;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = n * st[0] + h * st[1] + (i0 + r) * st[2] + j0 * st[3];
      T* row = s + r * ld;
      if (g.mask_kind == MaskKind::kBool) {
        const bool* m = static_cast<const bool*>(g.mask) + base;
        for (int64_t c = 0; c < cols; ++c)
          if (!m[c * st[3]]) row[c] = neg_inf;
      } else {
        const T* m = static_cast<const T*>(g.mask) + base;
        for (int64_t c = 0; c < cols; ++c) row[c] += m[c * st[3]];
      }
    }
  }
  if (g.causal)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c) s[r * ld + c] = neg_inf;
}

// The dropout factors of a tile z[rows][ld]: 1 / (1 - p) where the weight is kept, 0 where it is dropped.
template <typename T>
static inline void dropout_tile(const Geometry& g, int64_t n, int64_t h, int64_t i0, int64_t j0, T* z, int64_t rows,
                                int64_t cols, int64_t ld) {
  const T keep = T(1) / T(1 - g.dropout);
  for (int64_t r = 0; r < rows; ++r) {
    const auto base = static_cast<uint64_t>(((n * g.H + h) * g.Lq + i0 + r) * g.Lk + j0);
    for (int64_t c = 0; c < cols; ++c)
      z[r * ld + c] = attention_keep(g.seed, base + static_cast<uint64_t>(c), g.dropout) ? keep : T(0);
  }
}

// The vector tile kernels pad every row they load as a whole vector to a multiple of 16 floats.
constexpr int64_t kPad = 16;
static inline int64_t padded(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// Scratch floats one forward item (a query block of one head) needs: scaled q, k^T and v of a key
// block, the score tile, the output accumulator, row maxima and sums, dropout factors.
static inline int64_t forward_scratch_floats(const Geometry& g) {
  return kQueryBlock * padded(g.E) + g.E * kKeyBlock + kKeyBlock * padded(g.Ev) + 2 * kQueryBlock * kKeyBlock +
         kQueryBlock * padded(g.Ev) + 2 * kQueryBlock;
}

// Scratch floats one backward item (a batch entry's kv head) needs: k^T, k and v^T of all keys, the dk
// and dv accumulators, and per query block scaled q, grad, dq, delta and three score-sized tiles.
static inline int64_t backward_scratch_floats(const Geometry& g) {
  const int64_t keys = padded(g.Lk);
  return g.E * keys + g.Lk * padded(g.E) + g.Ev * keys + g.Lk * padded(g.E) + g.Lk * padded(g.Ev) +
         kQueryBlock * (padded(g.E) + padded(g.Ev) + padded(g.E) + 1) + 3 * kQueryBlock * kKeyBlock;
}

}  // namespace pd::kernels::reference::attention
