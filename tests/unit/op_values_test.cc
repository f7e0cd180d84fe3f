// Values that the generated op tests' random inputs never produce: ties, NaN, exact halves, zeros,
// repeated indices, and the error messages of out-of-range indices.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "pd/pd.h"
#include "test_util.h"

using pd::Tensor;
namespace ops = pd::ops;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor leaf(std::vector<double> v, pd::Shape s) {
  Tensor t = Tensor::from_vector<double>(v, s);
  t.set_requires_grad(true);
  return t;
}
}  // namespace

TEST_CASE("maximum and minimum split the gradient evenly on ties and propagate NaN", "[ops]") {
  Tensor x = leaf({1, 2, 3}, {3}), y = leaf({3, 2, 1}, {3});
  auto g = pd::grad({ops::sum(ops::maximum(x, y))}, {x, y});
  CHECK(g[0].to_vector<double>() == std::vector<double>{0, 0.5, 1});
  CHECK(g[1].to_vector<double>() == std::vector<double>{1, 0.5, 0});
  g = pd::grad({ops::sum(ops::minimum(x, y))}, {x, y});
  CHECK(g[0].to_vector<double>() == std::vector<double>{1, 0.5, 0});
  CHECK(g[1].to_vector<double>() == std::vector<double>{0, 0.5, 1});
  const Tensor a = Tensor::from_vector<double>({kNaN, 1}, {2}), b = Tensor::from_vector<double>({0, kNaN}, {2});
  for (const Tensor& r : {ops::maximum(a, b), ops::minimum(a, b)})
    for (double v : r.to_vector<double>()) CHECK(std::isnan(v));
}

TEST_CASE("pow by 2 and 3 is the product, as PyTorch and onnxruntime compute it; other exponents std::pow", "[ops]") {
  const std::vector<float> xs = {1.1f, -2.7f, 3.3f, 1e-3f, -0.0f, 7.9f};
  const Tensor x = Tensor::from_vector<float>(xs, {6});
  const std::vector<float> sq = ops::pow(x, Tensor::scalar<float>(2.0f)).to_vector<float>();
  const std::vector<float> cube = ops::pow(x, Tensor::scalar<float>(3.0f)).to_vector<float>();
  const std::vector<float> other = ops::pow(x, Tensor::scalar<float>(2.5f)).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    CHECK(sq[i] == xs[i] * xs[i]);
    CHECK(cube[i] == xs[i] * xs[i] * xs[i]);
    if (xs[i] >= 0) CHECK(other[i] == std::pow(xs[i], 2.5f));
    else CHECK(std::isnan(other[i]));
  }
}

TEST_CASE("comparisons with NaN are false, greater_equal and less_equal included; the logical ops on bool", "[ops]") {
  const Tensor a = Tensor::from_vector<double>({kNaN, 1, 2}, {3}), b = Tensor::from_vector<double>({1, kNaN, 2}, {3});
  CHECK(ops::greater_equal(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 1});
  CHECK(ops::less_equal(a, b).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 1});
  const Tensor t = ops::equal(a, a), f = ops::greater(a, a);  // [F, T, T], [F, F, F]
  CHECK(ops::logical_and(t, ops::equal(b, b)).to_vector<uint8_t>() == std::vector<uint8_t>{0, 0, 1});
  CHECK(ops::logical_or(t, f).to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 1});
  CHECK(ops::logical_xor(t, ops::equal(b, b)).to_vector<uint8_t>() == std::vector<uint8_t>{1, 1, 0});
  CHECK_THROWS_WITH(ops::logical_and(a, t), Catch::Contains("bool"));
}

TEST_CASE("round sends halves to the even integer; floor, ceil, round have zero gradient", "[ops]") {
  const Tensor x = Tensor::from_vector<double>({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6}, {7});
  CHECK(ops::round(x).to_vector<double>() == std::vector<double>{-2, -2, -0.0, 0, 2, 2, 3});
  Tensor v = leaf({0.3, -1.7}, {2});
  for (auto f : {&ops::floor, &ops::ceil, &ops::round})
    CHECK(pd::grad({ops::sum(f(v))}, {v})[0].to_vector<double>() == std::vector<double>{0, 0});
}

TEST_CASE("relu6 clips to [0, 6] and keeps NaN", "[ops]") {
  const auto r = ops::relu6(Tensor::from_vector<float>({-1, 3, 7, std::nanf("")}, {4})).to_vector<float>();
  CHECK(r[0] == 0);
  CHECK(r[1] == 3);
  CHECK(r[2] == 6);
  CHECK(std::isnan(r[3]));
}

TEST_CASE("prod's gradient with one zero and with two zeros in a group", "[ops]") {
  Tensor x = leaf({2, 0, 3, 0, 0, 5}, {2, 3});
  CHECK(pd::grad({ops::sum(ops::prod(x, {1}))}, {x})[0].to_vector<double>() == std::vector<double>{0, 6, 0, 0, 0, 0});
}

TEST_CASE("sort is stable and puts NaN last ascending, first descending", "[ops]") {
  const Tensor x = Tensor::from_vector<double>({2, kNaN, 1, 2, 1}, {5});
  auto [v, i] = ops::sort(x);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{2, 4, 0, 3, 1});
  CHECK(std::isnan(v.to_vector<double>()[4]));
  CHECK(ops::argsort(x, -1, true).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3, 2, 4});
  auto [tv, ti] = ops::topk(x, 2, -1, false);
  CHECK(ti.to_vector<int64_t>() == std::vector<int64_t>{2, 4});
}

TEST_CASE("gather and take_along_axis accumulate gradients of repeated indices", "[ops]") {
  Tensor x = leaf({1, 2, 3}, {3});
  const Tensor idx = Tensor::from_vector<int64_t>({2, -1, 0, 2}, {4});
  Tensor out = ops::gather(x, idx);
  CHECK(out.to_vector<double>() == std::vector<double>{3, 3, 1, 3});
  CHECK(pd::grad({ops::sum(out)}, {x})[0].to_vector<double>() == std::vector<double>{1, 0, 3});
  CHECK(pd::grad({ops::sum(ops::take_along_axis(x, idx, 0))}, {x})[0].to_vector<double>() == std::vector<double>{1, 0, 3});
}

TEST_CASE("index errors name the op, the value and the extent", "[ops]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5});
  const Tensor bad = Tensor::from_vector<int64_t>({1, 7}, {2});
  CHECK(pd::test::error_of([&] { ops::gather(x, bad); }) == "gather: index 7 is out of range for axis 0 of extent 5");
  CHECK_THAT(pd::test::error_of([&] { ops::index_select(x, bad); }), Catch::Contains("index_select: index 7"));
  CHECK_THAT(pd::test::error_of([&] { ops::take_along_axis(x, bad, 0); }), Catch::Contains("take_along_axis: index 7"));
  CHECK_THAT(pd::test::error_of([&] { ops::scatter_add(x, bad, Tensor::from_vector<float>({1, 1}, {2}), 0); }),
             Catch::Contains("scatter_add: index 7 is out of range for axis 0 of extent 5"));
  CHECK_THAT(pd::test::error_of([&] { ops::one_hot(bad, 5); }), Catch::Contains("one_hot: class 7"));
  CHECK_THAT(pd::test::error_of([&] { ops::nll_loss(Tensor::from_vector<float>({0, 0, 0, 0}, {2, 2}), bad); }),
             Catch::Contains("nll_loss: label 7"));
  CHECK_THAT(pd::test::error_of([&] { ops::topk(x, 6); }), Catch::Contains("topk: argument 'k' = 6"));
}

TEST_CASE("binary_cross_entropy_with_logits stays finite for large logits", "[ops]") {
  const Tensor x = Tensor::from_vector<float>({200, -200}, {2}), y = Tensor::from_vector<float>({0, 1}, {2});
  CHECK(ops::binary_cross_entropy_with_logits(x, y, Tensor(), "none").to_vector<float>() == std::vector<float>{200, 200});
}

// Integer overflow is undefined in C++; the integer kernels wrap like NumPy's and PyTorch's instead. The
// sanitized CI build (UBSan, every report fatal) runs this test, so an unguarded signed operation fails it.
TEST_CASE("integer ops wrap around at the type's range; float to integer casts saturate", "[ops]") {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max(), kMin64 = std::numeric_limits<int64_t>::min();
  const Tensor big = Tensor::from_vector<int32_t>({kMax, kMin}, {2});
  const Tensor one = Tensor::from_vector<int32_t>({1, 1}, {2});
  CHECK(ops::add(big, one).to_vector<int32_t>() == std::vector<int32_t>{kMin, kMin + 1});
  CHECK(ops::neg(big).to_vector<int32_t>() == std::vector<int32_t>{kMin + 1, kMin});
  CHECK(ops::abs(big).to_vector<int32_t>() == std::vector<int32_t>{kMax, kMin});
  CHECK(ops::sum(big).to_vector<int32_t>() == std::vector<int32_t>{-1});
  CHECK(ops::sum(Tensor::from_vector<int32_t>({kMax, kMax}, {2})).to_vector<int32_t>() == std::vector<int32_t>{-2});
  const Tensor big64 = Tensor::from_vector<int64_t>({kMax64, 2}, {2});
  CHECK(ops::sum(big64).to_vector<int64_t>() == std::vector<int64_t>{kMin64 + 1});
  CHECK(ops::prod(big64).to_vector<int64_t>() == std::vector<int64_t>{-2});
  CHECK(ops::cumsum(big64, 0).to_vector<int64_t>() == std::vector<int64_t>{kMax64, kMin64 + 1});
  CHECK(ops::sum_to(Tensor::from_vector<int64_t>({kMax64, 1}, {2, 1}), {1}).to_vector<int64_t>() ==
        std::vector<int64_t>{kMin64});
  const Tensor at0 = Tensor::from_vector<int64_t>({0, 0}, {2});
  CHECK(ops::scatter_add(Tensor::from_vector<int64_t>({kMax64}, {1}), at0, Tensor::from_vector<int64_t>({1, 1}, {2}))
            .to_vector<int64_t>() == std::vector<int64_t>{kMin64 + 1});
  // x mod -1 is 0 for the lowest value too (x86's integer division traps on INT_MIN / -1).
  CHECK(ops::remainder(big, Tensor::from_vector<int32_t>({-1, -1}, {2})).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 0});
  // Integer division truncates toward zero (C's, ONNX Div's); x / -1 wraps on the lowest value; / 0 is an error.
  CHECK(ops::div(Tensor::from_vector<int64_t>({7, -7, 7, -7, 6}, {5}), Tensor::from_vector<int64_t>({2, 2, -2, -2, 3}, {5}))
            .to_vector<int64_t>() == std::vector<int64_t>{3, -3, -3, 3, 2});
  CHECK(ops::div(big, Tensor::from_vector<int32_t>({-1, -1}, {2})).to_vector<int32_t>() == std::vector<int32_t>{-kMax, kMin});
  CHECK_THROWS_WITH(ops::div(big, Tensor::from_vector<int32_t>({1, 0}, {2})), Catch::Contains("integer division by zero"));

  const Tensor f = Tensor::from_vector<float>({1e10f, -1e10f, std::nanf(""), 3.7f, -3.7f, 2147483648.f}, {6});
  CHECK(ops::cast(f, pd::DType::i32).to_vector<int32_t>() == std::vector<int32_t>{kMax, kMin, 0, 3, -3, kMax});
  CHECK(ops::cast(f, pd::DType::u8).to_vector<uint8_t>() == std::vector<uint8_t>{255, 0, 0, 3, 0, 255});
  CHECK(ops::cast(Tensor::from_vector<double>({9.3e18, -9.3e18}, {2}), pd::DType::i64).to_vector<int64_t>() ==
        std::vector<int64_t>{kMax64, kMin64});
  CHECK(ops::full({1}, 1e30, pd::DType::i32).to_vector<int32_t>() == std::vector<int32_t>{kMax});
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(ops::clip(Tensor::from_vector<int32_t>({kMin, 5}, {2}), -inf, 4.5).to_vector<int32_t>() ==
        std::vector<int32_t>{kMin, 4});
}

TEST_CASE("embedding gives padding_idx's row no gradient and sums repeated ids", "[ops]") {
  Tensor w = leaf({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor ids = Tensor::from_vector<int64_t>({1, 0, 1, 2, 0}, {5});
  const Tensor out = ops::embedding(ids, w, /*padding_idx=*/1);
  CHECK(out.to_vector<double>() == std::vector<double>{3, 4, 1, 2, 3, 4, 5, 6, 1, 2});  // the padding row is still read
  const Tensor g = pd::grad({ops::sum(ops::mul(out, Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2})))}, {w})[0];
  CHECK(g.to_vector<double>() == std::vector<double>{3 + 9, 4 + 10, 0, 0, 7, 8});
}

TEST_CASE("integer division by zero is an error naming the op, not a trap", "[ops]") {
  const Tensor x = Tensor::from_vector<int64_t>({7, -7, 8}, {3}), y = Tensor::from_vector<int64_t>({2, 0, 3}, {3});
  CHECK_THROWS_WITH(ops::div(x, y), Catch::Contains("div: integer division by zero") && Catch::Contains("flat index 1"));
  CHECK(ops::div(x, Tensor::from_vector<int64_t>({2, 2, -3}, {3})).to_vector<int64_t>() == std::vector<int64_t>{3, -3, -2});
}
