// Tensor storage, views, 0-D/empty tensors and the caching allocator.
#include <algorithm>
#include <cmath>
#include <cstdint>

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
  // A reshape target whose known extents overflow before the -1 is inferred (fuzz_onnx under UBSan).
  CHECK_THROWS_WITH(pd::ops::reshape(pd::ops::zeros({2}), {int64_t{1} << 62, 2, -1}),
                    Catch::Contains("more elements than a tensor can hold"));
  // Window attributes large enough to overflow the output-size arithmetic are refused by range.
  const Tensor img = pd::ops::zeros({1, 1, 4, 4});
  CHECK_THROWS_WITH(pd::ops::max_pool2d(img, {2, 2}, {}, {int64_t{1} << 62, 0}), Catch::Contains("[0, 2^31]"));
  CHECK_THROWS_WITH(pd::ops::conv2d(img, pd::ops::zeros({1, 1, 3, 3}), Tensor(), {1, 1}, {0, 0}, {int64_t{1} << 62, 1}),
                    Catch::Contains("[1, 2^31]"));
  // Steps past the extent take one element (fuzz_onnx under UBSan: a step of -2^63 and one whose
  // stride product overflowed).
  const Tensor row = pd::ops::arange(0, 5);
  CHECK(pd::ops::slice(row, {0}, {1}, {5}, {INT64_MAX}).to_vector<float>() == std::vector<float>{1});
  CHECK(pd::ops::slice(row, {0}, {-1}, {-6}, {INT64_MIN}).to_vector<float>() == std::vector<float>{4});
  const int64_t huge = int64_t{1} << 62;
  CHECK_THROWS_WITH(pd::ops::pad(img, {huge, huge}), Catch::Contains("larger than a tensor can hold"));
  CHECK_THROWS_WITH(pd::ops::tile(img, {huge, 4}), Catch::Contains("larger than a tensor can hold"));
  CHECK_THROWS_WITH(pd::ops::arange(0, 1e300), Catch::Contains("more than a tensor can hold"));
  CHECK_THROWS_WITH(pd::ops::arange(0, std::nan("")), Catch::Contains("more than a tensor can hold"));
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

TEST_CASE("a cached block serves requests down to a quarter of its size", "[allocator]") {
  auto& a = pd::cpu_allocator();
  a.empty_cache();
  { Tensor big = Tensor::empty({1 << 20}, pd::DType::f32); }  // 4 MiB, cached when freed
  const auto cached = a.stats();
  CHECK(cached.cached_bytes == 4 << 20);
  CHECK(cached.peak_held_bytes >= 4 << 20);
  {
    Tensor half = Tensor::empty({1 << 19}, pd::DType::f32);  // 2 MiB: the 4 MiB block
    CHECK(a.stats().system_allocations == cached.system_allocations);
    CHECK(a.stats().cached_bytes == 0);
  }
  { Tensor eighth = Tensor::empty({1 << 17}, pd::DType::f32); }  // 512 KiB: a block of its own
  CHECK(a.stats().system_allocations == cached.system_allocations + 1);
  CHECK(a.stats().cached_bytes == (4 << 20) + (512 << 10));
  a.empty_cache();
  // A size whose rounding up would wrap around is refused, not served by a small block.
  CHECK_THROWS_WITH(a.allocate(SIZE_MAX - 8), Catch::Contains("out of memory"));
}

TEST_CASE("type promotion", "[dtype]") {
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2});
  Tensor f = Tensor::from_vector<float>({0.5f, 0.5f}, {2});
  Tensor d = Tensor::scalar<double>(1.0);
  CHECK(pd::ops::add(i, f).dtype() == pd::DType::f32);
  CHECK(pd::ops::add(f, d).dtype() == pd::DType::f32);  // a 0-D tensor does not widen within its category
  CHECK(pd::ops::add(i, d).dtype() == pd::DType::f32);
}

namespace {

// The element at each position of `view`, read through its strides from the base storage: the
// definition contiguous() must match.
template <typename T>
std::vector<T> read_through_strides(const Tensor& view, const std::vector<T>& base) {
  const pd::Shape& shape = view.shape();
  std::vector<T> out;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t n = 0; n < pd::shape_numel(shape); ++n) {
    int64_t off = view.offset();
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * view.strides()[d];
    out.push_back(base[static_cast<size_t>(off)]);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

template <typename T>
void check_views_of(const pd::Shape& shape, uint64_t seed) {
  std::vector<T> base(static_cast<size_t>(pd::shape_numel(shape)));
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<T>(i * 7 + 3);
  const Tensor x = Tensor::from_vector<T>(base, shape);
  std::vector<int64_t> perm(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  // Every permutation of ranks up to 4, a sample of the rest; each also sliced along its last axis.
  size_t tried = 0;
  do {
    if (shape.size() > 4 && (seed + tried++) % 17 != 0) continue;
    const Tensor t = pd::ops::transpose(x, perm);
    INFO("shape " << pd::shape_str(shape) << " perm " << pd::shape_str(perm));
    CHECK(t.contiguous().to_vector<T>() == read_through_strides(t, base));
    const int64_t last = t.shape().back();
    if (last > 2) {
      const Tensor s = pd::ops::slice(t, {static_cast<int64_t>(shape.size()) - 1}, {1}, {last - 1});
      CHECK(s.contiguous().to_vector<T>() == read_through_strides(s, base));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

}  // namespace

// The tiled transposition path, the dense-row path and the element path, for 1, 4 and 8 byte elements,
// with tiles cut at the edges (extents around the 32-element tile) and large copies over threads.
TEST_CASE("contiguous() of transposed and sliced views", "[tensor]") {
  check_views_of<uint8_t>({3, 33, 5, 70}, 1);
  check_views_of<int32_t>({2, 31, 40}, 2);
  check_views_of<float>({2, 3, 4, 5, 6}, 3);
  check_views_of<double>({65, 1, 33}, 4);
  check_views_of<float>({8, 64, 28, 28}, 5);  // NCHW <-> NHWC of a batch, above the threading threshold
  const Tensor e = pd::ops::expand(Tensor::from_vector<float>({1, 2, 3}, {3, 1}), {2, 3, 4});
  CHECK(e.contiguous().to_vector<float>() == read_through_strides(e, std::vector<float>{1, 2, 3}));
}
