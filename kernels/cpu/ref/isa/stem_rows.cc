// stem_conv's kernel (stem_conv.h) compiled for one instruction set. The build compiles this file once
// per set (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/ref/stem_conv.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/isa/vector_activation.h"

namespace pd::kernels::reference {
namespace {

// The input rows output row `row` reads, [C][KH][width], zero outside the image: the taps need no edge
// checks.
void fill_strip(const StemConv& c, int64_t n, int64_t row, int64_t width, float* strip) {
  std::fill(strip, strip + c.c * c.kh * width, 0.0f);
  const int64_t cols = std::min(c.w_in, width - c.pad_w);  // the input columns read: strip column pad_w on
  for (int64_t ch = 0; ch < c.c; ++ch)
    for (int64_t ky = 0; ky < c.kh; ++ky) {
      const int64_t iy = row * c.stride_h - c.pad_h + ky;
      if (iy < 0 || iy >= c.h || cols <= 0) continue;
      const float* src = c.x + ((n * c.c + ch) * c.h + iy) * c.w_in;
      std::memcpy(strip + (ch * c.kh + ky) * width + c.pad_w, src, static_cast<size_t>(cols) * sizeof(float));
    }
}

// P pixels from column ox0 by NB output blocks from block ob, summed over every tap in registers.
template <class S, int P, int NB, Activation A>
void tile(const StemConv& c, const float* strip, int64_t width, int64_t ob, int64_t ox0, float* out) {
  using V = typename S::V;
  constexpr int L = S::L;
  const int64_t taps = c.c * c.kh * c.kw, plane = c.oh * c.ow * L;
  V acc[P][NB];
#pragma GCC unroll 2
  for (int j = 0; j < NB; ++j) {
    const V b = c.bias ? S::load(c.bias + (ob + j) * L) : S::zero();
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) acc[p][j] = b;
  }
  const float* w = c.w + ob * taps * L;
  for (int64_t r = 0; r < c.c * c.kh; ++r) {
    const float* in = strip + r * width + ox0 * c.stride_w;
    for (int64_t kx = 0; kx < c.kw; ++kx) {
      V wv[NB];
#pragma GCC unroll 2
      for (int j = 0; j < NB; ++j) wv[j] = S::load(w + (j * taps + r * c.kw + kx) * L);
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) {
        const V b = S::broadcast(in + p * c.stride_w + kx);
#pragma GCC unroll 2
        for (int j = 0; j < NB; ++j) acc[p][j] = S::fmadd(b, wv[j], acc[p][j]);
      }
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < NB; ++j)
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) S::store(out + (ob + j) * plane + (ox0 + p) * L, activate_vector<S, A>(acc[p][j]));
}

template <class S, Activation A>
void row_blocks(const StemConv& c, int64_t n, int64_t row, float* strip) {
  constexpr int L = S::L, P = L == 16 ? 12 : 6;
  // AVX2's 16 registers hold the 12 sums, 2 weights and a broadcast: relu6's constant on top spilled a
  // sum to the stack inside the multiply-add loop (MobileNetV2's stem 0.13 ms with relu, 0.18 with
  // relu6; pd-bench, 2 threads). There the tiles store the sums and relu6 runs over the row after (0.14).
  constexpr Activation in_tile = L == 16 || A == Activation::relu ? A : Activation::none;
  const int64_t width = (c.ow - 1) * c.stride_w + c.kw, plane = c.oh * c.ow * L;
  fill_strip(c, n, row, width, strip);
  float* out = c.out + n * c.cbo * plane + row * c.ow * L;
  for (int64_t ob = 0; ob < c.cbo; ob += 2) {
    const bool two = ob + 1 < c.cbo;
    int64_t ox = 0;
    for (; ox + P <= c.ow; ox += P)
      two ? tile<S, P, 2, in_tile>(c, strip, width, ob, ox, out) : tile<S, P, 1, in_tile>(c, strip, width, ob, ox, out);
    for (; ox < c.ow; ++ox)
      two ? tile<S, 1, 2, in_tile>(c, strip, width, ob, ox, out) : tile<S, 1, 1, in_tile>(c, strip, width, ob, ox, out);
    if constexpr (in_tile != A)
      for (int64_t j = ob; j < ob + (two ? 2 : 1); ++j)
        for (float* v = out + j * plane; v < out + j * plane + c.ow * L; v += L) S::store(v, activate_vector<S, A>(S::load(v)));
  }
}

template <class S>
void dispatch(const StemConv& c, int64_t n, int64_t row, float* strip) {
  dispatch_vector_activation(c.act, [&](auto a) { row_blocks<S, decltype(a)::value>(c, n, row, strip); });
}

}  // namespace

void PD_ISA_FN(stem_row)(const StemConv& c, int64_t n, int64_t row, float* strip) { dispatch<simd::PD_ISA>(c, n, row, strip); }

}  // namespace pd::kernels::reference

PD_TARGET_POP

#else  // not x86-64: stem_conv declines before calling these

namespace pd::kernels::reference {
void PD_ISA_FN(stem_row)(const StemConv&, int64_t, int64_t, float*) {}
}  // namespace pd::kernels::reference
#endif
