// Kernels that split their sums across threads in fixed chunks give the same bits on any thread
// count: pd-train's runs are reproducible whatever --threads says.
#include <catch2/catch.hpp>

#include "pd/core/backend.h"
#include "pd/core/cpu_features.h"
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

TEST_CASE("conv2d_grad_weight on channels_last data (Winograd's parts) gives the same bits on 1, 2 and 3 threads", "[ops]") {
  // The oneDNN backend's kernel takes Winograd here; the reference kernel (a build without oneDNN) does not promise it.
  if (!pd::cpu_backend_built(pd::Backend::onednn) || !pd::cpu_has_avx2_fma()) return;
  // 6 images of 28x28: 294 tiles, in several parts of blocks for the threads to share.
  const Tensor x = ops::normal({6, 28, 28, 16}, 0, 1, 5), g = ops::normal({6, 28, 28, 24}, 0, 1, 6);
  auto dw_on = [&](int threads) {
    const int saved = pd::num_threads();
    pd::set_num_threads(threads);
    Tensor dw = ops::conv2d_grad_weight(g, x, {24, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, /*channels_last=*/true);
    pd::set_num_threads(saved);
    return dw;
  };
  const Tensor one = dw_on(1);
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    CHECK(pd::test::max_abs_diff(one, dw_on(threads)) == 0.0f);
  }
}
