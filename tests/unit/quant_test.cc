// quantize_linear / dequantize_linear on exact values: ties round to even, out-of-range values saturate,
// NaN becomes the zero point, per-channel scales follow the axis, bad scales are refused by index.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "pd/pd.h"
#include "test_util.h"

using pd::DType;
using pd::Tensor;
using pd::test::error_of;

TEST_CASE("quantize: half to even, saturation, NaN, and back", "[quant]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300.f, -300.f, nan, inf}, {10});
  const Tensor s8 = pd::ops::quantize_linear(x, Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(0), 1, DType::i8);
  CHECK(s8.dtype() == DType::i8);
  CHECK(s8.to_vector<int64_t>() == std::vector<int64_t>{0, 2, 2, 0, -2, -2, 127, -128, 0, 127});
  const Tensor u8 = pd::ops::quantize_linear(x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(128));
  CHECK(u8.to_vector<int64_t>() == std::vector<int64_t>{129, 131, 133, 127, 125, 123, 255, 0, 128, 255});
  const Tensor back = pd::ops::dequantize_linear(u8, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(128));
  CHECK(back.dtype() == DType::f32);
  CHECK(back.to_vector<float>()[0] == 0.5f);
  CHECK(back.to_vector<float>()[6] == 63.5f);  // saturated at 255
}

TEST_CASE("quantize: per-channel scales follow the axis", "[quant]") {
  // [2, 3]: column c scaled by (c + 1) along axis 1, row r by (r + 1) along axis 0.
  const Tensor x = Tensor::from_vector<float>({6, 6, 6, 12, 12, 12}, {2, 3});
  const Tensor cols = pd::ops::quantize_linear(x, Tensor::from_vector<float>({1, 2, 3}, {3}),
                                               Tensor::from_vector<uint8_t>({0, 0, 0}, {3}));
  CHECK(cols.to_vector<int64_t>() == std::vector<int64_t>{6, 3, 2, 12, 6, 4});
  const Tensor rows = pd::ops::quantize_linear(x, Tensor::from_vector<float>({1, 2}, {2}),
                                               Tensor::from_vector<uint8_t>({0, 10}, {2}), 0);
  CHECK(rows.to_vector<int64_t>() == std::vector<int64_t>{6, 6, 6, 16, 16, 16});
}

TEST_CASE("quantize: bad scales and parameters are refused by name", "[quant]") {
  const Tensor x = pd::ops::ones({2, 3});
  CHECK_THAT(error_of([&] { pd::ops::quantize_linear(x, Tensor::from_vector<float>({1, 0, 2}, {3}), Tensor::from_vector<uint8_t>({0, 0, 0}, {3})); }),
             Catch::Contains("quantize_linear: scale[1] must be positive and finite, but is 0"));
  CHECK_THAT(error_of([&] { pd::ops::quantize_linear(x, Tensor::scalar<float>(NAN), Tensor::scalar<uint8_t>(0)); }),
             Catch::Contains("scale[0] must be positive and finite"));
  CHECK_THAT(error_of([&] { pd::ops::quantize_linear(x, Tensor::from_vector<float>({1, 1}, {2}), Tensor::from_vector<uint8_t>({0, 0}, {2})); }),
             Catch::Contains("has 2 values, but 'x' [2, 3] has 3 along axis 1"));
  CHECK_THAT(error_of([&] { pd::ops::dequantize_linear(pd::ops::zeros({2}, DType::i32), Tensor::scalar<float>(1), Tensor::scalar<int32_t>(0)); }),
             Catch::Contains("must be u8 or i8"));
}
