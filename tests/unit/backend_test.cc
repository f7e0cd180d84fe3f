// Kernel selection switches and the oneDNN primitive cache.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "pd/pd.h"
#ifdef PD_WITH_ONEDNN
#include "cpu/onednn/onednn_cache.h"
#endif

TEST_CASE("reference kernels can be forced through the API", "[dispatch]") {
  pd::Tensor x = pd::ops::uniform({8, 16}, -1, 1, 3);
  pd::Tensor w = pd::ops::uniform({4, 16}, -1, 1, 4);
  pd::Tensor fast = pd::ops::linear(x, w);
  pd::Tensor ref;
  {
    pd::ScopedKernelBackend guard(pd::Backend::reference);
    ref = pd::ops::linear(x, w);
  }
  auto a = fast.to_vector<float>(), b = ref.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-5));
}

#ifdef PD_WITH_ONEDNN
TEST_CASE("oneDNN primitives are created once per shape", "[onednn]") {
  // 48 output channels: too many for the direct kernel small convs take instead of oneDNN.
  pd::Tensor x = pd::ops::uniform({2, 3, 8, 8}, -1, 1, 1);
  pd::Tensor w = pd::ops::uniform({48, 3, 3, 3}, -1, 1, 2);
  const int64_t before = pd::kernels::onednn::onednn_primitives_created();
  pd::ops::conv2d(x, w);
  const int64_t created = pd::kernels::onednn::onednn_primitives_created();
  CHECK(created > before);
  for (int i = 0; i < 5; ++i) pd::ops::conv2d(x, w);
  CHECK(pd::kernels::onednn::onednn_primitives_created() == created);
}
#endif

TEST_CASE("fused_conv2d_maxpool propagates NaN as max_pool2d does", "[dispatch]") {
  // The naive references of the op tests use std::max, which drops NaN; this checks the kernels.
  std::vector<float> xv = pd::ops::uniform({1, 2, 8, 8}, -1, 1, 5).to_vector<float>();
  xv[3 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();  // channel 0, row 3, column 3
  const pd::Tensor x = pd::Tensor::from_vector<float>(xv, {1, 2, 8, 8});
  const pd::Tensor w = pd::ops::uniform({3, 2, 3, 3}, -1, 1, 6);
  const pd::Tensor b = pd::ops::uniform({3}, -1, 1, 7);
  const pd::Tensor fused = pd::ops::fused_conv2d_maxpool(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1, "relu");
  pd::Tensor apart;
  {  // the reference kernels keep NaN through relu (oneDNN's relu maps it to 0)
    pd::ScopedKernelBackend guard(pd::Backend::reference);
    apart = pd::ops::max_pool2d(pd::ops::relu(pd::ops::conv2d(x, w, b, {1, 1}, {1, 1})), {2, 2});
  }
  const auto a = fused.to_vector<float>(), e = apart.to_vector<float>();
  REQUIRE(a.size() == e.size());
  int nans = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(std::isnan(a[i]) == std::isnan(e[i]));
    if (!std::isnan(e[i])) CHECK(a[i] == Approx(e[i]).margin(1e-5));
    nans += std::isnan(e[i]);
  }
  CHECK(nans == 3 * 4);  // the NaN reaches a 3x3 conv neighbourhood: 2x2 pooled cells per channel
}
