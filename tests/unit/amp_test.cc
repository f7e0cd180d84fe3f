// Autocast's decisions on the CPU (where no op has a bf16 / f16 product kernel, so the low-precision
// list falls back to f32), and f16 loss scaling. The GPU side is in tests/gpu/amp_test.cc.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "pd/ops/amp.h"
#include "pd/pd.h"
#include "pd/train/loss_scaler.h"
#include "test_util.h"

using pd::DType;
using pd::Tensor;
using pd::test::error_of;
namespace amp = pd::amp;

TEST_CASE("amp: the policy is bf16 or f16, O1 or O2, and says what else it got", "[amp]") {
  CHECK(amp::parse_policy("bf16", "O1").dtype == DType::bf16);
  CHECK(amp::parse_policy("f16", "O2").level == amp::Level::O2);
  CHECK(error_of([] { amp::parse_policy("fp8", "O1"); }).find("bf16 or f16, but received 'fp8'") != std::string::npos);
  CHECK(error_of([] { amp::parse_policy("bf16", "O3"); }).find("O1 or O2, but received 'O3'") != std::string::npos);
}

TEST_CASE("amp: ops are sorted into low-precision, f32 and follow-the-inputs lists", "[amp]") {
  CHECK(amp::op_class("matmul") == amp::OpClass::low);
  CHECK(amp::op_class("conv2d") == amp::OpClass::low);
  CHECK(amp::op_class("softmax") == amp::OpClass::f32);
  CHECK(amp::op_class("cross_entropy") == amp::OpClass::f32);
  CHECK(amp::op_class("relu") == amp::OpClass::follow);
}

TEST_CASE("amp: under autocast an f32-list op casts low-precision inputs up, and the gradient comes back in their dtype",
          "[amp]") {
  Tensor x = pd::ops::cast(Tensor::from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f}, {2, 2}), DType::bf16);
  x.set_requires_grad(true);
  Tensor y;
  {
    amp::AutocastScope scope({DType::bf16, amp::Level::O1});
    CHECK(amp::active());
    y = pd::ops::softmax(x, -1);
  }
  CHECK(!amp::active());
  CHECK(y.dtype() == DType::f32);
  pd::backward(pd::ops::sum(pd::ops::mul(y, y)));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().dtype() == DType::bf16);
  // Without autocast the op runs in its input's dtype, and the CPU has no bf16 softmax.
  CHECK(error_of([&] { pd::ops::softmax(x.detach(), -1); }).find("no kernel for dtype bf16") != std::string::npos);
}

TEST_CASE("amp: an op on the low-precision list runs in f32 where its place has no low-precision kernel", "[amp]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  amp::AutocastScope scope({DType::bf16, amp::Level::O2});
  CHECK(!amp::cast_target("matmul", {&a, &a}).has_value());  // f32 already: nothing to cast
  const Tensor m = pd::ops::matmul(a, a);
  CHECK(m.dtype() == DType::f32);
  CHECK(m.to_vector<float>() == std::vector<float>{7, 10, 15, 22});
}

TEST_CASE("amp: ops of the follow list take the widest input dtype under O1", "[amp]") {
  Tensor a = Tensor::from_vector<float>({1, 2}, {2});
  Tensor b = pd::ops::cast(Tensor::from_vector<float>({0.5f, 0.25f}, {2}), DType::bf16);
  amp::AutocastScope scope({DType::bf16, amp::Level::O1});
  REQUIRE(amp::cast_target("add", {&a, &b}) == DType::f32);
  // All bf16, but the CPU has no bf16 add: cast up so that the op runs (on a GPU they stay bf16).
  CHECK(amp::cast_target("add", {&b, &b}) == DType::f32);
  const Tensor s = pd::ops::add(a, b);
  CHECK(s.dtype() == DType::f32);
  CHECK(s.to_vector<float>() == std::vector<float>{1.5f, 2.25f});
  // f64 and integer tensors are never cast.
  Tensor d = Tensor::from_vector<double>({1, 2}, {2});
  CHECK(!amp::cast_target("add", {&d, &d}).has_value());
}

TEST_CASE("amp: f16 loss scaling skips a step whose gradients overflowed and halves the scale", "[amp]") {
  Tensor w = Tensor::from_vector<float>({1, 2}, {2});
  w.set_requires_grad(true);
  std::vector<pd::train::NamedParam> params{{"w", w}};
  pd::train::LossScaler scaler(true);
  CHECK(scaler.scale() == 65536.0);
  const Tensor scaled = scaler.scale_loss(Tensor::full_scalar(0.5, DType::f32));
  CHECK(scaled.item<double>() == 32768.0);

  w.set_grad(Tensor::from_vector<float>({65536.0f, -131072.0f}, {2}));
  REQUIRE(scaler.unscale(params));
  CHECK(w.grad().to_vector<float>() == std::vector<float>{1.0f, -2.0f});

  w.set_grad(Tensor::from_vector<float>({std::numeric_limits<float>::infinity(), 1.0f}, {2}));
  CHECK(!scaler.unscale(params));
  CHECK(!w.grad().defined());  // cleared: the optimizer step is skipped
  CHECK(scaler.scale() == 32768.0);
  CHECK(scaler.skipped_steps() == 1);

  // The state survives a checkpoint; a checkpoint of another run starts afresh.
  pd::train::LossScaler resumed(true);
  resumed.load_state(scaler.state(), "ckpt");
  CHECK(resumed.scale() == 32768.0);
  CHECK(resumed.skipped_steps() == 1);
  CHECK(error_of([&] { resumed.load_state({{"amp_loss_scale", "x"}}, "ckpt"); }).find("damaged") != std::string::npos);
}

TEST_CASE("amp: the scale doubles after 2000 good steps; off, the scaler changes nothing", "[amp]") {
  Tensor w = Tensor::from_vector<float>({1}, {1});
  w.set_requires_grad(true);
  std::vector<pd::train::NamedParam> params{{"w", w}};
  pd::train::LossScaler scaler(true);
  for (int i = 0; i < 2000; ++i) {
    w.set_grad(Tensor::from_vector<float>({1.0f}, {1}));
    REQUIRE(scaler.unscale(params));
  }
  CHECK(scaler.scale() == 131072.0);

  pd::train::LossScaler off(false);
  CHECK(off.scale() == 1.0);  // pd-dist multiplies each rank's loss weight by it
  const Tensor loss = Tensor::full_scalar(0.5, DType::f32);
  CHECK(off.scale_loss(loss).item<double>() == 0.5);
  w.set_grad(Tensor::from_vector<float>({std::numeric_limits<float>::infinity()}, {1}));
  CHECK(off.unscale(params));
  CHECK(off.state().empty());
}
