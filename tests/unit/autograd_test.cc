// Autograd engine behaviour users rely on.
#include <catch2/catch.hpp>

#include "pd/pd.h"

using pd::Tensor;
namespace ops = pd::ops;

TEST_CASE("backward accumulates into leaves only, and for tensors used twice", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 2, 3}, {3});
  x.set_requires_grad(true);
  Tensor y = ops::mul(x, x);            // x used twice
  Tensor z = ops::sum(ops::add(y, x));  // dz/dx = 2x + 1
  pd::backward(z);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3, 5, 7});
  CHECK(!y.grad().defined());
  pd::backward(ops::sum(x));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4, 6, 8});
}

TEST_CASE("grad with create_graph gives differentiable gradients", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({0.5, -1.0}, {2});
  x.set_requires_grad(true);
  Tensor y = ops::sum(ops::tanh(x));
  Tensor g = pd::grad({y}, {x}, {}, true)[0];        // 1 - tanh^2
  Tensor gg = pd::grad({ops::sum(g)}, {x})[0];         // -2 tanh (1 - tanh^2)
  auto xv = x.to_vector<double>();
  auto ggv = gg.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    double t = std::tanh(xv[i]);
    CHECK(ggv[i] == Approx(-2 * t * (1 - t * t)).epsilon(1e-12));
  }
  CHECK(!x.grad().defined());  // grad() leaves .grad() alone
}

TEST_CASE("no-grad scope records nothing", "[autograd]") {
  Tensor x = Tensor::from_vector<float>({1, 2}, {2});
  x.set_requires_grad(true);
  pd::NoGradGuard guard;
  Tensor y = ops::mul(x, x);
  CHECK(!y.requires_grad());
  CHECK_THROWS_AS(pd::backward(ops::sum(y)), pd::Error);
}

TEST_CASE("hooks see and may replace the gradient", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 2}, {2});
  x.set_requires_grad(true);
  Tensor y = ops::mul(x, Tensor::scalar<double>(3.0));
  y.register_hook([](const Tensor& g) { return ops::mul(g, Tensor::scalar<double>(2.0)); });
  pd::backward(ops::sum(y));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{6, 6});
}

TEST_CASE("backward of a non-scalar needs its gradient", "[autograd]") {
  Tensor x = Tensor::from_vector<double>({1, 2}, {2});
  x.set_requires_grad(true);
  CHECK_THROWS_WITH(pd::backward(ops::mul(x, x)), Catch::Contains("one-element"));
}
