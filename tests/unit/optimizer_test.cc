// Optimizers, learning-rate schedules and gradient clipping against hand-computed values.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>

#include "pd/io/tensor_file.h"
#include "pd/pd.h"
#include "pd/train/optimizer.h"
#include "test_util.h"

using pd::Tensor;
using pd::train::NamedParam;
using pd::train::Optimizer;
using pd::train::OptimizerConfig;
using pd::train::OptimizerKind;
using pd::test::error_of;

namespace {

NamedParam param(const std::string& name, std::vector<double> v) {
  Tensor t = Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())});
  t.set_requires_grad(true);
  return {name, t};
}

void set_grad(const NamedParam& p, std::vector<double> g) {
  p.value.set_grad(Tensor::from_vector<double>(g, {static_cast<int64_t>(g.size())}));
}

double value(const NamedParam& p, size_t i = 0) { return p.value.to_vector<double>()[i]; }

}  // namespace

TEST_CASE("SGD steps with and without weight decay", "[optim]") {
  auto p = param("w", {1, 2});
  Optimizer sgd({p}, {.kind = OptimizerKind::SGD});
  set_grad(p, {0.5, -1});
  sgd.step(0.1);
  CHECK(value(p, 0) == Approx(0.95));
  CHECK(value(p, 1) == Approx(2.1));
  CHECK(!p.value.grad().defined());  // step clears the gradients

  auto q = param("w", {1, 2});
  Optimizer decayed({q}, {.kind = OptimizerKind::SGD, .weight_decay = 0.1});
  set_grad(q, {0.5, -1});
  decayed.step(0.1);  // g + 0.1 * p = {0.6, -0.8}
  CHECK(value(q, 0) == Approx(0.94));
  CHECK(value(q, 1) == Approx(2.08));
}

TEST_CASE("SGD on a gradient from backward, skipping params without one", "[optim]") {
  Tensor w = Tensor::from_vector<float>({1, -2, 3}, {3});
  w.set_requires_grad(true);
  Tensor unused = Tensor::from_vector<float>({5}, {1});
  unused.set_requires_grad(true);
  Optimizer opt({{"w", w}, {"unused", unused}}, {});
  pd::backward(pd::ops::sum(pd::ops::mul(w, w)));  // grad 2w
  opt.step(0.1);
  CHECK(w.to_vector<float>() == std::vector<float>{0.8f, -1.6f, 2.4f});
  CHECK(unused.to_vector<float>() == std::vector<float>{5});
}

TEST_CASE("Momentum and Nesterov follow PyTorch", "[optim]") {
  auto p = param("w", {1});
  Optimizer mom({p}, {.kind = OptimizerKind::Momentum, .momentum = 0.9});
  set_grad(p, {1});
  mom.step(0.1);  // buf = 1
  CHECK(value(p) == Approx(0.9));
  set_grad(p, {1});
  mom.step(0.1);  // buf = 0.9 + 1
  CHECK(value(p) == Approx(0.71));

  auto n = param("w", {1});
  Optimizer nes({n}, {.kind = OptimizerKind::Momentum, .momentum = 0.9, .nesterov = true});
  set_grad(n, {1});
  nes.step(0.1);  // g + 0.9 * buf = 1.9
  CHECK(value(n) == Approx(0.81));
  set_grad(n, {1});
  nes.step(0.1);  // buf = 1.9; 1 + 0.9 * 1.9 = 2.71
  CHECK(value(n) == Approx(0.539));
}

TEST_CASE("Adam and AdamW with bias correction", "[optim]") {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  // Reference: two steps of Adam written out in scalars.
  auto reference = [&](bool decoupled, double wd_l2, double wd_dec) {
    double p = 1, m = 0, v = 0;
    const double grads[2] = {0.5, -2.0};
    for (int t = 1; t <= 2; ++t) {
      double g = grads[t - 1] + wd_l2 * p;
      if (decoupled) p -= lr * wd_dec * p;
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
      p -= lr * mhat / (std::sqrt(vhat) + eps);
    }
    return p;
  };
  auto run = [&](OptimizerConfig c) {
    auto p = param("w", {1});
    Optimizer opt({p}, c);
    set_grad(p, {0.5});
    opt.step(lr);
    double first = value(p);
    set_grad(p, {-2.0});
    opt.step(lr);
    return std::pair{first, value(p)};
  };
  auto [adam1, adam2] = run({.kind = OptimizerKind::Adam});
  CHECK(adam1 == Approx(0.9));  // the first Adam step moves by lr
  CHECK(adam2 == Approx(reference(false, 0, 0)).epsilon(1e-12));
  auto [l2_1, l2_2] = run({.kind = OptimizerKind::Adam, .weight_decay = wd});
  CHECK(l2_2 == Approx(reference(false, wd, 0)).epsilon(1e-12));
  auto [w1, w2] = run({.kind = OptimizerKind::AdamW, .weight_decay = wd});
  CHECK(w1 == Approx(0.89));  // p * (1 - lr * wd) - lr
  CHECK(w2 == Approx(reference(true, 0, wd)).epsilon(1e-12));
  CHECK(l2_2 != Approx(w2));
}

TEST_CASE("optimizer state round trip continues bit-identically", "[optim]") {
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Adam, OptimizerKind::AdamW}) {
    OptimizerConfig c{.kind = kind, .weight_decay = 0.01};
    Tensor w = pd::ops::uniform({3, 4}, -1, 1, 1), b = pd::ops::uniform({4}, -1, 1, 2);
    Optimizer a({{"w", w}, {"b", b}}, c);
    for (int s = 0; s < 3; ++s) {
      w.set_grad(pd::ops::uniform({3, 4}, -1, 1, 10 + s));
      b.set_grad(pd::ops::uniform({4}, -1, 1, 20 + s));
      a.step(0.01);
    }
    // Through the archive format, as a checkpoint would.
    const std::string path = "/tmp/pd_optim_state_" + std::to_string(::getpid()) + ".pdt";
    pd::io::save_tensors(path, a.state());
    auto state = pd::io::load_tensors(path).tensors;
    std::remove(path.c_str());
    CHECK(state.at("step").item<int64_t>() == 3);
    CHECK(state.at("step").dim() == 0);

    Tensor w2 = w.clone(), b2 = b.clone();
    Optimizer restored({{"w", w2}, {"b", b2}}, c);
    restored.load_state(state);
    Tensor gw = pd::ops::uniform({3, 4}, -1, 1, 99), gb = pd::ops::uniform({4}, -1, 1, 98);
    w.set_grad(gw);
    b.set_grad(gb);
    w2.set_grad(gw.clone());
    b2.set_grad(gb.clone());
    a.step(0.01);
    restored.step(0.01);
    CHECK(w.to_vector<float>() == w2.to_vector<float>());
    CHECK(b.to_vector<float>() == b2.to_vector<float>());
  }
}

TEST_CASE("load_state names the bad key", "[optim]") {
  Tensor w = pd::ops::zeros({2, 2});
  Optimizer opt({{"w", w}}, {.kind = OptimizerKind::Adam});
  auto good = opt.state();
  CHECK(good.count("w.m") == 1);
  CHECK(good.count("w.v") == 1);
  auto missing = good;
  missing.erase("w.v");
  CHECK_THAT(error_of([&] { opt.load_state(missing); }), Catch::Contains("w.v"));
  auto shape = good;
  shape["w.m"] = pd::ops::zeros({4});
  CHECK_THAT(error_of([&] { opt.load_state(shape); }), Catch::Contains("w.m") && Catch::Contains("shape"));
  auto dtype = good;
  dtype["w.m"] = pd::ops::zeros({2, 2}, pd::DType::f64);
  CHECK_THAT(error_of([&] { opt.load_state(dtype); }), Catch::Contains("w.m") && Catch::Contains("dtype"));
  auto extra = good;
  extra["x.m"] = pd::ops::zeros({2, 2});
  CHECK_THAT(error_of([&] { opt.load_state(extra); }), Catch::Contains("x.m"));
  Optimizer sgd({{"w", w}}, {});
  CHECK_THROWS_AS(sgd.load_state(good), pd::Error);  // Adam state into SGD
}

TEST_CASE("optimizer refuses views and non-float params", "[optim]") {
  Tensor x = pd::ops::zeros({2, 3});
  Tensor t = pd::ops::transpose(x, {1, 0});
  CHECK_THAT(error_of([&] { Optimizer({{"t", t}}, {}); }), Catch::Contains("'t'") && Catch::Contains("contiguous"));
  Tensor i = Tensor::from_vector<int64_t>({1}, {1});
  CHECK_THROWS_AS(Optimizer({{"i", i}}, {}), pd::Error);
  CHECK_THROWS_AS(Optimizer({{"a", x}, {"a", pd::ops::zeros({1})}}, {}), pd::Error);
}

TEST_CASE("learning-rate schedules", "[optim]") {
  using pd::train::LrSchedule;
  using pd::train::ScheduleKind;
  LrSchedule warm({.kind = ScheduleKind::Constant, .base_lr = 0.1, .milestones = {}, .warmup_steps = 10, .warmup_start_factor = 0.1});
  CHECK(warm.lr(0) == Approx(0.01));
  CHECK(warm.lr(5) == Approx(0.055));
  CHECK(warm.lr(10) == Approx(0.1));
  CHECK(warm.lr(1000) == Approx(0.1));

  LrSchedule cosine({.kind = ScheduleKind::Cosine, .base_lr = 1.0, .total_steps = 100, .min_lr = 0.1, .milestones = {}});
  CHECK(cosine.lr(0) == Approx(1.0));
  CHECK(cosine.lr(50) == Approx(0.55));
  CHECK(cosine.lr(100) == Approx(0.1));
  CHECK(cosine.lr(500) == Approx(0.1));
  LrSchedule cosine_warm({.kind = ScheduleKind::Cosine, .base_lr = 1.0, .total_steps = 100, .milestones = {}, .warmup_steps = 10});
  CHECK(cosine_warm.lr(0) == Approx(0.0).margin(1e-15));
  CHECK(cosine_warm.lr(10) == Approx((1 + std::cos(std::numbers::pi * 0.1)) / 2));

  LrSchedule step({.kind = ScheduleKind::Step, .base_lr = 1.0, .step_size = 10, .milestones = {}, .gamma = 0.5});
  CHECK(step.lr(9) == Approx(1.0));
  CHECK(step.lr(10) == Approx(0.5));
  CHECK(step.lr(25) == Approx(0.25));

  LrSchedule multi({.kind = ScheduleKind::MultiStep, .base_lr = 1.0, .milestones = {3, 7}, .gamma = 0.1});
  CHECK(multi.lr(2) == Approx(1.0));
  CHECK(multi.lr(3) == Approx(0.1));
  CHECK(multi.lr(6) == Approx(0.1));
  CHECK(multi.lr(7) == Approx(0.01));

  CHECK_THROWS_AS(LrSchedule({.kind = ScheduleKind::Cosine, .total_steps = 0, .milestones = {}}), pd::Error);
  CHECK_THROWS_AS(LrSchedule({.kind = ScheduleKind::Step, .step_size = 0, .milestones = {}}), pd::Error);
  CHECK_THAT(error_of([] { LrSchedule({.kind = ScheduleKind::MultiStep, .milestones = {5, 3}}); }),
             Catch::Contains("milestones"));
}

TEST_CASE("clip_grad_norm scales to max_norm", "[optim]") {
  auto a = param("a", {3, 4});
  auto b = param("b", {12});
  auto c = param("c", {7});  // no gradient: ignored
  set_grad(a, {3, 4});
  set_grad(b, {12});
  CHECK(pd::train::clip_grad_norm({a, b, c}, 1.0) == Approx(13.0));
  auto ga = a.value.grad().to_vector<double>(), gb = b.value.grad().to_vector<double>();
  CHECK(ga[0] == Approx(3.0 / 13));
  CHECK(ga[1] == Approx(4.0 / 13));
  CHECK(gb[0] == Approx(12.0 / 13));
  CHECK(std::sqrt(ga[0] * ga[0] + ga[1] * ga[1] + gb[0] * gb[0]) == Approx(1.0));
  CHECK(!c.value.grad().defined());
  // Below the limit nothing changes.
  CHECK(pd::train::clip_grad_norm({a, b, c}, 2.0) == Approx(1.0));
  CHECK(a.value.grad().to_vector<double>()[0] == Approx(3.0 / 13));
}

TEST_CASE("optimizer update ops work in place and refuse tensors autograd tracks", "[optim]") {
  Tensor p = Tensor::from_vector<double>({1.0, 2.0}, {2});
  const Tensor g = Tensor::from_vector<double>({0.5, -1.0}, {2});
  Tensor out = pd::ops::sgd_step(p, g, 0.1);
  CHECK(out.storage() == p.storage());  // the output is the parameter itself
  CHECK(p.to_vector<double>() == std::vector<double>{1.0 - 0.05, 2.0 + 0.1});
  // A leaf that requires grad may only be updated under no-grad, as Optimizer::step does.
  p.set_requires_grad(true);
  CHECK_THROWS_WITH(pd::ops::sgd_step(p, g, 0.1), Catch::Contains("sgd_step: argument 'param' is updated in place but requires grad"));
  {
    pd::NoGradGuard no_grad;
    CHECK_NOTHROW(pd::ops::sgd_step(p, g, 0.1));
  }
  // A strided view cannot be updated in place; mismatched shapes name the argument.
  Tensor wide = pd::ops::zeros({2, 4}, pd::DType::f64);
  CHECK_THROWS_WITH(pd::ops::sgd_step(pd::ops::transpose(wide, {1, 0}), pd::ops::zeros({4, 2}, pd::DType::f64), 0.1),
                    Catch::Contains("must be contiguous"));
  CHECK_THROWS_WITH(pd::ops::sgd_step(Tensor::from_vector<double>({1.0}, {1}), g, 0.1), Catch::Contains("'grad'"));
}
