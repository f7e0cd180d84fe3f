// blocked_direct_conv (the direct kernel for many channels on small maps, channel blocks of 16) against
// sums of plain loops: every tile size (7, 4, 2, 1 pixels), a last group of fewer output blocks, stride
// 2, a residual and each activation; the same sums on 1, 2 and 4 threads (4 splits the batch's pixels
// into bands, which may cross images); and what it declines. Called directly, so that the sanitizer build (which has no oneDNN
// backend to route blocked_conv2d to it) runs it too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref/blocked_direct_conv.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/pd.h"

namespace {

constexpr int64_t L = 16;

struct Case {
  pd::Shape x;  // [N, cib, H, W, 16]
  int64_t cout, k, stride, pad;
  bool bias, residual;
  pd::Activation act;
};

// out[n][o / L][oh][ow][o % L] from plain loops in double, with the bias, the residual and the activation.
std::vector<double> loops(const Case& k, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias,
                          const std::vector<float>& res, int64_t OH, int64_t OW) {
  const int64_t N = k.x[0], cin = k.x[1] * L, H = k.x[2], W = k.x[3], cbo = k.cout / L;
  std::vector<double> out(static_cast<size_t>(N * cbo * OH * OW * L));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < k.cout; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = k.bias ? bias[static_cast<size_t>(o)] : 0.0;
          for (int64_t c = 0; c < cin; ++c)
            for (int64_t ky = 0; ky < k.k; ++ky)
              for (int64_t kx = 0; kx < k.k; ++kx) {
                const int64_t h = oh * k.stride + ky - k.pad, col = ow * k.stride + kx - k.pad;
                if (h < 0 || h >= H || col < 0 || col >= W) continue;
                s += double{w[static_cast<size_t>(((o * cin + c) * k.k + ky) * k.k + kx)]} *
                     x[static_cast<size_t>(((((n * (cin / L) + c / L) * H + h) * W + col) * L) + c % L)];
              }
          const size_t at = static_cast<size_t>((((n * cbo + o / L) * OH + oh) * OW + ow) * L + o % L);
          if (k.residual) s += res[at];
          if (k.act == pd::Activation::relu) s = std::max(s, 0.0);
          if (k.act == pd::Activation::relu6) s = std::min(std::max(s, 0.0), 6.0);
          if (k.act == pd::Activation::silu) s = s / (1 + std::exp(-s));
          out[at] = s;
        }
  return out;
}

}  // namespace

TEST_CASE("blocked_direct_conv: the sums of plain loops, whatever the thread count", "[conv][kernel]") {
  if (!pd::cpu_has_avx512()) {
    WARN("skipped: the kernel runs on AVX-512 hosts");
    return;
  }
  const std::vector<Case> cases = {
      {{1, 16, 7, 7, L}, 256, 3, 1, 1, true, false, pd::Activation::relu},     // ResNet's 7x7 maps: 7 tiles of 7, 4 groups
      {{2, 16, 9, 5, L}, 272, 3, 2, 1, false, true, pd::Activation::relu6},    // stride 2, 15 pixels (7, 7, 1), a group of 1 block
      {{1, 17, 4, 5, L}, 320, 3, 1, 1, true, true, pd::Activation::silu},      // 20 pixels (7, 7, 4, 2), 17 input blocks
      {{1, 16, 6, 6, L}, 256, 5, 1, 0, true, false, pd::Activation::none},     // a 5x5 window, no padding: 2x2 pixels
      {{3, 16, 5, 3, L}, 256, 3, 1, 1, true, true, pd::Activation::relu},      // 3 images of 15 pixels: 4 threads' bands cross images
  };
  for (const Case& k : cases) {
    const int64_t cin = k.x[1] * L, OH = (k.x[2] + 2 * k.pad - k.k) / k.stride + 1, OW = (k.x[3] + 2 * k.pad - k.k) / k.stride + 1;
    const pd::Tensor x = pd::ops::uniform(k.x, -1, 1, 7);
    const pd::Tensor w = pd::ops::uniform({k.cout, cin, k.k, k.k}, -0.1, 0.1, 8);
    const pd::Tensor bias = k.bias ? pd::ops::uniform({k.cout}, -1, 1, 9) : pd::Tensor();
    const pd::Shape out_shape{k.x[0], k.cout / L, OH, OW, L};
    const pd::Tensor res = k.residual ? pd::ops::uniform(out_shape, -1, 1, 10) : pd::Tensor();
    const std::vector<double> want = loops(k, x.to_vector<float>(), w.to_vector<float>(), k.bias ? bias.to_vector<float>() : std::vector<float>{},
                                           k.residual ? res.to_vector<float>() : std::vector<float>{}, OH, OW);
    const int threads = pd::num_threads();
    std::vector<std::vector<float>> got;
    for (int t : {1, 2, 4}) {
      pd::set_num_threads(t);
      pd::Tensor out = pd::ops::full(out_shape, 0.0, pd::DType::f32);
      const bool took = pd::kernels::reference::blocked_direct_conv({}, x, w, bias, res, {k.stride, k.stride}, {k.pad, k.pad}, {1, 1}, 1,
                                                                   k.act, L, out);
      REQUIRE(took);
      got.push_back(out.to_vector<float>());
    }
    pd::set_num_threads(threads);
    INFO("x " << pd::shape_str(k.x) << ", " << k.cout << " outputs, " << k.k << "x" << k.k << " stride " << k.stride);
    REQUIRE(got[0].size() == want.size());
    CHECK(got[0] == got[1]);
    CHECK(got[0] == got[2]);
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("element " << i << ": " << got[0][i] << " against " << want[i]);
      CHECK(std::abs(got[0][i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])));
    }
  }
}

TEST_CASE("blocked_direct_conv declines what it does not take", "[conv][kernel]") {
  using pd::kernels::reference::blocked_direct_conv;
  const auto declines = [](pd::Shape xs, pd::Shape ws, std::vector<int64_t> dilation, pd::Activation act, pd::Shape os) {
    const pd::Tensor x = pd::ops::uniform(xs, -1, 1, 1), w = pd::ops::uniform(ws, -1, 1, 2);
    pd::Tensor out = pd::ops::full(os, 0.0, pd::DType::f32);
    const bool took = blocked_direct_conv({}, x, w, pd::Tensor(), pd::Tensor(), {1, 1}, {1, 1}, dilation, 1, act, L, out);
    CHECK(out.to_vector<float>() == std::vector<float>(static_cast<size_t>(out.numel()), 0.0f));
    return !took;
  };
  CHECK(declines({1, 8, 7, 7, L}, {256, 128, 3, 3}, {1, 1}, pd::Activation::relu, {1, 16, 7, 7, L}));     // 128 inputs
  CHECK(declines({1, 16, 28, 28, L}, {256, 256, 3, 3}, {1, 1}, pd::Activation::relu, {1, 16, 28, 28, L}));  // a 28x28 map
  CHECK(declines({3, 16, 14, 14, L}, {256, 256, 3, 3}, {1, 1}, pd::Activation::relu, {3, 16, 14, 14, L}));  // 3 14x14 maps
  CHECK(declines({1, 16, 7, 7, L}, {256, 256, 3, 3}, {2, 2}, pd::Activation::relu, {1, 16, 5, 5, L}));      // dilation
  CHECK(declines({1, 16, 7, 7, L}, {256, 256, 3, 3}, {1, 1}, pd::Activation::gelu, {1, 16, 7, 7, L}));      // gelu
  CHECK(declines({1, 16, 7, 7, L}, {256, 256, 1, 1}, {1, 1}, pd::Activation::none, {1, 16, 9, 9, L}));      // 1x1
  if (!pd::cpu_has_avx512())  // AVX2 (PD_CPU_ISA=avx2 makes one): the kernel's case declined too
    CHECK(declines({1, 16, 7, 7, L}, {256, 256, 3, 3}, {1, 1}, pd::Activation::relu, {1, 16, 7, 7, L}));
}
