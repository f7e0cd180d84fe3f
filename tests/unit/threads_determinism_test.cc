// Kernels that split their sums across threads in fixed chunks give the same bits on any thread
// count: pd-train's runs are reproducible whatever --threads says.
#include <catch2/catch.hpp>

#include "pd/core/threads.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::Tensor;
namespace ops = pd::ops;

namespace {

struct BnRun {
  Tensor out, dx, dscale, running_var;
};

// batch_norm in training on channels_last x, then its gradient for the upstream gradient g.
BnRun channels_last_batch_norm(const Tensor& x0, const Tensor& g, int threads) {
  const int saved = pd::num_threads();
  pd::set_num_threads(threads);
  const int64_t C = x0.shape().back();
  Tensor x = x0.clone(), scale = ops::full({C}, 1.5), bias = ops::full({C}, 0.25);
  Tensor mean = ops::zeros({C}), var = ops::full({C}, 1.0);
  x.set_requires_grad(true);
  scale.set_requires_grad(true);
  BnRun r;
  r.out = std::get<0>(ops::batch_norm(x, scale, bias, mean, var, 0.9, 1e-5, true, /*fuse_relu=*/true, /*channels_last=*/true));
  pd::backward(ops::sum(ops::mul(r.out, g)));
  r.dx = x.grad(), r.dscale = scale.grad(), r.running_var = var;
  pd::set_num_threads(saved);
  return r;
}

}  // namespace

TEST_CASE("batch_norm on channels_last data gives the same bits on 1, 2 and 3 threads", "[ops]") {
  // 8 x 12 x 12 rows of 24 channels: several chunks of rows for the threads to share.
  const Tensor x = ops::add(ops::normal({8, 12, 12, 24}, 0, 1, 3), ops::full({24}, 100.0));  // |mean| >> std
  const Tensor g = ops::normal({8, 12, 12, 24}, 0, 1, 4);
  const BnRun one = channels_last_batch_norm(x, g, 1);
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    const BnRun many = channels_last_batch_norm(x, g, threads);
    CHECK(pd::test::max_abs_diff(one.out, many.out) == 0.0f);
    CHECK(pd::test::max_abs_diff(one.dx, many.dx) == 0.0f);
    CHECK(pd::test::max_abs_diff(one.dscale, many.dscale) == 0.0f);
    CHECK(pd::test::max_abs_diff(one.running_var, many.running_var) == 0.0f);
  }
  // The shift keeps the variance of data far from 0 exact: batch variance 1 -> running 0.9 + 0.1 * ~1.
  const auto rv = one.running_var.to_vector<double>();
  for (double v : rv) CHECK(v == Approx(1.0).epsilon(0.02));
}
