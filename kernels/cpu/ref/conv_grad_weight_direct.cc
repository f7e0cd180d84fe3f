// conv_grad_weight_direct.h. Each weight-gradient tap is a sum over the batch's output pixels of input x
// output gradient; the output channels are the vector lanes: the output gradient transposed to
// [N][OH][OW][O] (one vector load per output pixel), each tap's input value broadcast against it, from an
// input zero-padded once per call (no bounds tests). A tile is one (block of 16 output channels, input
// channel): its 25 accumulators stay in registers over every image, then go to the taps. Tiles write
// disjoint taps, so threads need no reduction and the sums' order does not depend on the thread count.
#include "cpu/ref/conv_grad_weight_direct.h"

#include <algorithm>
#include <cstring>

#include "cpu/common/parallel.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::reference {

Tensor zero_padded_planes(const Tensor& x, int64_t Hp, int64_t Wp, int64_t ph, int64_t pw) {
  const int64_t planes = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t cols = std::min(W, Wp - pw);
  Tensor xp = Tensor::empty({x.shape()[0], x.shape()[1], Hp, Wp}, DType::f32);
  const float* xv = x.data<float>();
  float* xpv = xp.data<float>();
  cpu::parallel_for(planes, Hp * Wp, [&](int64_t plane) {
    float* out = xpv + plane * Hp * Wp;
    std::fill(out, out + Hp * Wp, 0.0f);
    for (int64_t h = 0; h < H && h + ph < Hp; ++h)
      std::memcpy(out + (h + ph) * Wp + pw, xv + (plane * H + h) * W, static_cast<size_t>(cols) * sizeof(float));
  });
  return xp;
}

}  // namespace pd::kernels::reference

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

namespace pd::kernels::reference {
namespace {

constexpr int64_t kLanes = 16, kTaps = 5;

struct Geom {
  int64_t N = 0, C = 0, O = 0, OH = 0, OW = 0, Hp = 0, Wp = 0;
  int64_t Op = 0;             // the output channels padded to whole vectors
  const float* xp = nullptr;  // [N][C][Hp][Wp]: the input with its padding
  const float* dy = nullptr;  // [N][OH][OW][Op]: the output gradient, channels last, zeros past O
};

PD_TARGET_PUSH("avx512f,avx2,fma")
// dw[o .. o + 16)[c][5][5] += xp[oh + ky][ow + kx] * dy[oh][ow][o .. o + 16) over the images and pixels.
void tile(const Geom& g, int64_t o, int64_t c, float* dw) {
  using S = simd::Avx512;
  S::V acc[kTaps][kTaps];
#pragma GCC unroll 5
  for (int ky = 0; ky < kTaps; ++ky)
#pragma GCC unroll 5
    for (int kx = 0; kx < kTaps; ++kx) acc[ky][kx] = S::zero();
  for (int64_t n = 0; n < g.N; ++n) {
    const float* dy = g.dy + n * g.OH * g.OW * g.Op + o;
    const float* xp = g.xp + (n * g.C + c) * g.Hp * g.Wp;
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const S::V d = S::load(dy + (oh * g.OW + ow) * g.Op);
#pragma GCC unroll 5
        for (int ky = 0; ky < kTaps; ++ky) {
          const float* at = xp + (oh + ky) * g.Wp + ow;
#pragma GCC unroll 5
          for (int kx = 0; kx < kTaps; ++kx) acc[ky][kx] = S::fmadd(S::broadcast(at + kx), d, acc[ky][kx]);
        }
      }
  }
  alignas(64) float lanes[kLanes];
  for (int ky = 0; ky < kTaps; ++ky)
    for (int kx = 0; kx < kTaps; ++kx) {
      S::store(lanes, acc[ky][kx]);
      for (int64_t l = 0; l < kLanes && o + l < g.O; ++l) dw[(((o + l) * g.C + c) * kTaps + ky) * kTaps + kx] = lanes[l];
    }
}
PD_TARGET_POP

}  // namespace

bool conv2d_grad_weight_direct(const Tensor& grad, const Tensor& x, const std::vector<int64_t>& weight_shape,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                               const std::vector<int64_t>& dilation, int64_t groups, Tensor& dw) {
  if (x.dtype() != DType::f32 || !cpu_has_avx512() || groups != 1 || stride[0] != 1 || stride[1] != 1 || dilation[0] != 1 ||
      dilation[1] != 1 || weight_shape[2] != kTaps || weight_shape[3] != kTaps)
    return false;
  Geom g;
  g.N = x.shape()[0], g.C = x.shape()[1], g.O = weight_shape[0], g.OH = grad.shape()[2], g.OW = grad.shape()[3];
  g.Op = (g.O + kLanes - 1) / kLanes * kLanes;
  const int64_t pixels = g.OH * g.OW;
  if (g.C >= 16 || g.O < kLanes || g.O > 64 || g.N == 0 || pixels == 0 || g.N * pixels * g.Op * 4 > (int64_t{1} << 20)) return false;
  const int64_t H = x.shape()[2], W = x.shape()[3], ph = padding[0], pw = padding[1];
  g.Hp = H + 2 * ph, g.Wp = W + 2 * pw;

  const Tensor xp = zero_padded_planes(x, g.Hp, g.Wp, ph, pw);
  const float* xpv = xp.data<float>();
  Tensor dy = Tensor::empty({g.N, pixels, g.Op}, DType::f32);
  const float* gv = grad.data<float>();
  float* dyv = dy.data<float>();
  cpu::parallel_for(g.N, g.O * pixels, [&](int64_t n) {
    float* out = dyv + n * pixels * g.Op;
    const float* in = gv + n * g.O * pixels;
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t o = 0; o < g.O; ++o) out[p * g.Op + o] = in[o * pixels + p];
      std::fill(out + p * g.Op + g.O, out + (p + 1) * g.Op, 0.0f);
    }
  });
  g.xp = xpv, g.dy = dyv;

  float* dwv = dw.data<float>();
  const int64_t blocks = g.Op / kLanes;
  cpu::parallel_for(blocks * g.C, g.N * pixels * kLanes * kTaps * kTaps, [&](int64_t t) { tile(g, t / g.C * kLanes, t % g.C, dwv); });
  return true;
}

}  // namespace pd::kernels::reference

#else  // not x86-64: oneDNN takes every call

namespace pd::kernels::reference {
bool conv2d_grad_weight_direct(const Tensor&, const Tensor&, const std::vector<int64_t>&, const std::vector<int64_t>&,
                               const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t, Tensor&) {
  return false;
}
}  // namespace pd::kernels::reference
#endif
