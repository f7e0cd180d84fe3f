// Mixed precision and the determinism switch on cuda:0: autocast runs the product ops in bf16 / f16
// and hands f32 gradients to f32 parameters; deterministic convolution gradients repeat bit for bit.
#include <catch2/catch.hpp>

#include <cmath>

#include "pd/core/determinism.h"
#include "pd/ops/amp.h"
#include "pd/pd.h"

using pd::DType;
using pd::Place;
using pd::Tensor;
namespace amp = pd::amp;

namespace {

Tensor ramp(std::vector<int64_t> shape, float step) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(static_cast<float>(i) * step);
  return Tensor::from_vector<float>(v, shape).to(Place::cuda(0));
}

float max_rel_diff(const Tensor& a, const Tensor& b) {
  const auto x = pd::ops::cast(a, DType::f32).to_vector<float>(), y = pd::ops::cast(b, DType::f32).to_vector<float>();
  float scale = 1e-6f, m = 0;
  for (float v : y) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m / scale;
}

}  // namespace

TEST_CASE("gpu: autocast runs linear in bf16 and f16; f32 parameters get f32 gradients", "[gpu][amp]") {
  for (DType low : {DType::bf16, DType::f16}) {
    Tensor x = ramp({64, 96}, 0.37f), w = ramp({48, 96}, 0.11f), b = ramp({48}, 0.5f);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    const Tensor want = pd::ops::linear(x, w, b);
    Tensor y;
    {
      amp::AutocastScope scope({low, amp::Level::O1});
      y = pd::ops::linear(x, w, b);
    }
    CHECK(y.dtype() == low);
    CHECK(max_rel_diff(y, want) < (low == DType::bf16 ? 2e-2f : 2e-3f));
    pd::backward(pd::ops::sum(pd::ops::cast(y, DType::f32)));
    REQUIRE(w.grad().defined());
    CHECK(w.grad().dtype() == DType::f32);
    CHECK(b.grad().dtype() == DType::f32);
    CHECK(w.grad().place() == Place::cuda(0));
    // d sum / d w = the column sums of x as the product saw it (rounded to the low dtype), summed in f32
    // and rounded once more to the low dtype as the product's output (bf16 2^-9, f16 2^-12 relative).
    const Tensor x_low = pd::ops::cast(pd::ops::cast(x, low), DType::f32);
    CHECK(max_rel_diff(w.grad(), pd::ops::expand(pd::ops::sum(x_low, {0}, true), {48, 96})) <
          (low == DType::bf16 ? 8e-3f : 1e-3f));
  }
}

TEST_CASE("gpu: autocast O1 keeps the loss in f32; O2 runs elementwise ops in the low dtype", "[gpu][amp]") {
  Tensor logits = ramp({8, 10}, 0.3f);
  Tensor label = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8}).to(Place::cuda(0));
  amp::AutocastScope scope({DType::bf16, amp::Level::O2});
  const Tensor h = pd::ops::relu(logits);
  CHECK(h.dtype() == DType::bf16);
  const Tensor loss = pd::ops::cross_entropy(h, label);
  CHECK(loss.dtype() == DType::f32);
}

TEST_CASE("gpu: with the determinism switch, convolution gradients repeat bit for bit", "[gpu][amp]") {
  pd::set_deterministic(true);
  Tensor x = ramp({16, 8, 20, 20}, 0.13f), w = ramp({16, 8, 3, 3}, 0.7f);
  const auto grads = [&] {
    Tensor xw = w.detach();
    xw.set_requires_grad(true);
    Tensor xx = x.detach();
    xx.set_requires_grad(true);
    pd::backward(pd::ops::sum(pd::ops::mul(pd::ops::conv2d(xx, xw, Tensor(), {1, 1}, {1, 1}), pd::ops::conv2d(xx, xw, Tensor(), {1, 1}, {1, 1}))));
    return std::make_pair(xx.grad().to_vector<float>(), xw.grad().to_vector<float>());
  };
  const auto first = grads(), second = grads();
  pd::set_deterministic(false);
  CHECK(first.first == second.first);
  CHECK(first.second == second.second);
}
