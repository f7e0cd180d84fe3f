// quantize_linear / dequantize_linear on exact values: ties round to even, out-of-range values saturate,
// NaN becomes the zero point, per-channel scales follow the axis, bad scales are refused by index.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "pd/core/cpu_features.h"
#include "pd/core/threads.h"
#include "pd/pd.h"
#include "registry.h"
#include "pd/exec/executor.h"
#include "pd/exec/plan.h"
#include "pd/quant/calibration.h"
#include "pd/quant/qdq.h"
#include "pd/quant/stats_cache.h"
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

namespace {

// n values from a seeded normal(0, 1), with `outliers` of value 1000 appended.
Tensor normal_with_outliers(int64_t n, int outliers, uint64_t seed) {
  std::vector<float> v = pd::ops::normal({n}, 0, 1, static_cast<int64_t>(seed)).to_vector<float>();
  for (int i = 0; i < outliers; ++i) v.push_back(1000.f);
  return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

TEST_CASE("calibration: scales and zero points for a range", "[quant]") {
  using pd::quant::qparams_for;
  auto u = qparams_for({0.0, 2.55}, DType::u8);
  CHECK(u.scale == Approx(0.01f));
  CHECK(u.zero_point == 0);
  u = qparams_for({-1.0, 3.0}, DType::u8);  // 0 lands on the grid: zero point 64 (= 1 / (4 / 255), rounded)
  CHECK(u.zero_point == 64);
  const auto s = qparams_for({-0.5, 2.54}, DType::i8);
  CHECK(s.scale == Approx(0.02f));
  CHECK(s.zero_point == 0);
  CHECK(qparams_for({0.0, 0.0}, DType::u8).scale == 1.0f);  // a zero range: every value is exactly 0
  CHECK(qparams_for({2.0, 3.0}, DType::u8).zero_point == 0);  // widened to hold 0
  CHECK_THAT(error_of([] { qparams_for({0, 1}, DType::i32); }), Catch::Contains("u8 or i8"));
  CHECK(pd::quant::parse_method("kl") == pd::quant::Method::kl);
  CHECK_THAT(error_of([] { pd::quant::parse_method("entropy"); }), Catch::Contains("valid: minmax, percentile, kl, mse"));
}

TEST_CASE("calibration: observers count, widen and ignore non-finite values, deterministically", "[quant]") {
  pd::quant::Observer a, b;
  const Tensor small = Tensor::from_vector<float>({0.f, 0.5f, -0.25f, NAN, INFINITY}, {5});
  const Tensor big = Tensor::from_vector<float>({3.f, -7.f}, {2});
  a.observe(small);
  a.observe(big);  // widens the histogram: its bins merge
  CHECK(a.count() == 5);
  CHECK(a.non_finite() == 2);
  CHECK(a.min() == -7.0);
  CHECK(a.max() == 3.0);
  int64_t total = 0;
  for (int64_t c : a.histogram()) total += c;
  CHECK(total == 5);
  const auto r = a.range(pd::quant::Method::minmax);
  CHECK(r.lo == -7.0);
  CHECK(r.hi == 3.0);
  b.observe(small);
  b.observe(big);
  CHECK(a.histogram() == b.histogram());
  for (auto m : {pd::quant::Method::percentile, pd::quant::Method::mse, pd::quant::Method::kl})
    CHECK(a.range(m).hi == b.range(m).hi);  // bit for bit
  CHECK_THAT(error_of([&] { a.observe(pd::ops::zeros({2}, DType::i64)); }), Catch::Contains("f32 or f64"));
}

TEST_CASE("calibration: percentile, mse and kl clip what minmax keeps", "[quant]") {
  using pd::quant::Method;
  // Percentile: one extreme outlier among 20000 normal values is cut off.
  pd::quant::Observer one;
  one.observe(normal_with_outliers(20000, 1, 7));
  CHECK(one.range(Method::minmax).hi == 1000.0);
  auto r = one.range(Method::percentile);
  CHECK(r.hi < 100.0);
  CHECK(r.hi > 2.0);
  CHECK(r.lo < -2.0);

  // MSE on Laplace(0, 1) data: with 16 levels (4 bits) the optimal clip is about 5.03 (Banner et al.,
  // ACIQ); with 256 levels clipping gains little, so the range stays near the largest value.
  const std::vector<float> u = pd::ops::uniform({20000}, -0.5, 0.5, 11).to_vector<float>();
  std::vector<float> lap;
  for (float x : u) lap.push_back(-(x < 0 ? -1.f : 1.f) * std::log(1.f - 2.f * std::fabs(x)));
  pd::quant::Observer laplace;
  laplace.observe(Tensor::from_vector<float>(lap, {20000}));
  const double top = laplace.max();
  r = laplace.range(Method::mse, 99.99, 16);
  INFO("mse, 16 levels: " << r.hi << ", max " << top);
  CHECK(r.hi > 3.5);
  CHECK(r.hi < 7.0);
  CHECK(laplace.range(Method::mse).hi > 0.7 * top);

  // KL: a normal bulk with a sparse tail of 20 values in [10, 40] is clipped inside the tail.
  std::vector<float> v = pd::ops::normal({20000}, 0, 1, 5).to_vector<float>();
  for (int i = 0; i < 20; ++i) v.push_back(10.f + 1.5f * static_cast<float>(i));
  pd::quant::Observer tail;
  tail.observe(Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}));
  r = tail.range(Method::kl);
  INFO("kl: " << r.hi << ", max " << tail.max());
  CHECK(r.hi > 3.0);
  CHECK(r.hi < tail.max());

  // Non-negative data (after a relu): the range starts at 0.
  pd::quant::Observer relu;
  relu.observe(pd::ops::relu(normal_with_outliers(20000, 0, 3)));
  CHECK(relu.range(Method::kl).lo == 0.0);
  CHECK(relu.range(Method::mse).lo == 0.0);
}

TEST_CASE("calibration: symmetric per-channel weight scales", "[quant]") {
  const Tensor w = Tensor::from_vector<float>({1.27f, -0.5f, 0.f, 0.f, 0.3f, -2.54f}, {3, 2});
  const std::vector<float> s = pd::quant::weight_scales(w);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Approx(0.01f));
  CHECK(s[1] == 1.0f);  // an all-zero channel
  CHECK(s[2] == Approx(0.02f));
  CHECK(pd::quant::weight_scales(w, 1).size() == 2);
}

namespace {

// image [N, 1, 8, 8] -> conv2d (4, 3x3, pad 1, bias) -> relu -> flatten -> linear (10), and a second
// reader of the conv's input (an add of x with itself), which must stay f32.
pd::ir::Program small_net() {
  pd::ir::Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 1, 8, 8}});
  auto w = p.add_param("conv.weight", pd::ops::uniform({4, 1, 3, 3}, -0.5, 0.5, 1));
  auto b = p.add_param("conv.bias", pd::ops::uniform({4}, -0.1, 0.1, 2));
  auto y = p.add_op("conv2d", {{x}, {w}, {b}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
  y = p.add_op("flatten", {{p.add_op("relu", {{y}})[0]}}, {{"start_axis", int64_t{1}}})[0];
  auto fc = p.add_param("fc.weight", pd::ops::uniform({10, 256}, -0.1, 0.1, 3));
  p.mark_output(p.add_op("linear", {{y}, {fc}, {}})[0], "logits");
  p.mark_output(p.add_op("add", {{x}, {x}})[0], "twice");
  return p;
}

int count_ops(const pd::ir::Program& p, const std::string& type) {
  int n = 0;
  for (const auto& op : p.ops()) n += op.type == type;
  return n;
}

}  // namespace

TEST_CASE("qdq: calibrate, insert Q/DQ pairs and s8 weights; outputs stay close to f32", "[quant]") {
  const pd::ir::Program f32 = small_net();
  std::vector<std::map<std::string, Tensor>> batches;
  for (int k = 0; k < 4; ++k) batches.push_back({{"x", pd::ops::uniform({8, 1, 8, 8}, 0, 1, 10 + k)}});
  const auto observers = pd::quant::calibrate(f32, batches);
  REQUIRE(observers.size() == 2);  // the conv's input and the linear's input
  CHECK(observers.at("x").count() == 4 * 8 * 64);

  pd::ir::Program q = f32;
  CHECK(pd::quant::insert_qdq(q, observers) == 2);
  CHECK(count_ops(q, "quantize_linear") == 2);
  CHECK(count_ops(q, "dequantize_linear") == 4);  // two activations, two weights
  CHECK(q.params().count("conv.weight") == 0);     // stored as s8 now
  CHECK(q.params().at("conv.weight.q").dtype() == DType::i8);
  CHECK(q.params().at("x.zero_point").dtype() == DType::u8);
  for (const auto& op : q.ops())  // the residual-style reader keeps the f32 input
    if (op.type == "add") CHECK(q.value(op.inputs[0][0]).name == "x");

  const Tensor x = pd::ops::uniform({8, 1, 8, 8}, 0, 1, 99);
  const Tensor want = pd::exec::Executor(f32).run({{"x", x}})[0], got = pd::exec::Executor(q).run({{"x", x}})[0];
  float scale = 0;
  for (float v : want.to_vector<float>()) scale = std::max(scale, std::abs(v));
  CHECK(pd::test::max_abs_diff(got, want) < 0.05f * scale);
  CHECK(pd::test::max_abs_diff(got, want) > 0.0f);  // it did quantize

  // Every method and i8 activations give a valid program. (How close each comes depends on the data:
  // on this random net KL clips the relu output at half its maximum, so only sanity is checked here;
  // pd-quant measures the accuracy of the choice on real data.)
  for (auto m : {pd::quant::Method::minmax, pd::quant::Method::mse, pd::quant::Method::kl}) {
    pd::ir::Program r = f32;
    pd::quant::QdqOptions o;
    o.method = m, o.activations = DType::i8;
    pd::quant::insert_qdq(r, observers, o);
    INFO(pd::quant::method_name(m));
    CHECK(pd::test::max_abs_diff(pd::exec::Executor(r).run({{"x", x}})[0], want) < 0.5f * scale);
  }
  // weight_bits: every channel's largest weight lands on 2^(bits-1) - 1 (per-channel scales), none beyond;
  // a layer full_bits names keeps 8 bits.
  for (const int bits : {8, 7, 6, -6}) {
    pd::ir::Program r = f32;
    pd::quant::QdqOptions o;
    o.weight_bits = std::abs(bits);
    if (bits < 0) o.full_bits = {"conv"};
    pd::quant::insert_qdq(r, observers, o);
    const Tensor w = r.params().at("conv.weight.q");
    const int64_t per = w.numel() / w.shape()[0], most = bits < 0 ? 127 : (1 << (bits - 1)) - 1;
    const std::vector<int8_t> v = w.to_vector<int8_t>();
    for (int64_t c = 0; c < w.shape()[0]; ++c) {
      int64_t amax = 0;
      for (int64_t i = 0; i < per; ++i) amax = std::max<int64_t>(amax, std::abs(v[static_cast<size_t>(c * per + i)]));
      INFO(bits << " bits, channel " << c);
      CHECK(amax == most);
    }
    const std::vector<int8_t> fc = r.params().at("fc.weight.q").to_vector<int8_t>();
    int64_t fc_max = 0;
    for (int8_t v : fc) fc_max = std::max<int64_t>(fc_max, std::abs(v));
    CHECK(fc_max == (1 << (std::abs(bits) - 1)) - 1);  // full_bits names the conv only
  }
  pd::ir::Program bad = f32;
  CHECK_THAT(error_of([&] { pd::quant::insert_qdq(bad, {}); }), Catch::Contains("no calibration values were observed for 'x'"));
}

// The int8 kernels on the CPU at hand: exact with VNNI (or without oneDNN); without it (PD_CPU_ISA=avx2 in ctest's
// unit:int8_without_vnni run), u8 activations meet weights halved to 7 bits with their scale doubled,
// and s8 activations give the same products. The reference kernel on the weights the fast kernel must
// have used is the expectation, so a saturating vpmaddubsw path fails here.
TEST_CASE("int8 kernels: exact with VNNI, 7-bit weights without it", "[quant][int8_isa]") {
  bool has_onednn = false;
  for (const auto& k : pd::registry::registered_kernels("quantized_linear")) has_onednn |= k.backend == pd::Backend::onednn;
  std::vector<uint8_t> xv(3 * 64);
  std::vector<int8_t> wv(5 * 64), halved(wv.size());
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<uint8_t>(i % 7 == 0 ? 3 : 250 + i % 6);  // mostly large
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<int8_t>(i % 5 == 0 ? -128 : 127 - static_cast<int>(i % 9));
  for (size_t i = 0; i < wv.size(); ++i) halved[i] = static_cast<int8_t>(std::nearbyint(wv[i] * 0.5));
  const Tensor x = Tensor::from_vector<uint8_t>(xv, {3, 64}), w = Tensor::from_vector<int8_t>(wv, {5, 64});
  const Tensor xs = Tensor::scalar<float>(0.02f), xz = Tensor::scalar<uint8_t>(0), bias = pd::ops::full({5}, 0.5, DType::f32);
  const Tensor ws = Tensor::from_vector<float>({0.001f, 0.002f, 0.003f, 0.004f, 0.005f}, {5});
  // Only oneDNN's kernels multiply through vpmaddubsw; a build without it runs the exact reference.
  const bool vnni = pd::cpu_has_vnni() || !has_onednn;
  const Tensor w_used = vnni ? w : Tensor::from_vector<int8_t>(halved, {5, 64});
  const Tensor ws_used = vnni ? ws : pd::ops::mul(ws, Tensor::scalar<float>(2.f));
  const Tensor got = pd::ops::quantized_linear(x, xs, xz, w, ws, bias);
  // s8 activations holding the same real values (x - 128 with zero point -128) multiply the same way.
  const Tensor x8 = pd::ops::cast(pd::ops::sub(pd::ops::cast(x, DType::i32), pd::ops::full({}, 128, DType::i32)), DType::i8);
  const Tensor got8 = pd::ops::quantized_linear(x8, xs, Tensor::scalar<int8_t>(-128), w, ws, bias);
  pd::ScopedKernelBackend reference(pd::Backend::reference);
  const Tensor want = pd::ops::quantized_linear(x, xs, xz, w_used, ws_used, bias);
  INFO("int8 path: " << pd::int8_path_name());
  CHECK(pd::test::max_abs_diff(got, want) <= 1e-3f);
  CHECK(pd::test::max_abs_diff(got8, want) <= 1e-3f);
  // The exact products differ from the 7-bit ones, so the test tells the two paths apart.
  const Tensor exact = pd::ops::quantized_linear(x, xs, xz, w, ws, bias);
  CHECK((pd::test::max_abs_diff(got, exact) <= 1e-3f) == vnni);
}

namespace {

// A plain convolution's int32 sum for output (n, oh, ow, o): NHWC u8 x [N, H, W, C] with zero point zp
// (also the padding's value), weights [CO][C][K][K], stride 1, padding P.
int64_t plain_conv_sum(const std::vector<uint8_t>& xv, const std::vector<int8_t>& wv, int64_t H, int64_t W, int64_t C, int64_t K,
                       int64_t P, int64_t zp, int64_t n, int64_t oh, int64_t ow, int64_t o) {
  int64_t sum = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ky = 0; ky < K; ++ky)
      for (int64_t kx = 0; kx < K; ++kx) {
        const int64_t h = oh + ky - P, v = ow + kx - P;
        const int64_t xq = h < 0 || h >= H || v < 0 || v >= W ? zp : xv[static_cast<size_t>(((n * H + h) * W + v) * C + c)];
        sum += (xq - zp) * wv[static_cast<size_t>(((o * C + c) * K + ky) * K + kx)];
      }
  return sum;
}

}  // namespace

// The direct int8 convolution (few input channels, NHWC) on the reference backend, which multiplies the
// weights as given: exact against a plain sum on each of its paths. On AVX2 without VNNI, weights within 7
// bits take vpmaddubsw (the largest products, 255 x 64 in pairs, just fit 16 bits) and 8-bit weights the
// 16-bit path; with the 2 x 2 max pool fused, the pool of the plain sums.
TEST_CASE("int8 direct convolution: exact sums for 7-bit and 8-bit weights, pooled or not", "[quant][int8_isa]") {
  pd::ScopedKernelBackend reference(pd::Backend::reference);
  const int64_t N = 2, H = 9, W = 12, C = 6, CO = 16, K = 5, P = 2;
  const int64_t OH = H + 2 * P - K + 1, OW = W + 2 * P - K + 1;
  std::vector<uint8_t> xv(static_cast<size_t>(N * H * W * C));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<uint8_t>(i % 11 == 0 ? 7 : 245 + i % 11);  // mostly large
  const uint8_t zp = 3;
  const Tensor x = Tensor::from_vector<uint8_t>(xv, {N, H, W, C});
  const Tensor xs = Tensor::scalar<float>(0.5f), xz = Tensor::scalar<uint8_t>(zp);
  for (const int most : {64, 127}) {
    std::vector<int8_t> wv(static_cast<size_t>(CO * C * K * K));
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<int8_t>(i % 3 == 0 ? -most - (most == 127) : most - static_cast<int>(i % 4));
    std::vector<float> wsv(CO);
    for (int64_t o = 0; o < CO; ++o) wsv[o] = std::ldexp(1.0f, -static_cast<int>(o % 4));  // exact products in f32
    const Tensor w = Tensor::from_vector<int8_t>(wv, {CO, C, K, K}), ws = Tensor::from_vector<float>(wsv, {CO});
    std::vector<float> want(static_cast<size_t>(N * OH * OW * CO));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t o = 0; o < CO; ++o) {
            const int64_t sum = plain_conv_sum(xv, wv, H, W, C, K, P, zp, n, oh, ow, o);
            want[static_cast<size_t>(((n * OH + oh) * OW + ow) * CO + o)] = static_cast<float>(0.5 * wsv[o] * static_cast<double>(sum));
          }
    INFO("weights within " << most << ", int8 path " << pd::int8_path_name());
    const Tensor got = pd::ops::quantized_conv2d(x, xs, xz, w, ws, {}, {}, {}, {}, {}, {}, {1, 1}, {P, P}, {1, 1}, 1, "none", 0.0,
                                                 /*channels_last=*/true);
    const Tensor exact = Tensor::from_vector<float>(want, {N, OH, OW, CO});
    CHECK(pd::test::max_abs_diff(got, exact) == 0.0f);
    const Tensor pooled = pd::ops::quantized_conv2d_maxpool(x, xs, xz, w, ws, {}, {}, {}, {1, 1}, {P, P});
    CHECK(pd::test::max_abs_diff(pooled, pd::ops::max_pool2d_nhwc(exact, {2, 2})) == 0.0f);
  }
}

// Weights within 6 bits (pd-quant --weight-bits 6): on AVX2 the direct kernels add two groups' pair sums
// before widening them, and the convolution takes wide inputs too (20 channels: 15 groups a kernel row,
// the last pair half padding), with a u8 residual in its epilogue. Exact against plain sums (scales powers
// of 2) on both backends and on 1, 2 and 3 threads: 7 rows on 2 threads split the 4 blocks of 16 output
// channels instead; the pooled convolution and the linear kernel too.
TEST_CASE("int8 direct convolution: 6-bit weights in pair sums, wide inputs, int8 residual, channel shares", "[quant][int8_isa]") {
  const int64_t N = 1, H = 7, W = 9, C = 20, CO = 64, K = 3, P = 1;
  std::vector<uint8_t> xv(static_cast<size_t>(N * H * W * C)), rv(static_cast<size_t>(N * H * W * CO));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<uint8_t>(i % 13 == 0 ? 2 : 240 + i % 16);  // mostly large
  for (size_t i = 0; i < rv.size(); ++i) rv[i] = static_cast<uint8_t>((i * 37) % 256);
  std::vector<int8_t> wv(static_cast<size_t>(CO * C * K * K));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<int8_t>(i % 3 == 0 ? -32 : 32 - static_cast<int>(i % 5));
  std::vector<float> wsv(CO);
  for (int64_t o = 0; o < CO; ++o) wsv[o] = std::ldexp(1.0f, -static_cast<int>(o % 4));
  const uint8_t zp = 5, rzp = 100;
  std::vector<float> want(static_cast<size_t>(N * H * W * CO));
  for (int64_t oh = 0; oh < H; ++oh)
    for (int64_t ow = 0; ow < W; ++ow)
      for (int64_t o = 0; o < CO; ++o) {
        const int64_t sum = plain_conv_sum(xv, wv, H, W, C, K, P, zp, 0, oh, ow, o);
        const size_t at = static_cast<size_t>((oh * W + ow) * CO + o);
        want[at] = static_cast<float>(0.25 * wsv[o] * static_cast<double>(sum) + 0.5 * (rv[at] - rzp));
      }
  const Tensor x = Tensor::from_vector<uint8_t>(xv, {N, H, W, C}), r = Tensor::from_vector<uint8_t>(rv, {N, H, W, CO});
  const Tensor w = Tensor::from_vector<int8_t>(wv, {CO, C, K, K}), ws = Tensor::from_vector<float>(wsv, {CO});
  const Tensor xs = Tensor::scalar<float>(0.25f), xz = Tensor::scalar<uint8_t>(zp);
  const Tensor rs = Tensor::scalar<float>(0.5f), rz = Tensor::scalar<uint8_t>(rzp);
  const Tensor exact = Tensor::from_vector<float>(want, {N, H, W, CO});
  // The first 16 output channels with the 2 x 2 max pool fused (no residual), and a linear of 24 outputs
  // on the first 3 x 64 bytes of x as rows: the pooled and the linear kernel's pair sums.
  std::vector<float> pooled_v(static_cast<size_t>((H / 2) * (W / 2) * 16));
  for (int64_t ph = 0; ph < H / 2; ++ph)
    for (int64_t pw = 0; pw < W / 2; ++pw)
      for (int64_t o = 0; o < 16; ++o) {
        float m = -1e30f;
        for (int64_t d = 0; d < 4; ++d) {
          const size_t at = static_cast<size_t>(((2 * ph + d / 2) * W + 2 * pw + d % 2) * CO + o);
          m = std::max(m, want[at] - 0.5f * static_cast<float>(rv[at] - rzp));
        }
        pooled_v[static_cast<size_t>((ph * (W / 2) + pw) * 16 + o)] = m;
      }
  const Tensor pooled = Tensor::from_vector<float>(pooled_v, {N, H / 2, W / 2, 16});
  const Tensor w16 = Tensor::from_vector<int8_t>(std::vector<int8_t>(wv.begin(), wv.begin() + 16 * C * K * K), {16, C, K, K});
  const Tensor ws16 = Tensor::from_vector<float>(std::vector<float>(wsv.begin(), wsv.begin() + 16), {16});
  const int64_t LK = 64, LO = 24;
  const Tensor rows = Tensor::from_vector<uint8_t>(std::vector<uint8_t>(xv.begin(), xv.begin() + 3 * LK), {3, LK});
  const Tensor lw = Tensor::from_vector<int8_t>(std::vector<int8_t>(wv.begin(), wv.begin() + LO * LK), {LO, LK});
  const Tensor lws = Tensor::from_vector<float>(std::vector<float>(wsv.begin(), wsv.begin() + LO), {LO});
  std::vector<float> linear_v(static_cast<size_t>(3 * LO));
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t o = 0; o < LO; ++o) {
      int64_t sum = 0;
      for (int64_t k = 0; k < LK; ++k) sum += (xv[static_cast<size_t>(m * LK + k)] - zp) * wv[static_cast<size_t>(o * LK + k)];
      linear_v[static_cast<size_t>(m * LO + o)] = static_cast<float>(0.25 * wsv[o] * static_cast<double>(sum));
    }
  const Tensor linear = Tensor::from_vector<float>(linear_v, {3, LO});
  std::vector<pd::Backend> backends{pd::Backend::reference};
  for (const auto& k : pd::registry::registered_kernels("quantized_conv2d"))
    if (k.backend == pd::Backend::onednn && backends.size() == 1) backends.push_back(k.backend);
  const int threads = pd::num_threads();
  std::vector<Tensor> kept;  // alive, so that no result's memory holds an earlier one's values
  for (const pd::Backend backend : backends)
    for (const int t : {1, 2, 3}) {
      pd::ScopedKernelBackend on(backend);
      pd::set_num_threads(t);
      INFO("backend " << static_cast<int>(backend) << ", " << t << " threads, int8 path " << pd::int8_path_name());
      kept.push_back(pd::ops::quantized_conv2d(x, xs, xz, w, ws, {}, r, rs, rz, {}, {}, {1, 1}, {P, P}, {1, 1}, 1, "none", 0.0,
                                               /*channels_last=*/true));
      CHECK(pd::test::max_abs_diff(kept.back(), exact) == 0.0f);
      kept.push_back(pd::ops::quantized_conv2d_maxpool(x, xs, xz, w16, ws16, {}, {}, {}, {1, 1}, {P, P}));
      CHECK(pd::test::max_abs_diff(kept.back(), pooled) == 0.0f);
      kept.push_back(pd::ops::quantized_linear(rows, xs, xz, lw, lws, {}));
      CHECK(pd::test::max_abs_diff(kept.back(), linear) == 0.0f);
    }
  pd::set_num_threads(threads);
}

// The statistics cache: what is stored comes back bit for bit under its key; another key, a damaged
// file and inconsistent statistics are refused with a reason, never used.
TEST_CASE("stats cache: observers round-trip under their key, damage is refused", "[quant]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pd_stats_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const pd::ir::Program f32 = small_net();
  std::vector<std::map<std::string, Tensor>> batches;
  for (int k = 0; k < 3; ++k) batches.push_back({{"x", pd::ops::uniform({4, 1, 8, 8}, -1, 2, 20 + k)}});
  const auto observers = pd::quant::calibrate(f32, batches);
  const std::string key = pd::quant::stats_key({}, batches);
  CHECK(key.size() == 16);
  auto other = batches;
  other[2]["x"] = pd::ops::uniform({4, 1, 8, 8}, -1, 2, 99);
  CHECK(pd::quant::stats_key({}, other) != key);  // the data is part of the key

  const std::string path = (dir / "sub" / (key + ".pdstats")).string();
  pd::quant::save_stats(path, observers, key);
  std::string why;
  auto back = pd::quant::load_stats(path, key, &why);
  REQUIRE(back.has_value());
  REQUIRE(back->size() == observers.size());
  for (const auto& [name, obs] : observers) {
    const auto& b = back->at(name);
    CHECK(b.histogram() == obs.histogram());
    CHECK(b.count() == obs.count());
    for (auto m : {pd::quant::Method::minmax, pd::quant::Method::percentile, pd::quant::Method::kl, pd::quant::Method::mse}) {
      CHECK(b.range(m).lo == obs.range(m).lo);
      CHECK(b.range(m).hi == obs.range(m).hi);
    }
  }
  CHECK_FALSE(pd::quant::load_stats(path, "0000000000000000", &why).has_value());
  CHECK_THAT(why, Catch::Contains("written for other statistics"));
  CHECK_FALSE(pd::quant::load_stats((dir / "none.pdstats").string(), key, &why).has_value());

  {  // one flipped byte in the middle: the archive's checksums catch it
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put('\x5a');
  }
  CHECK_FALSE(pd::quant::load_stats(path, key, &why).has_value());
  CHECK_FALSE(why.empty());

  pd::quant::Observer::State s = observers.begin()->second.state();
  s.count += 1;  // no longer the histogram's total
  CHECK_THAT(error_of([&] { pd::quant::Observer::restore(s); }), Catch::Contains("inconsistent"));
  fs::remove_all(dir);
}

// --weight-only: linear and matmul weights become s8 with a dequantize in front, activations stay f32;
// compiled, the pairs become weight_only_linear (a matmul's [K, N] weight transposed once), and the
// results match the unlowered QDQ form.
TEST_CASE("weight-only: s8 linear / matmul weights, lowered to weight_only_linear", "[quant]") {
  pd::ir::Program f32;
  auto x = f32.add_input("x", {DType::f32, {-1, 3, 16}});
  auto w1 = f32.add_param("fc.weight", pd::ops::uniform({24, 16}, -0.5, 0.5, 1));
  auto b1 = f32.add_param("fc.bias", pd::ops::uniform({24}, -0.1, 0.1, 2));
  auto h = f32.add_op("relu", {{f32.add_op("linear", {{x}, {w1}, {b1}})[0]}})[0];
  auto w2 = f32.add_param("proj", pd::ops::uniform({24, 70}, -0.5, 0.5, 3));  // [K, N] for matmul
  f32.mark_output(f32.add_op("matmul", {{h}, {w2}})[0], "y");

  CHECK(pd::quant::quantizable_layers(f32, {}, true) == std::vector<std::string>{"fc.weight", "proj"});
  pd::ir::Program q = f32;
  CHECK(pd::quant::insert_weight_only(q) == 2);
  CHECK(count_ops(q, "dequantize_linear") == 2);
  CHECK(count_ops(q, "quantize_linear") == 0);
  CHECK(q.params().at("proj.q").dtype() == DType::i8);
  CHECK(q.params().at("proj.scale").shape() == pd::Shape{70});  // per output column of [K, N]

  const Tensor in = pd::ops::uniform({5, 3, 16}, -1, 1, 7);
  const Tensor want = pd::exec::Executor(f32).run({{"x", in}})[0], qdq = pd::exec::Executor(q).run({{"x", in}})[0];
  float scale = 0;
  for (float v : want.to_vector<float>()) scale = std::max(scale, std::abs(v));
  CHECK(pd::test::max_abs_diff(qdq, want) < 0.02f * scale);
  CHECK(pd::test::max_abs_diff(qdq, want) > 0.0f);

  pd::exec::ExecPlan plan = pd::exec::compile(q, pd::Target::host());
  CHECK(count_ops(plan.program(), "weight_only_linear") == 2);
  CHECK(count_ops(plan.program(), "dequantize_linear") == 0);
  const Tensor lowered = pd::exec::Executor(plan).run({{"x", in}})[0];
  CHECK(pd::test::max_abs_diff(lowered, qdq) < 1e-5f * scale);

  pd::ir::Program kept = f32;  // exclude by weight name
  CHECK(pd::quant::insert_weight_only(kept, {.exclude = {"proj"}}) == 1);
}

// --exclude names a layer by its type, output value, weight name or a dotted prefix of the weight name
// (passes append to it: bn_fold's ".bn_folded"); anything else is reported, not ignored.
TEST_CASE("qdq: exclude names layers by prefix; names matching nothing are reported", "[quant]") {
  pd::ir::Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 16}});
  auto w1 = p.add_param("b1_conv1.weight.bn_folded", pd::ops::uniform({8, 16}, -0.5, 0.5, 1));
  auto h = p.add_op("linear", {{x}, {w1}})[0];
  auto w2 = p.add_param("b1_conv10.weight", pd::ops::uniform({4, 8}, -0.5, 0.5, 2));
  p.mark_output(p.add_op("linear", {{h}, {w2}})[0], "y");

  using Names = std::vector<std::string>;
  CHECK(pd::quant::quantizable_layers(p, {"b1_conv1"}) == Names{"b1_conv10.weight"});  // not b1_conv10
  CHECK(pd::quant::quantizable_layers(p, {"b1_conv1.weight"}) == Names{"b1_conv10.weight"});
  CHECK(pd::quant::quantizable_layers(p, {"b1_conv10.weight"}) == Names{"b1_conv1.weight.bn_folded"});
  CHECK(pd::quant::quantizable_layers(p, {"linear"}).empty());
  const std::string hidden = p.value(h).name;  // the first linear's output value
  CHECK(pd::quant::quantizable_layers(p, {hidden}) == Names{"b1_conv10.weight"});
  CHECK(pd::quant::unmatched_excludes(p, {"b1_conv1", "linear", hidden, "b1_conv", "b1_conv1.w", "conv2d"}) ==
        Names{"b1_conv", "b1_conv1.w", "conv2d"});
  CHECK(pd::quant::unmatched_excludes(p, {"b1_conv10"}, true).empty());
}
