// grouped_conv (grouped_conv.h): the checks, the packed weight, and the rows across threads; the kernel
// is AVX-512 only (blocks of 16 hold two groups of 8).
#include "cpu/ref/grouped_conv.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/ref/block_weights.h"
#include "pd/core/cpu_features.h"
#include "pd/kernels/grouped_conv_rule.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

namespace pd::kernels::reference {
namespace {

constexpr int L = 16;

// The weight [C_out, 8, K, K] as [CB, K * K, 8, 16]: output lane l's weight for its group's input
// channel ci at tap t, lanes past C_out zero.
void pack_grouped(const Tensor& weight, BlockWeights& w) {
  const int64_t cout = weight.shape()[0], taps = weight.shape()[2] * weight.shape()[3], cb = (cout + L - 1) / L;
  const float* src = weight.data<float>();
  w.assign(static_cast<size_t>(cb * taps * kGroupWidth * L), 0.0f);
  for (int64_t co = 0; co < cout; ++co)
    for (int64_t ci = 0; ci < kGroupWidth; ++ci)
      for (int64_t t = 0; t < taps; ++t)
        w[static_cast<size_t>((((co / L) * taps + t) * kGroupWidth + ci) * L + co % L)] = src[(co * kGroupWidth + ci) * taps + t];
}

}  // namespace
}  // namespace pd::kernels::reference

// The kernel, for AVX-512 (the driver below calls it only on such a CPU).
PD_TARGET_PUSH("avx512f,avx2,fma")
#include "cpu/ref/isa/vector_activation.h"

namespace pd::kernels::reference {
namespace {

// P outputs from column ox of a row: for each tap and each of the group's 8 input channels, the input
// vectors permuted so that lanes 0-7 hold channel ci and lanes 8-15 channel 8 + ci, against the weights.
template <int P, Activation A>
void tile(const GroupedConv& c, const float* const* rows, int64_t ox, const float* w, __m512 bias, float* out) {
  __m512 acc[P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) acc[p] = bias;
  for (int64_t ky = 0; ky < c.k; ++ky) {
    if (rows[ky] == nullptr) continue;
    for (int64_t kx = 0; kx < c.k; ++kx) {
      __m512 in[P];
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) in[p] = _mm512_loadu_ps(rows[ky] + ((ox + p) * c.stride + kx) * L);
      const float* wt = w + (ky * c.k + kx) * kGroupWidth * L;
#pragma GCC unroll 8
      for (int ci = 0; ci < kGroupWidth; ++ci) {
        const __m512i idx = _mm512_set_epi32(8 + ci, 8 + ci, 8 + ci, 8 + ci, 8 + ci, 8 + ci, 8 + ci, 8 + ci, ci, ci, ci, ci, ci, ci, ci, ci);
        const __m512 wv = _mm512_loadu_ps(wt + ci * L);
        // The masked form with every lane set: the unmasked one's undefined source trips
        // -Wmaybe-uninitialized once the activation is inlined (simd.h's max has the same note).
#pragma GCC unroll 8
        for (int p = 0; p < P; ++p) acc[p] = _mm512_fmadd_ps(_mm512_mask_permutexvar_ps(in[p], 0xFFFF, idx, in[p]), wv, acc[p]);
      }
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) _mm512_storeu_ps(out + (ox + p) * L, activate_vector<simd::Avx512, A>(acc[p]));
}

// Output row `row` of block b of image n, through a zero-padded copy of its K input rows in `scratch`.
template <Activation A>
void row(const GroupedConv& c, int64_t n, int64_t b, int64_t oy, float* scratch) {
  constexpr int P = 8;
  const int64_t width = (c.ow - 1) * c.stride + c.k;  // padded columns read
  const float* image = c.x + (n * c.cb + b) * c.h * c.w_in * L;
  const float* rows[8] = {};
  for (int64_t ky = 0; ky < c.k; ++ky) {
    const int64_t iy = oy * c.stride - c.pad_h + ky;
    if (iy < 0 || iy >= c.h) continue;
    float* dst = scratch + ky * width * L;
    const int64_t cols = std::min(c.w_in, width - c.pad_w);
    std::fill(dst, dst + width * L, 0.0f);
    std::copy(image + iy * c.w_in * L, image + (iy * c.w_in + cols) * L, dst + c.pad_w * L);
    rows[ky] = dst;
  }
  const float* w = c.w + b * c.k * c.k * kGroupWidth * L;
  const __m512 bias = c.bias ? _mm512_loadu_ps(c.bias + b * L) : _mm512_setzero_ps();
  float* out = c.out + ((n * c.cb + b) * c.oh + oy) * c.ow * L;
  int64_t ox = 0;
  for (; ox + P <= c.ow; ox += P) tile<P, A>(c, rows, ox, w, bias, out);
  for (; ox + 4 <= c.ow; ox += 4) tile<4, A>(c, rows, ox, w, bias, out);
  for (; ox < c.ow; ++ox) tile<1, A>(c, rows, ox, w, bias, out);
}

}  // namespace

void grouped_row(const GroupedConv& c, int64_t n, int64_t b, int64_t oy, float* scratch) {
  dispatch_vector_activation(c.act, [&](auto a) { row<decltype(a)::value>(c, n, b, oy, scratch); });
}

}  // namespace pd::kernels::reference

PD_TARGET_POP

namespace pd::kernels::reference {

bool grouped_conv(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                  int64_t groups, Activation act, int64_t block, Tensor& out) {
  const Shape& ws = weight.shape();
  if (!cpu_has_avx512() || block != L || !vector_blocks_fit(x, act, block) || residual.defined()) return false;
  if (!grouped8_fits(ws[1] * groups, ws[0], groups, ws[2], ws[3]) || x.shape()[1] != (ws[0] + L - 1) / L) return false;
  if (stride[0] != stride[1] || stride[0] < 1 || stride[0] > 2 || dilation != std::vector<int64_t>{1, 1}) return false;
  if (padding[0] < 0 || padding[0] > ws[2] / 2 || padding[1] < 0 || padding[1] > ws[2] / 2) return false;
  const Shape& xs = x.shape();
  const Shape& os = out.shape();
  BlockWeights local, bias_lanes;
  std::shared_ptr<void> kept;
  const BlockWeights* packed = &packed_block_weights(ctx, weight, "grouped8", L, pack_grouped, local, kept);
  GroupedConv c;
  c.x = x.data<float>();
  c.w = packed->data();
  c.bias = padded_bias(bias, os[1] * L, bias_lanes);
  c.out = out.data<float>();
  c.k = ws[2], c.cb = xs[1], c.h = xs[2], c.w_in = xs[3], c.oh = os[2], c.ow = os[3];
  c.stride = stride[0], c.pad_h = padding[0], c.pad_w = padding[1], c.act = act;
  const int64_t scratch = c.k * ((c.ow - 1) * c.stride + c.k) * L;
  // One output row of one block an item: the threads share the rows of an image at batch 1.
  cpu::parallel_for(os[0] * c.cb * c.oh, c.ow * c.k * c.k * kGroupWidth * L, [&](int64_t i) {
    thread_local std::vector<float> rows;
    rows.resize(static_cast<size_t>(scratch));
    grouped_row(c, i / (c.cb * c.oh), (i / c.oh) % c.cb, i % c.oh, rows.data());
  });
  return true;
}

}  // namespace pd::kernels::reference

#else  // not x86-64: oneDNN or the reference kernel takes every grouped convolution

namespace pd::kernels::reference {
bool grouped_conv(const KernelContext&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const std::vector<int64_t>&,
                  const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, Activation, int64_t, Tensor&) {
  return false;
}
}  // namespace pd::kernels::reference
#endif
