// depthwise_conv's kernel (depthwise_conv.h) compiled for one instruction set. The build compiles this
// file once per set (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <algorithm>
#include <cstdint>

#include "cpu/ref/depthwise_conv.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)

namespace pd::kernels::reference {
namespace {

template <class S, Activation A>
typename S::V activate(typename S::V v) {
  // max / min return their second operand for NaN, so NaN passes through as in the reference.
  if constexpr (A == Activation::relu || A == Activation::relu6) v = S::max(S::zero(), v);
  if constexpr (A == Activation::relu6) v = S::min(S::set1(6.f), v);
  return v;
}

// P outputs of a row whose windows lie inside the input's columns: `rows` are the three input rows
// (null for a padding row) at the first window's left column. Each input vector is loaded once and
// multiplied into every output whose window holds it (STRIDE 1: three; 2: one or two).
template <class S, int P, int STRIDE, Activation A>
void tile(const float* const rows[3], const float* w, typename S::V bias, float* out) {
  using V = typename S::V;
  constexpr int L = S::L, inputs = (P - 1) * STRIDE + 3;
  V acc[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) acc[p] = bias;
  for (int ky = 0; ky < 3; ++ky) {
    if (rows[ky] == nullptr) continue;
    const V w0 = S::load(w + (ky * 3) * L), w1 = S::load(w + (ky * 3 + 1) * L), w2 = S::load(w + (ky * 3 + 2) * L);
#pragma GCC unroll 48
    for (int i = 0; i < inputs; ++i) {
      const V v = S::load(rows[ky] + i * L);
      // Input i is column kx of output p where i = p * STRIDE + kx.
      if (i % STRIDE == 0 && i / STRIDE < P) acc[i / STRIDE] = S::fmadd(v, w0, acc[i / STRIDE]);
      if (i >= 1 && (i - 1) % STRIDE == 0 && (i - 1) / STRIDE < P) acc[(i - 1) / STRIDE] = S::fmadd(v, w1, acc[(i - 1) / STRIDE]);
      if (i >= 2 && (i - 2) % STRIDE == 0 && (i - 2) / STRIDE < P) acc[(i - 2) / STRIDE] = S::fmadd(v, w2, acc[(i - 2) / STRIDE]);
    }
  }
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) S::store(out + p * L, activate<S, A>(acc[p]));
}

// One output whose window may reach past the input's columns (the padding reads as zero).
template <class S, Activation A>
void edge(const DepthwiseConv& c, const float* const rows[3], int64_t ox, const float* w, typename S::V bias, float* out) {
  constexpr int L = S::L;
  typename S::V acc = bias;
  for (int ky = 0; ky < 3; ++ky) {
    if (rows[ky] == nullptr) continue;
    for (int kx = 0; kx < 3; ++kx) {
      const int64_t ix = ox * c.stride - c.pad_w + kx;
      if (ix >= 0 && ix < c.w_in) acc = S::fmadd(S::load(rows[ky] + ix * L), S::load(w + (ky * 3 + kx) * L), acc);
    }
  }
  S::store(out, activate<S, A>(acc));
}

template <class S, int STRIDE, Activation A>
void row(const DepthwiseConv& c, int64_t n, int64_t b, int64_t oy) {
  constexpr int L = S::L, P = L == 16 ? 16 : 8;
  const float* image = c.x + (n * c.cb + b) * c.h * c.w_in * L;
  const float* rows[3];
  for (int ky = 0; ky < 3; ++ky) {
    const int64_t iy = oy * STRIDE - c.pad_h + ky;
    rows[ky] = iy >= 0 && iy < c.h ? image + iy * c.w_in * L : nullptr;
  }
  const float* w = c.w + b * 9 * L;
  const typename S::V bias = c.bias ? S::load(c.bias + b * L) : S::zero();
  float* out = c.out + ((n * c.cb + b) * c.oh + oy) * c.ow * L;
  // Outputs [lo, hi) have their whole window inside the columns.
  const int64_t lo = (c.pad_w + STRIDE - 1) / STRIDE;
  const int64_t hi = c.w_in - 3 + c.pad_w < 0 ? 0 : std::min(c.ow, (c.w_in - 3 + c.pad_w) / STRIDE + 1);
  int64_t ox = 0;
  for (; ox < std::min(lo, c.ow); ++ox) edge<S, A>(c, rows, ox, w, bias, out + ox * L);
  const auto at = [&](int64_t o, const float* const in[3], const float* moved[3]) {
    for (int ky = 0; ky < 3; ++ky) moved[ky] = in[ky] ? in[ky] + (o * STRIDE - c.pad_w) * L : nullptr;
  };
  const float* moved[3];
  for (; ox + P <= hi; ox += P) {
    at(ox, rows, moved);
    tile<S, P, STRIDE, A>(moved, w, bias, out + ox * L);
  }
  for (; ox < hi; ++ox) {
    at(ox, rows, moved);
    tile<S, 1, STRIDE, A>(moved, w, bias, out + ox * L);
  }
  for (; ox < c.ow; ++ox) edge<S, A>(c, rows, ox, w, bias, out + ox * L);
}

template <class S, int STRIDE>
void by_activation(const DepthwiseConv& c, int64_t n, int64_t b, int64_t oy) {
  switch (c.act) {
    case Activation::relu: return row<S, STRIDE, Activation::relu>(c, n, b, oy);
    case Activation::relu6: return row<S, STRIDE, Activation::relu6>(c, n, b, oy);
    default: return row<S, STRIDE, Activation::none>(c, n, b, oy);
  }
}

}  // namespace

void PD_ISA_FN(depthwise_row)(const DepthwiseConv& c, int64_t n, int64_t b, int64_t oy) {
  if (c.stride == 2) return by_activation<simd::PD_ISA, 2>(c, n, b, oy);
  by_activation<simd::PD_ISA, 1>(c, n, b, oy);
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: depthwise_conv declines before calling these

namespace pd::kernels::reference {
void PD_ISA_FN(depthwise_row)(const DepthwiseConv&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference
#endif
