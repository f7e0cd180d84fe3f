// The CUDA device runtime: tensors on cuda:0, copies both ways, views made contiguous on the device,
// the caching allocator's reuse and statistics, and mixed-place inputs refused by name.
#include <catch2/catch.hpp>

#include "pd/pd.h"

using pd::Place;
using pd::Tensor;

TEST_CASE("gpu: a tensor goes to the device and back unchanged", "[gpu]") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor g = x.to(Place::cuda(0));
  CHECK(g.place() == Place::cuda(0));
  CHECK(g.to_vector<float>() == x.to_vector<float>());
  CHECK_THROWS_AS(g.item<float>(), pd::Error);  // not a one-element tensor
}

TEST_CASE("gpu: host-to-device copies do not wait, yet never see the host buffer change after", "[gpu]") {
  // Each copy returns before the GPU has run it (pinned staging); the host vector is overwritten at
  // once, and staging buffers are reused while earlier copies and a long matmul are still queued.
  Tensor big = pd::ops::uniform({1024, 1024}, -1.0, 1.0, 5).to(Place::cuda(0));
  Tensor sum = pd::ops::zeros({256, 1024}).to(Place::cuda(0));
  Tensor host = Tensor::from_vector<float>(std::vector<float>(256 * 1024, 0.0f), {256, 1024});
  float* h = host.data<float>();
  for (int i = 1; i <= 40; ++i) {
    pd::ops::matmul(big, big);  // keeps the stream busy
    for (int64_t k = 0; k < host.numel(); ++k) h[k] = static_cast<float>(i);
    sum = pd::ops::add(sum, host.to(Place::cuda(0)));
  }
  const auto got = sum.to_vector<float>();
  CHECK(got.front() == 820.0f);  // 1 + 2 + ... + 40
  CHECK(got.back() == 820.0f);
}

TEST_CASE("gpu: a transposed view is made contiguous on the device", "[gpu]") {
  Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = pd::ops::transpose(x.to(Place::cuda(0)), {1, 0});
  CHECK(!t.is_contiguous());
  Tensor c = t.contiguous();
  CHECK(c.place() == Place::cuda(0));
  CHECK(c.to_vector<int64_t>() == std::vector<int64_t>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("gpu: freed blocks are reused, and empty_cache returns them", "[gpu]") {
  pd::Allocator& a = pd::allocator_for(Place::cuda(0));
  a.empty_cache();
  const int64_t before = a.stats().system_allocations;
  { Tensor t = Tensor::empty({1000}, pd::DType::f32, Place::cuda(0)); }
  { Tensor t = Tensor::empty({1000}, pd::DType::f32, Place::cuda(0)); }
  CHECK(a.stats().system_allocations == before + 1);
  CHECK(a.stats().cached_bytes > 0);
  a.empty_cache();
  CHECK(a.stats().cached_bytes == 0);
}

TEST_CASE("gpu: an op refuses inputs on two places, naming both", "[gpu]") {
  Tensor x = Tensor::from_vector<float>({1, 2}, {2});
  try {
    pd::ops::add(x.to(Place::cuda(0)), x);
    FAIL("expected an error");
  } catch (const pd::Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("cuda:0") != std::string::npos);
    CHECK(msg.find("cpu") != std::string::npos);
  }
}

TEST_CASE("gpu: autograd runs on the device", "[gpu]") {
  Tensor x = Tensor::from_vector<float>({1, -2, 3}, {3}).to(Place::cuda(0));
  x.set_requires_grad(true);
  Tensor y = pd::ops::sum(pd::ops::mul(x, x));
  pd::backward(y);
  CHECK(x.grad().place() == Place::cuda(0));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, -4, 6});
}
