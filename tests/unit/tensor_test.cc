// Tensor storage, views, 0-D/empty tensors and the caching allocator.
#include <catch2/catch.hpp>

#include "pd/pd.h"

using pd::Tensor;

TEST_CASE("views share storage and read through strides", "[tensor]") {
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = pd::ops::transpose(x, {1, 0});
  CHECK(t.storage() == x.storage());
  CHECK(!t.is_contiguous());
  CHECK(t.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  Tensor s = pd::ops::slice(x, {1}, {1}, {3});
  CHECK(s.to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  Tensor r = pd::ops::reshape(x, {3, -1});
  CHECK(r.storage() == x.storage());
  CHECK(r.shape() == pd::Shape{3, 2});
}

TEST_CASE("0-D and empty tensors are ordinary", "[tensor]") {
  Tensor s = Tensor::scalar<double>(2.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(pd::ops::mul(s, s).item<double>() == 6.25);
  Tensor e = pd::ops::zeros({0, 3});
  CHECK(e.numel() == 0);
  CHECK(pd::ops::sum(e).item<float>() == 0.0f);
  CHECK(pd::ops::reshape(e, {-1, 3}).shape() == pd::Shape{0, 3});
}

TEST_CASE("sizes are int64 and overflow is refused", "[tensor]") {
  CHECK(pd::shape_numel({1 << 20, 1 << 20, 4}) == (int64_t{1} << 42));
  CHECK_THROWS_AS(pd::shape_numel({int64_t{1} << 40, int64_t{1} << 40}), pd::Error);
}

TEST_CASE("the caching allocator reuses freed blocks", "[allocator]") {
  auto& a = pd::cpu_allocator();
  { Tensor t = Tensor::empty({1000}, pd::DType::f32); }
  auto before = a.stats();
  { Tensor t = Tensor::empty({1000}, pd::DType::f32); }
  auto after = a.stats();
  CHECK(after.system_allocations == before.system_allocations);
  CHECK(after.cache_hits == before.cache_hits + 1);
}

TEST_CASE("type promotion", "[dtype]") {
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2});
  Tensor f = Tensor::from_vector<float>({0.5f, 0.5f}, {2});
  Tensor d = Tensor::scalar<double>(1.0);
  CHECK(pd::ops::add(i, f).dtype() == pd::DType::f32);
  CHECK(pd::ops::add(f, d).dtype() == pd::DType::f32);  // a 0-D tensor does not widen within its category
  CHECK(pd::ops::add(i, d).dtype() == pd::DType::f32);
}
