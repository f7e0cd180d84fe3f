// Kernel selection switches and the oneDNN primitive cache.
#include <catch2/catch.hpp>

#include <algorithm>
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
  // Sums of 16 products: cancellation makes some results small, so the tolerance is absolute too.
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-5).margin(1e-5));
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

namespace {

// `x` of `shape` drawn from [-1, 1) with NaN at the flat positions `nans`.
pd::Tensor with_nans(const std::vector<int64_t>& shape, uint64_t seed, const std::vector<size_t>& nans) {
  std::vector<float> v = pd::ops::uniform(shape, -1, 1, seed).to_vector<float>();
  for (size_t i : nans) v[i] = std::numeric_limits<float>::quiet_NaN();
  return pd::Tensor::from_vector<float>(v, shape);
}

// `got` equals `want` elementwise with NaN in the same places; returns how many NaNs there were.
int check_same_with_nans(const pd::Tensor& got, const pd::Tensor& want) {
  const auto a = got.to_vector<float>(), e = want.to_vector<float>();
  REQUIRE(a.size() == e.size());
  int nans = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(std::isnan(a[i]) == std::isnan(e[i]));
    if (!std::isnan(e[i])) CHECK(a[i] == Approx(e[i]).margin(1e-5));
    nans += std::isnan(e[i]);
  }
  return nans;
}

// The unfused ops on the reference kernels: what every fused or faster path must reproduce.
template <typename F>
pd::Tensor on_reference(F&& f) {
  pd::ScopedKernelBackend guard(pd::Backend::reference);
  return f();
}

}  // namespace

// NaN through relu stays NaN (PyTorch's semantics) on every kernel that applies one: oneDNN's own relu
// would make it 0, so a NaN from a diverged model would vanish at -O0 but not at -O2, or the reverse.
TEST_CASE("relu keeps NaN on every backend and in every fused kernel", "[dispatch]") {
  const pd::Tensor x = with_nans({4, 300}, 1, {7, 650});
  CHECK(check_same_with_nans(pd::ops::relu(x), on_reference([&] { return pd::ops::relu(x); })) == 2);

  SECTION("fused_conv2d on oneDNN and on the direct kernel") {
    const pd::Tensor img = with_nans({2, 3, 8, 8}, 2, {3 * 8 + 3});
    for (int64_t out_channels : {48, 4}) {  // 48: oneDNN with post-ops; 4: the direct kernel
      const pd::Tensor w = pd::ops::uniform({out_channels, 3, 3, 3}, -1, 1, 3);
      const pd::Tensor b = pd::ops::uniform({out_channels}, -1, 1, 4);
      const pd::Tensor fused = pd::ops::fused_conv2d(img, w, b, {}, {1, 1}, {1, 1}, {1, 1}, 1, "relu");
      const pd::Tensor apart = on_reference([&] { return pd::ops::relu(pd::ops::conv2d(img, w, b, {1, 1}, {1, 1})); });
      CHECK(check_same_with_nans(fused, apart) == out_channels * 9);  // the 3x3 neighbourhood, every channel
    }
  }
  SECTION("fused_linear on oneDNN (5 outputs), the small GEMM (16) and the GEMV (one row), relu and leaky_relu with slope 0") {
    for (int64_t out_f : {5, 16}) {
      const pd::Tensor w = pd::ops::uniform({out_f, 300}, -1, 1, 5);
      const pd::Tensor b = pd::ops::uniform({out_f}, -1, 1, 6);
      for (const pd::Tensor& in : {x, pd::ops::slice(x, {0}, {0}, {1})}) {
        for (const std::string act : {"relu", "leaky_relu"}) {
          const pd::Tensor fused = pd::ops::fused_linear(in, w, b, {}, act, 0.0);
          const pd::Tensor apart = on_reference([&] { return pd::ops::relu(pd::ops::linear(in, w, b)); });
          CHECK(check_same_with_nans(fused, apart) == out_f * (in.shape()[0] == 1 ? 1 : 2));  // rows 0 and 2
        }
      }
    }
  }
  SECTION("winograd_conv2d") {
    const pd::Tensor img = with_nans({1, 16, 8, 8}, 7, {5 * 8 + 2});
    const pd::Tensor w = pd::ops::uniform({16, 16, 3, 3}, -1, 1, 8);
    const pd::Tensor fused = pd::ops::winograd_conv2d(img, pd::ops::winograd_weight(w), {}, {}, {1, 1}, "relu");
    const pd::Tensor apart = on_reference([&] { return pd::ops::relu(pd::ops::conv2d(img, w, {}, {1, 1}, {1, 1})); });
    // A NaN spreads over whole 4x4 output tiles, beyond the conv's 3x3 neighbourhood: check that relu
    // kept every NaN the unfused ops have.
    const auto a = fused.to_vector<float>(), e = apart.to_vector<float>();
    int nans = 0;
    for (size_t i = 0; i < e.size(); ++i)
      if (std::isnan(e[i])) nans += std::isnan(a[i]) ? 1 : 0;
    CHECK(nans == 16 * 9);
  }
}

TEST_CASE("fused_conv2d_maxpool propagates NaN as max_pool2d does", "[dispatch]") {
  // The naive references of the op tests use std::max, which drops NaN; this checks the kernels.
  const pd::Tensor x = with_nans({1, 2, 8, 8}, 5, {3 * 8 + 3});  // channel 0, row 3, column 3
  const pd::Tensor w = pd::ops::uniform({3, 2, 3, 3}, -1, 1, 6);
  const pd::Tensor b = pd::ops::uniform({3}, -1, 1, 7);
  const pd::Tensor fused = pd::ops::fused_conv2d_maxpool(x, w, b, {1, 1}, {1, 1}, {1, 1}, 1, "relu");
  const pd::Tensor apart =
      on_reference([&] { return pd::ops::max_pool2d(pd::ops::relu(pd::ops::conv2d(x, w, b, {1, 1}, {1, 1})), {2, 2}); });
  // The NaN reaches a 3x3 conv neighbourhood: 2x2 pooled cells per channel.
  CHECK(check_same_with_nans(fused, apart) == 3 * 4);
}

// max_pool2d's row-buffer kernel takes 8 windows at a time for f32 on AVX2 when the stride is 2 and the
// window 2 or 3 wide (ResNet's 3x3 / stride 2 / padding 1 stem pool); f64 takes the scalar steps. Both
// must give the same maxima, NaN winning, -inf in padding, a block of 8 windows and a tail; the same for
// max_pool2d_nhwc on channel blocks (f32 pixels of 16 channels on AVX2).
TEST_CASE("max_pool2d: the vector row steps match the scalar ones on NaN, -inf and padding", "[dispatch]") {
  struct Case {
    std::vector<int64_t> kernel, stride, padding;
    bool ceil;
  };
  for (const Case& c : {Case{{3, 3}, {2, 2}, {1, 1}, false}, Case{{3, 3}, {2, 2}, {0, 0}, true}, Case{{2, 2}, {2, 2}, {1, 1}, false},
                        Case{{3, 2}, {2, 2}, {1, 0}, true}}) {
    // The scalar steps: the same pool in f64, cast back.
    const auto pool = [&](const pd::Tensor& t, bool blocks) {
      return blocks ? pd::ops::max_pool2d_nhwc(t, c.kernel, c.stride, c.padding, c.ceil)
                    : pd::ops::max_pool2d(t, c.kernel, c.stride, c.padding, c.ceil);
    };
    const auto scalar = [&](const pd::Tensor& t, bool blocks) {
      return pd::ops::cast(pool(pd::ops::cast(t, pd::DType::f64), blocks), pd::DType::f32);
    };
    std::vector<float> xv = pd::ops::uniform({2, 3, 9, 21}, -2, 2, 21).to_vector<float>();
    xv[4] = xv[21 * 5 + 20] = std::numeric_limits<float>::quiet_NaN();
    xv[21 * 9 + 7] = -std::numeric_limits<float>::infinity();
    const pd::Tensor x = pd::Tensor::from_vector<float>(xv, {2, 3, 9, 21});
    CHECK(check_same_with_nans(pool(x, false), scalar(x, false)) >= 2);
    // max_pool2d_nhwc on channel blocks (f32 on AVX2: whole runs of pixels): 1 block of 3 lanes (scalar)
    // and 2 blocks of 16.
    std::vector<float> wv = pd::ops::uniform({1, 2, 9, 21, 16}, -2, 2, 22).to_vector<float>();
    wv[3] = wv[16 * 21 * 4 + 9] = std::numeric_limits<float>::quiet_NaN();
    for (const pd::Tensor& b : {pd::ops::reshape(x, {2, 1, 9, 21, 3}), pd::Tensor::from_vector<float>(wv, {1, 2, 9, 21, 16})})
      CHECK(check_same_with_nans(pool(b, true), scalar(b, true)) >= 1);
  }
}

// max_pool2d_grad has an AVX2 kernel for 2x2 / stride 2 windows tiling the plane (f32) and the general
// kernel for everything else (and f64): both give each window's grad to its first maximum (row-major),
// a NaN max to its first NaN, and exactly 0 elsewhere, even where the grad is inf.
TEST_CASE("max_pool2d_grad: the 2x2 kernel matches the general one on ties, NaN and inf", "[dispatch]") {
  for (int64_t width : {20, 7}) {  // 20: 8 windows a vector + a scalar tail of 2; 7: the general kernel
    std::vector<float> xv = pd::ops::uniform({2, 3, 6, width}, 0, 3, 11).to_vector<float>();
    for (float& v : xv) v = std::floor(v);  // three values only: many ties
    xv[5] = xv[width + 4] = std::numeric_limits<float>::quiet_NaN();
    const pd::Tensor x = pd::Tensor::from_vector<float>(xv, {2, 3, 6, width});
    std::vector<float> gv = pd::ops::uniform({2, 3, 3, width / 2}, -1, 1, 12).to_vector<float>();
    gv[1] = std::numeric_limits<float>::infinity();
    const pd::Tensor g = pd::Tensor::from_vector<float>(gv, {2, 3, 3, width / 2});
    const auto got = pd::ops::max_pool2d_grad(x, g, {2, 2}).to_vector<float>();
    const auto want = pd::ops::cast(pd::ops::max_pool2d_grad(pd::ops::cast(x, pd::DType::f64), pd::ops::cast(g, pd::DType::f64), {2, 2}),
                                    pd::DType::f32)
                          .to_vector<float>();
    REQUIRE(got.size() == want.size());
    int nonzero = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(std::isnan(got[i]) == std::isnan(want[i]));
      if (!std::isnan(want[i])) CHECK(got[i] == want[i]);
      nonzero += got[i] != 0.0f;
    }
    CHECK(nonzero == 2 * 3 * 3 * (width / 2));  // one element per window, none of the grads is 0
    CHECK(std::count(got.begin(), got.end(), std::numeric_limits<float>::infinity()) == 1);
  }
}
