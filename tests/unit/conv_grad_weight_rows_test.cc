// conv2d_grad_weight_rows (the weight gradient of convolutions with 1-3 input channels) against the
// gradient summed by plain loops, on every shape class it takes; it declines what it does not take, and
// its sums do not depend on the thread count. Called directly, so that the sanitizer build (which has
// no oneDNN backend to route conv2d_grad_weight to it) runs it too.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "cpu/ref/conv_grad_weight_direct.h"
#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/pd.h"

namespace {

// dw[o][c][ky][kx] = sum over n, oh, ow of grad[n][o][oh][ow] * x[n][c][oh + ky - ph][ow + kx - pw].
std::vector<double> loops(const pd::Tensor& grad, const pd::Tensor& x, const std::vector<int64_t>& w, int64_t ph, int64_t pw) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = w[0], KH = w[2], KW = w[3], OH = grad.shape()[2], OW = grad.shape()[3];
  const std::vector<float> g = grad.to_vector<float>(), xv = x.to_vector<float>();
  std::vector<double> dw(static_cast<size_t>(O * C * KH * KW), 0.0);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx)
          for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t h = oh + ky - ph, col = ow + kx - pw;
                if (h < 0 || h >= H || col < 0 || col >= W) continue;
                dw[static_cast<size_t>(((o * C + c) * KH + ky) * KW + kx)] +=
                    double{g[static_cast<size_t>(((n * O + o) * OH + oh) * OW + ow)]} * xv[static_cast<size_t>(((n * C + c) * H + h) * W + col)];
              }
  return dw;
}

struct Case {
  pd::Shape x;
  std::vector<int64_t> weight;
  std::vector<int64_t> padding;
};

pd::Tensor run(const Case& k, const pd::Tensor& grad, const pd::Tensor& x) {
  pd::Tensor dw = pd::ops::full(pd::Shape(k.weight.begin(), k.weight.end()), 0.0, pd::DType::f32);
  const bool took = pd::kernels::reference::conv2d_grad_weight_rows(grad, x, k.weight, {1, 1}, k.padding, {1, 1}, 1, dw);
  REQUIRE(took);
  return dw;
}

}  // namespace

TEST_CASE("conv2d_grad_weight_rows: the sums of plain loops, whatever the thread count", "[conv][kernel]") {
  if (!pd::cpu_has_avx2_fma() || pd::cpu_has_avx512()) {
    WARN("skipped: the kernel runs on AVX2 + FMA hosts without AVX-512 (PD_CPU_ISA=avx2 makes one)");
    return;
  }
  const std::vector<Case> cases = {
      {{3, 1, 28, 28}, {6, 1, 5, 5}, {2, 2}},    // LeNet's first layer
      {{2, 3, 10, 12}, {5, 3, 4, 6}, {1, 3}},    // an odd output channel, 6 taps wide, rows of 13
      {{1, 2, 7, 17}, {1, 2, 3, 1}, {0, 0}},     // one output channel, one tap wide
      {{2, 1, 5, 5}, {3, 1, 3, 3}, {4, 4}},      // padding wider than the kernel: rows of zeros only
      {{20, 1, 6, 9}, {4, 1, 3, 3}, {1, 1}},     // chunks of 3 images, the last one of 2
  };
  for (const Case& k : cases) {
    const int64_t OH = k.x[2] + 2 * k.padding[0] - k.weight[2] + 1, OW = k.x[3] + 2 * k.padding[1] - k.weight[3] + 1;
    const pd::Tensor x = pd::ops::uniform(k.x, -1, 1, 7);
    const pd::Tensor grad = pd::ops::uniform({k.x[0], k.weight[0], OH, OW}, -1, 1, 8);
    const std::vector<double> want = loops(grad, x, k.weight, k.padding[0], k.padding[1]);
    const int threads = pd::num_threads();
    pd::set_num_threads(1);
    const std::vector<float> one = run(k, grad, x).to_vector<float>();
    pd::set_num_threads(2);
    const std::vector<float> two = run(k, grad, x).to_vector<float>();
    pd::set_num_threads(threads);
    INFO("x " << pd::shape_str(k.x) << ", weight " << pd::shape_str(k.weight));
    REQUIRE(one.size() == want.size());
    CHECK(one == two);
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("element " << i << ": " << one[i] << " against " << want[i]);
      CHECK(std::abs(one[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])));
    }
  }
}

TEST_CASE("conv2d_grad_weight_rows declines what it does not take", "[conv][kernel]") {
  const pd::Tensor x = pd::ops::uniform({1, 4, 8, 8}, -1, 1, 1), grad = pd::ops::uniform({1, 2, 6, 6}, -1, 1, 2);
  pd::Tensor dw = pd::ops::full({2, 4, 3, 3}, 0.0, pd::DType::f32);
  using pd::kernels::reference::conv2d_grad_weight_rows;
  CHECK_FALSE(conv2d_grad_weight_rows(grad, x, {2, 4, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, dw));  // 4 input channels
  const pd::Tensor x1 = pd::ops::uniform({1, 1, 8, 8}, -1, 1, 3), grad2 = pd::ops::uniform({1, 2, 3, 3}, -1, 1, 4);
  pd::Tensor dw1 = pd::ops::full({2, 1, 3, 3}, 0.0, pd::DType::f32);
  CHECK_FALSE(conv2d_grad_weight_rows(grad2, x1, {2, 1, 3, 3}, {2, 2}, {0, 0}, {1, 1}, 1, dw1));  // stride 2
  const pd::Tensor grad7 = pd::ops::uniform({1, 2, 8, 2}, -1, 1, 5);
  pd::Tensor dw7 = pd::ops::full({2, 1, 1, 7}, 0.0, pd::DType::f32);
  CHECK_FALSE(conv2d_grad_weight_rows(grad7, x1, {2, 1, 1, 7}, {1, 1}, {0, 0}, {1, 1}, 1, dw7));  // 7 taps wide
  CHECK(dw.to_vector<float>() == std::vector<float>(static_cast<size_t>(dw.numel()), 0.0f));
}
