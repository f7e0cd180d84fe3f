// pointwise_conv's kernel (pointwise_conv.h) compiled for one instruction set. The build compiles this
// file once per set (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cpu/ref/pointwise_conv.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/isa/vector_activation.h"

namespace pd::kernels::reference {
namespace {

// P pixels by NB output blocks, summed over input channels [ci0, ci1) in registers: 12 x 2, 8 x 3 or 6 x 4
// zmm accumulators on AVX-512 (of 32 registers), 6 x 2 ymm on AVX2 (of 16), with the NB weight vectors
// and a broadcast. The first span of channels starts from the bias, a later one from the partial sums in
// `out`; the last adds the residual and applies the activation, an earlier one stores the partial sums.
template <class S, int P, int NB, Activation A>
void tile(const PointwiseConv& c, const float* x, const float* w, const float* bias, const float* res, float* out, int64_t ci0,
          int64_t ci1) {
  using V = typename S::V;
  constexpr int L = S::L;
  const int64_t x_block = c.hw * L, w_block = c.cin * L, out_block = c.hw * L;
  const bool first = ci0 == 0, last = ci1 == c.cin;
  // The loops over P and NB unrolled (GCC otherwise keeps acc in memory): acc lives in registers.
  V acc[P][NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const V b = bias ? S::load(bias + j * L) : S::zero();
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) acc[p][j] = first ? b : S::load(out + j * out_block + p * L);
  }
  for (int64_t ci = ci0; ci < ci1; ++ci) {
    const float* xc = x + (ci / L) * x_block + ci % L;
    V wv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) wv[j] = S::load(w + j * w_block + ci * L);
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      const V b = S::broadcast(xc + p * L);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[p][j] = S::fmadd(b, wv[j], acc[p][j]);
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j)
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      V v = acc[p][j];
      if (last && res) v = S::add(v, S::load(res + j * out_block + p * L));
      S::store(out + j * out_block + p * L, last ? activate_vector<S, A>(v) : v);
    }
}

// Most input channels a span: the span's weight vectors of the NB output blocks (16 KiB on AVX-512) stay
// in L1 across the run's tiles, where all of them at once were read from L2 for every tile (in the model,
// 2 threads: ResNet-50's 256 -> 128 at 56x56 680 -> 590 us; MobileNetV2's 576 -> 96 at 14x14, which
// stays on oneDNN, 134 -> 90).
constexpr int64_t kSpan = 128;

template <class S, int NB, Activation A>
void rows(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1) {
  constexpr int L = S::L, P = L == 16 ? (NB <= 2 ? 12 : NB == 3 ? 8 : 6) : 6;
  const int64_t ob = g * c.group;
  const float* x = c.x + n * c.cib * c.hw * L;
  const float* w = c.w + ob * c.cin * L;
  const float* bias = c.bias ? c.bias + ob * L : nullptr;
  const int64_t at = (n * c.cbo + ob) * c.hw * L;
  float* out = c.out + at;
  const float* res = c.residual ? c.residual + at : nullptr;
  const int64_t spans = (c.cin + kSpan - 1) / kSpan, span = (c.cin + spans - 1) / spans;  // as equal as they come
  for (int64_t ci0 = 0; ci0 < c.cin; ci0 += span) {
    const int64_t ci1 = std::min(c.cin, ci0 + span);
    int64_t p = p0;
    // Tiles of P, then of 4 and 1 for the rest (a 14x14 map's last 4 pixels: one tile, not four that
    // each load every weight vector for two multiply-adds).
    const auto tiles = [&]<int Q>(std::integral_constant<int, Q>) {
      for (; p + Q <= p1; p += Q) tile<S, Q, NB, A>(c, x + p * L, w, bias, res ? res + p * L : nullptr, out + p * L, ci0, ci1);
    };
    tiles(std::integral_constant<int, P>{});
    tiles(std::integral_constant<int, 4>{});
    tiles(std::integral_constant<int, 1>{});
  }
}

template <class S, Activation A>
void blocks(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1) {
  switch (std::min(c.group, c.cbo - g * c.group)) {
    case 1: return rows<S, 1, A>(c, n, g, p0, p1);
    case 2: return rows<S, 2, A>(c, n, g, p0, p1);
    // Groups of 3 and 4 come with blocks of 16 lanes only (pointwise_group), which vector_blocks_fit
    // gives the AVX-512 form alone: AVX2's has no such tiles to compile.
    case 3: if constexpr (S::L == 16) return rows<S, 3, A>(c, n, g, p0, p1); else return;
    default: if constexpr (S::L == 16) return rows<S, 4, A>(c, n, g, p0, p1); else return;
  }
}

template <class S>
void dispatch(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1) {
  dispatch_vector_activation(c.act, [&](auto a) { blocks<S, decltype(a)::value>(c, n, g, p0, p1); });
}

}  // namespace

void PD_ISA_FN(pointwise_rows)(const PointwiseConv& c, int64_t n, int64_t g, int64_t p0, int64_t p1) {
  dispatch<simd::PD_ISA>(c, n, g, p0, p1);
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: pointwise_conv declines before calling these

namespace pd::kernels::reference {
void PD_ISA_FN(pointwise_rows)(const PointwiseConv&, int64_t, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference
#endif
