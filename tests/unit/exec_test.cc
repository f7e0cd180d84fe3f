// The executor (results equal eager ops, memory freed after last use, input checks that list what the
// model expects) and Network -> Program export (the program computes what the network computes).
#include <catch2/catch.hpp>

#include <cmath>
#include <chrono>
#include <filesystem>
#include <thread>
#include <unistd.h>

#include "op_api.h"
#include "pd/core/cpu_features.h"
#include "pd/exec/executor.h"
#include "pd/io/model_file.h"
#include "pd/model/export.h"
#include "pd/pd.h"
#include "test_util.h"

using pd::Tensor;
namespace ir = pd::ir;
using pd::test::error_of;
using pd::test::max_abs_diff;

namespace {

// x -> relu -> tanh -> sigmoid -> mul(., .) -> exp: a chain of 5 same-sized intermediates.
ir::Program chain() {
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 256}});
  auto a = p.add_op("relu", {{x}})[0];
  auto b = p.add_op("tanh", {{a}})[0];
  auto c = p.add_op("sigmoid", {{b}})[0];
  auto d = p.add_op("mul", {{c}, {c}})[0];
  auto e = p.add_op("exp", {{d}})[0];
  p.mark_output(e, "y");
  return p;
}

}  // namespace

TEST_CASE("executor: a chain gives the eager result and frees values after their last use", "[exec]") {
  ir::Program p = chain();
  Tensor x = pd::ops::normal({8, 256}, 0, 1, 3);
  Tensor c = pd::ops::sigmoid(pd::ops::tanh(pd::ops::relu(x)));
  Tensor want = pd::ops::exp(pd::ops::mul(c, c));

  pd::exec::Executor exec(p);
  auto out = exec.run({{"x", x}});
  REQUIRE(out.size() == 1);
  CHECK(max_abs_diff(out[0], want) == 0);
  const int64_t one = 8 * 256 * 4;
  CHECK(exec.stats().ops_run == 5);
  CHECK(exec.stats().total_intermediate_bytes >= 5 * one);
  CHECK(exec.stats().peak_bytes < exec.stats().total_intermediate_bytes);
  CHECK(exec.stats().peak_bytes <= 2 * one + one / 2);  // at most an op's input and output live at once
  CHECK(exec.all_values().empty());

  // Keeping everything: peak equals the sum, and every value is visible by name.
  pd::exec::Executor keep(p, {.inference = true, .reuse_memory = false});
  auto out2 = keep.run({{"x", x}});
  CHECK(max_abs_diff(out2[0], want) == 0);
  CHECK(keep.stats().peak_bytes == keep.stats().total_intermediate_bytes);
  CHECK(keep.all_values().size() == p.values().size());
  CHECK(max_abs_diff(keep.all_values().at(p.value(p.outputs()[0]).name), want) == 0);

  // Any batch size runs (-1 extent).
  CHECK(exec.run({{"x", pd::ops::zeros({3, 256})}})[0].shape() == pd::Shape{3, 256});
}

TEST_CASE("executor: params, and autograd only outside inference mode", "[exec]") {
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 4}});
  Tensor w = pd::ops::normal({3, 4}, 0, 1, 1), b = pd::ops::normal({3}, 0, 1, 2);
  auto y = p.add_op("linear", {{x}, {p.add_param("fc.weight", w)}, {p.add_param("fc.bias", b)}})[0];
  p.mark_output(y, "logits");
  Tensor in = pd::ops::normal({5, 4}, 0, 1, 4);
  auto out = pd::exec::Executor(p).run({{"x", in}});
  CHECK(max_abs_diff(out[0], pd::ops::linear(in, w, b)) < 1e-6f);
  CHECK_FALSE(out[0].requires_grad());

  Tensor wg = w.clone();
  wg.set_requires_grad(true);
  p.set_param(p.find("fc.weight"), wg);
  auto trained = pd::exec::Executor(p, {.inference = false}).run({{"x", in}});
  CHECK(trained[0].requires_grad());
}

TEST_CASE("executor: conv weights are packed once per param, and a replaced param is packed anew", "[exec]") {
  // 48 output channels: a oneDNN conv, which wants the weight in a blocked layout; 6: the direct kernel
  // (AVX2 and up), which wants it interleaved by channel blocks.
  for (int64_t cout : {48, 6}) {
    ir::Program p;
    auto x = p.add_input("x", {pd::DType::f32, {-1, 3, 8, 8}});
    const Tensor w1 = pd::ops::uniform({cout, 3, 3, 3}, -1, 1, 1), w2 = pd::ops::uniform({cout, 3, 3, 3}, -1, 1, 2);
    auto w = p.add_param("w", w1);
    p.mark_output(p.add_op("conv2d", {{x}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0], "y");
    pd::exec::Executor exec(p);
    const Tensor in = pd::ops::uniform({2, 3, 8, 8}, -1, 1, 3);
    const Tensor first = exec.run({{"x", in}})[0];
    CHECK(max_abs_diff(first, pd::ops::conv2d(in, w1, {}, {1, 1}, {1, 1})) < 1e-5f);
#ifdef PD_WITH_ONEDNN
    if (cout == 48 || pd::cpu_has_avx2_fma()) CHECK(exec.packed_weights().size() == 1);
#endif
    CHECK(max_abs_diff(exec.run({{"x", in}})[0], first) == 0.0f);  // the packed copy, reused
    CHECK(exec.packed_weights().size() <= 1);
    p.set_param(w, w2);  // new storage: never mistaken for the old packed copy
    CHECK(max_abs_diff(exec.run({{"x", in}})[0], pd::ops::conv2d(in, w2, {}, {1, 1}, {1, 1})) < 1e-5f);
  }
  // Outside an Executor nothing is packed: eager calls with the same weight pack it every time.
  CHECK(pd::current_packed_weights() == nullptr);
}

TEST_CASE("executor: a 3x3 conv2d on Winograd transforms a constant weight once, a replaced one anew", "[exec]") {
  // 16 channels each way on 24x24 maps (36 output tiles): the Winograd path wherever AVX2 + FMA is.
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 16, 24, 24}});
  const Tensor w1 = pd::ops::uniform({16, 16, 3, 3}, -1, 1, 1), w2 = pd::ops::uniform({16, 16, 3, 3}, -1, 1, 2);
  auto w = p.add_param("w", w1);
  p.mark_output(p.add_op("conv2d", {{x}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0], "y");
  pd::exec::Executor exec(p);
  const Tensor in = pd::ops::uniform({1, 16, 24, 24}, -1, 1, 3);
  const Tensor first = exec.run({{"x", in}})[0];
  CHECK(max_abs_diff(first, pd::ops::conv2d(in, w1, {}, {1, 1}, {1, 1})) < 1e-4f);
#ifdef PD_WITH_ONEDNN
  if (pd::cpu_has_avx2_fma()) CHECK(exec.packed_weights().size() == 1);  // the transformed filters
#endif
  CHECK(max_abs_diff(exec.run({{"x", in}})[0], first) == 0.0f);
  p.set_param(w, w2);
  CHECK(max_abs_diff(exec.run({{"x", in}})[0], pd::ops::conv2d(in, w2, {}, {1, 1}, {1, 1})) < 1e-4f);
}

TEST_CASE("executor: an op's prepared call is kept between runs and made anew for a new batch or param", "[exec]") {
  // The int8 direct kernels keep their prepared call (packed weights, the epilogue of the constant
  // scales) in the op's memo slot: every run must still equal the eager op on the params of that run.
  namespace ops = pd::ops;
  const auto u8 = [](std::vector<int64_t> shape, uint64_t seed) { return ops::cast(ops::uniform(shape, 0, 255, seed), pd::DType::u8); };
  const auto i8 = [](std::vector<int64_t> shape, uint64_t seed) { return ops::cast(ops::uniform(shape, -64, 64, seed), pd::DType::i8); };
  const Tensor x_scale = ops::full({}, 0.02), x_zp = ops::cast(ops::full({}, 120), pd::DType::u8);
  const Tensor conv_w = i8({6, 1, 5, 5}, 1), conv_ws1 = ops::uniform({6}, 0.001, 0.01, 2), conv_ws2 = ops::uniform({6}, 0.001, 0.01, 3);
  const Tensor fc_w = i8({7, 40}, 4), fc_ws = ops::uniform({7}, 0.001, 0.01, 5), fc_b = ops::uniform({7}, -1, 1, 6);
  ir::Program p;
  auto image = p.add_input("image", {pd::DType::u8, {-1, 12, 12, 1}});
  auto row = p.add_input("row", {pd::DType::u8, {-1, 40}});
  auto xs = p.add_param("x.scale", x_scale), xz = p.add_param("x.zero_point", x_zp);
  auto ws = p.add_param("conv.weight_scale", conv_ws1);
  p.mark_output(p.add_op("quantized_conv2d_maxpool", {{image}, {xs}, {xz}, {p.add_param("conv.weight", conv_w)}, {ws}, {}, {}, {}},
                         {{"padding", std::vector<int64_t>{2, 2}}, {"activation", std::string("relu")}})[0],
                "pooled");
  p.mark_output(p.add_op("quantized_linear", {{row}, {xs}, {xz}, {p.add_param("fc.weight", fc_w)}, {p.add_param("fc.weight_scale", fc_ws)},
                                              {p.add_param("fc.bias", fc_b)}, {}, {}})[0],
                "fc");
  // A 3 x 3 pool: the direct kernel declines, and the op runs quantized_conv2d's kernel (whose own
  // direct path must not take the op's slot for its call) and then the pool.
  p.mark_output(p.add_op("quantized_conv2d_maxpool", {{image}, {xs}, {xz}, {p.find("conv.weight")}, {ws}, {}, {}, {}},
                         {{"padding", std::vector<int64_t>{2, 2}}, {"pool_kernel_size", std::vector<int64_t>{3, 3}},
                          {"pool_stride", std::vector<int64_t>{2, 2}}})[0],
                "pooled3");
  pd::exec::Executor exec(p);
  const auto check = [&](int64_t batch, const Tensor& weight_scale, uint64_t seed) {
    const Tensor im = u8({batch, 12, 12, 1}, seed), r = u8({batch, 40}, seed + 1);
    const auto outs = exec.run({{"image", im}, {"row", r}});
    const Tensor want = ops::quantized_conv2d_maxpool(im, x_scale, x_zp, conv_w, weight_scale, {}, {}, {}, {1, 1}, {2, 2}, {1, 1}, 1, "relu");
    CHECK(max_abs_diff(outs[0], want) < 1e-5f);
    CHECK(max_abs_diff(outs[1], ops::quantized_linear(r, x_scale, x_zp, fc_w, fc_ws, fc_b)) < 1e-5f);
    CHECK(max_abs_diff(outs[2], ops::quantized_conv2d_maxpool(im, x_scale, x_zp, conv_w, weight_scale, {}, {}, {}, {1, 1}, {2, 2}, {1, 1}, 1,
                                                              "none", 0.0, pd::DType::f32, {3, 3}, {2, 2})) < 1e-5f);
  };
  check(2, conv_ws1, 10);
  check(2, conv_ws1, 20);  // kept
  check(3, conv_ws1, 30);  // a new batch: made for its shape
  p.set_param(ws, conv_ws2);  // new storage: the slot is emptied
  check(3, conv_ws2, 40);
  check(1, conv_ws2, 50);
}

// The runs of a kept-argument-maps test, check(batch, seed) each: batch 1 (the maps made), batch 1 again
// (kept, pointed at other buffers), a new batch (its maps made), batch 1, then once more after `replace`
// gives a param new storage (the op's slot is emptied).
template <class Check, class Replace>
void kept_maps_runs(const Check& check, const Replace& replace) {
  check(1, 10);
  check(1, 20);
  check(3, 30);
  check(1, 40);
  replace();
  check(1, 50);
}

TEST_CASE("executor: oneDNN's int8 convolution keeps its argument maps between runs, whatever the batch", "[exec]") {
  // 32 channels in NHWC: oneDNN's primitive takes it (the direct kernels stop at 16), one a band of rows
  // at batch 1 on AVX-512, one a part of the images at a larger batch. In an Executor each part's argument
  // map is kept in the op's slot and pointed at a run's buffers; every run must equal the eager op (which
  // makes its maps anew).
  namespace ops = pd::ops;
  const auto u8 = [](std::vector<int64_t> shape, uint64_t seed) { return ops::cast(ops::uniform(shape, 0, 255, seed), pd::DType::u8); };
  const Tensor weight = ops::cast(ops::uniform({32, 32, 3, 3}, -64, 64, 1), pd::DType::i8);
  const Tensor x_scale = ops::full({}, 0.02), x_zp = ops::cast(ops::full({}, 120), pd::DType::u8);
  const Tensor ws1 = ops::uniform({32}, 0.001, 0.01, 2), ws2 = ops::uniform({32}, 0.001, 0.01, 3), bias = ops::uniform({32}, -1, 1, 4);
  const Tensor r_scale = ops::full({}, 0.03), r_zp = ops::cast(ops::full({}, 110), pd::DType::u8);
  const Tensor out_scale = ops::full({}, 0.05), out_zp = ops::cast(ops::full({}, 3), pd::DType::u8);
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::u8, {-1, 6, 7, 32}});
  auto r = p.add_input("r", {pd::DType::u8, {-1, 6, 7, 32}});
  auto ws = p.add_param("w.scale", ws1);
  const std::vector<std::vector<ir::ValueId>> args = {
      {x}, {p.add_param("x.scale", x_scale)}, {p.add_param("x.zp", x_zp)}, {p.add_param("w", weight)}, {ws}, {p.add_param("b", bias)},
      {r}, {p.add_param("r.scale", r_scale)}, {p.add_param("r.zp", r_zp)}, {p.add_param("out.scale", out_scale)},
      {p.add_param("out.zp", out_zp)}};
  const auto attrs = [](pd::DType out) {
    return pd::AttrMap{{"padding", std::vector<int64_t>{1, 1}}, {"activation", std::string("relu")}, {"channels_last", true},
                       {"out_dtype", pd::AttrValue(out)}};
  };
  p.mark_output(p.add_op("quantized_conv2d", args, attrs(pd::DType::u8))[0], "requantized");
  std::vector<std::vector<ir::ValueId>> f32_args = args;
  f32_args[9] = f32_args[10] = {};  // an f32 result: the int8 residual widened into it
  p.mark_output(p.add_op("quantized_conv2d", f32_args, attrs(pd::DType::f32))[0], "widened");
  pd::exec::Executor exec(p);
  Tensor weight_scale = ws1;
  const auto check = [&](int64_t batch, uint64_t seed) {
    const Tensor in = u8({batch, 6, 7, 32}, seed), res = u8({batch, 6, 7, 32}, seed + 1);
    const auto outs = exec.run({{"x", in}, {"r", res}});
    const auto eager = [&](const Tensor& s, const Tensor& z, pd::DType out) {
      return ops::quantized_conv2d(in, x_scale, x_zp, weight, weight_scale, bias, res, r_scale, r_zp, s, z, {1, 1}, {1, 1}, {1, 1}, 1,
                                   "relu", 0.0, true, out);
    };
    CHECK(max_abs_diff(outs[0], eager(out_scale, out_zp, pd::DType::u8)) == 0.0f);
    CHECK(max_abs_diff(outs[1], eager({}, {}, pd::DType::f32)) < 1e-5f);
  };
  kept_maps_runs(check, [&] {
    p.set_param(ws, ws2);
    weight_scale = ws2;
  });
}

TEST_CASE("executor: blocked_conv2d keeps its parts' argument maps between runs, whatever the batch", "[exec]") {
  // Two channel-blocked convolutions (blocks of 8: AVX2 and AVX-512 alike), the second with the first's
  // result as its residual; at batch 1 their parts split the output channels, at 3 the images. Every run
  // must equal the eager ops, which make their maps anew.
  namespace ops = pd::ops;
  const Tensor w1 = ops::uniform({16, 16, 3, 3}, -0.3, 0.3, 1), w2 = ops::uniform({16, 16, 3, 3}, -0.3, 0.3, 2);
  const Tensor b1 = ops::uniform({16}, -1, 1, 3), b2 = ops::uniform({16}, -1, 1, 4), b3 = ops::uniform({16}, -1, 1, 5);
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 16, 9, 9}});
  auto bias2 = p.add_param("b2", b2);
  const pd::AttrMap attrs = {{"padding", std::vector<int64_t>{1, 1}}, {"activation", std::string("relu")}, {"block", int64_t{8}}};
  auto y1 = p.add_op("blocked_conv2d", {{x}, {p.add_param("w1", w1)}, {p.add_param("b1", b1)}, {}}, attrs)[0];
  p.mark_output(p.add_op("blocked_conv2d", {{y1}, {p.add_param("w2", w2)}, {bias2}, {y1}}, attrs)[0], "y");
  pd::exec::Executor exec(p);
  Tensor bias = b2;
  const auto check = [&](int64_t batch, uint64_t seed) {
    const Tensor in = ops::uniform({batch, 16, 9, 9}, -1, 1, seed);
    const Tensor first = ops::blocked_conv2d(in, w1, b1, {}, {1, 1}, {1, 1}, {1, 1}, "relu", 0.0, 8);
    const Tensor want = ops::blocked_conv2d(first, w2, bias, first, {1, 1}, {1, 1}, {1, 1}, "relu", 0.0, 8);
    CHECK(max_abs_diff(exec.run({{"x", in}})[0], want) < 1e-5f);
  };
  kept_maps_runs(check, [&] {
    p.set_param(bias2, b3);
    bias = b3;
  });
}

TEST_CASE("executor: oneDNN's plain convolutions split an inference batch into image parts", "[exec]") {
  // conv2d and fused_conv2d (with a residual) as oneDNN runs them outside channel blocks (NCHW, reordered
  // in and out): in an inference executor a batch of several images, with OpenMP's team asleep, runs as
  // one-thread parts on the kernels' pool (5 images: unequal parts). Every run must equal the eager ops,
  // which run the whole batch at once.
  namespace ops = pd::ops;
  const Tensor w1 = ops::uniform({16, 8, 3, 3}, -0.3, 0.3, 1), w2 = ops::uniform({16, 16, 3, 3}, -0.3, 0.3, 2);
  const Tensor b1 = ops::uniform({16}, -1, 1, 3), b2 = ops::uniform({16}, -1, 1, 4);
  ir::Program p;
  auto x = p.add_input("x", {pd::DType::f32, {-1, 8, 16, 16}});
  const pd::AttrMap pad = {{"padding", std::vector<int64_t>{1, 1}}};
  auto y1 = p.add_op("conv2d", {{x}, {p.add_param("w1", w1)}, {p.add_param("b1", b1)}}, pad)[0];
  pd::AttrMap fused = pad;
  fused["activation"] = std::string("relu");
  p.mark_output(p.add_op("fused_conv2d", {{y1}, {p.add_param("w2", w2)}, {p.add_param("b2", b2)}, {y1}}, fused)[0], "y");
  pd::exec::Executor exec(p);
  for (const int64_t batch : {5, 2, 5, 1}) {
    const Tensor in = ops::uniform({batch, 8, 16, 16}, -1, 1, static_cast<uint64_t>(batch) * 10);
    const Tensor first = ops::conv2d(in, w1, b1, {1, 1}, {1, 1});
    const Tensor want = ops::fused_conv2d(first, w2, b2, first, {1, 1}, {1, 1}, {1, 1}, 1, "relu");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // OpenMP's team asleep (thread_pool.h)
    CHECK(max_abs_diff(exec.run({{"x", in}})[0], want) < 1e-4f);
  }
}

TEST_CASE("executor: bad inputs are refused with what the model expects", "[exec]") {
  ir::Program p = chain();
  pd::exec::Executor exec(p);
  const std::string expects = "x: f32[-1, 256]";
  std::string msg = error_of([&] { exec.run({{"image", pd::ops::zeros({2, 256})}}); });
  CHECK_THAT(msg, Catch::Contains("unknown input 'image'") && Catch::Contains(expects));
  msg = error_of([&] { exec.run({}); });
  CHECK_THAT(msg, Catch::Contains("missing input 'x'") && Catch::Contains(expects));
  msg = error_of([&] { exec.run({{"x", pd::ops::zeros({2, 256}, pd::DType::f64)}}); });
  CHECK_THAT(msg, Catch::Contains("dtype f64") && Catch::Contains(expects));
  msg = error_of([&] { exec.run({{"x", pd::ops::zeros({2, 255})}}); });
  CHECK_THAT(msg, Catch::Contains("shape [2, 255]") && Catch::Contains(expects));
  msg = error_of([&] { exec.run({{"x", pd::ops::zeros({256})}}); });
  CHECK_THAT(msg, Catch::Contains("shape [256]"));
  CHECK(pd::exec::describe_inputs(p) == expects);
}

TEST_CASE("export: the traced program computes what the network computes", "[exec][export]") {
  const char* yaml = R"(
name: small_cnn
inputs:
  image: {shape: [1, 8, 8], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: conv1, type: conv2d, input: image, out_channels: 4, kernel_size: 3, padding: 1}
  - {name: bn1, type: batch_norm}
  - {name: act1, type: relu}
  - {name: conv2, type: conv2d, out_channels: 4, kernel_size: 3, padding: 1}
  - {name: res, type: add, inputs: [conv2, act1]}
  - {name: pool, type: max_pool2d, kernel_size: 2}
  - {type: hardswish}
  - {name: r, type: reshape, shape: [-1]}
  - {type: dropout, p: 0.3}
  - {name: fc, type: linear, out_features: 5}
  - {name: logits, type: op, op: leaky_relu, inputs: [fc], attrs: {alpha: 0.2}}
loss: {input: logits, label: label}
)";
  pd::model::Network net(pd::model::parse_model_yaml(yaml, "small_cnn.yaml"));
  // Non-trivial running statistics, so that eval-mode batch_norm is exercised.
  for (auto& prm : net.params())
    if (prm.name == "bn1.running_var") prm.value.data<float>()[1] = 2.5f;
  ir::Program p = pd::model::to_program(net);
  REQUIRE(p.inputs().size() == 1);
  CHECK(p.value(p.inputs()[0]).type.str() == "f32[-1, 1, 8, 8]");
  REQUIRE(p.output_names() == std::vector<std::string>{"logits"});
  CHECK(p.value(p.outputs()[0]).type.shape == pd::Shape{-1, 5});
  CHECK(p.find("conv1.weight") != ir::kNoValue);
  CHECK(p.params().count("bn1.running_var") == 1);

  // Saved and loaded, it still computes the same.
  const auto dir = std::filesystem::temp_directory_path() / ("pd_export_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  pd::io::save_program((dir / "cnn.pdmodel").string(), p);
  ir::Program loaded = pd::io::load_program((dir / "cnn.pdmodel").string());
  std::filesystem::remove_all(dir);

  for (int64_t batch : {1, 2, 7}) {
    Tensor x = pd::ops::normal({batch, 1, 8, 8}, 0, 1, batch);
    pd::NoGradGuard no_grad;
    Tensor want = net.forward({{"image", x}}, false, 0).at("logits");
    CHECK(max_abs_diff(pd::exec::Executor(p).run({{"image", x}})[0], want) < 1e-5f);
    CHECK(max_abs_diff(pd::exec::Executor(loaded).run({{"image", x}})[0], want) < 1e-5f);
  }
}
