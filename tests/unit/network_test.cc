// The network runner: a batch_norm layer that only a relu layer reads runs as one op (batch_norm with
// fuse_relu), and a relu that only a max_pool2d reads runs after the pooling, when the first layer's
// value is not asked for, with the values and gradients of the two layers in their order; a network
// with wide convolutions keeps them, with their batch_norms, relus and adds, in NHWC, and a residual
// block's batch_norm, add and relu run as one op (batch_norm_add_relu); a decoder's conv2d_transpose and
// upsample layers have torch's shapes, train, and export.
#include <algorithm>
#include <map>

#include "op_api.h"
#include "pd/core/backend.h"
#include "pd/autograd/autograd.h"
#include "pd/exec/executor.h"
#include "pd/model/export.h"
#include "pd/model/network.h"
#include "pd/ops/op_profiler.h"
#include "test_util.h"

using pd::Tensor;
namespace ops = pd::ops;

namespace {

// conv -> bn -> relu (fusable), then conv -> bn2 read by a relu and by the add (not fusable).
const char* kYaml = R"(
inputs:
  image: {shape: [3, 6, 6], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: conv, type: conv2d, input: image, out_channels: 4, kernel_size: 3, padding: 1}
  - {name: bn, type: batch_norm}
  - {name: act, type: relu}
  - {name: conv2, type: conv2d, out_channels: 4, kernel_size: 3, padding: 1}
  - {name: bn2, type: batch_norm}
  - {name: act2, type: relu}
  - {name: sum, type: add, inputs: [act2, bn2]}
  - {name: gap, type: adaptive_avg_pool2d, output_size: 1}
  - {type: flatten}
  - {name: logits, type: linear, out_features: 5}
)";

// conv -> relu -> max_pool2d with windows past the edge (ceil_mode): LeNet's pattern.
const char* kPoolYaml = R"(
inputs:
  image: {shape: [3, 7, 7], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: conv, type: conv2d, input: image, out_channels: 4, kernel_size: 3, padding: 1}
  - {name: act, type: relu}
  - {name: pool, type: max_pool2d, kernel_size: 2, ceil_mode: true}
  - {type: flatten}
  - {name: logits, type: linear, out_features: 5}
)";

// 16-channel convolutions (wide enough for NHWC) on 24x24 maps (Winograd's size), a conv with a bias,
// a residual add, then a strided conv and layers that read NCHW (max_pool2d, then a relu after it).
const char* kWideYaml = R"(
inputs:
  image: {shape: [1, 24, 24], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: stem, type: conv2d, input: image, out_channels: 16, kernel_size: 3, padding: 1, bias: false}
  - {name: stem_bn, type: batch_norm}
  - {name: stem_relu, type: relu}
  - {name: conv1, type: conv2d, out_channels: 16, kernel_size: 3, padding: 1}
  - {name: bn1, type: batch_norm}
  - {name: sum, type: add, inputs: [bn1, stem_relu]}
  - {name: out, type: relu}
  - {name: down, type: conv2d, out_channels: 24, kernel_size: 3, stride: 2, padding: 1}
  - {name: pool, type: max_pool2d, kernel_size: 2}
  - {name: act, type: relu}
  - {name: gap, type: adaptive_avg_pool2d, output_size: 1}
  - {type: flatten}
  - {name: logits, type: linear, out_features: 5}
)";

struct Run {
  Tensor logits;
  std::vector<Tensor> grads;
  int64_t relu_calls = 0;
  std::map<std::string, int64_t> calls;  // per op
};

Run run(pd::model::Network& net, const Tensor& x, bool training, const std::set<std::string>& keep) {
  for (auto& p : net.trainable()) p.value.set_grad(Tensor());
  pd::profiler::profile_reset();
  pd::profiler::set_profiling(true);
  Run r;
  r.logits = net.forward({{"image", x}}, training, 0, keep).at("logits");
  pd::profiler::set_profiling(false);
  for (const auto& s : pd::profiler::profile_snapshot()) r.calls[s.name] = s.calls;
  r.relu_calls = r.calls["relu"];
  pd::backward(ops::sum(ops::mul(r.logits, r.logits)));
  for (auto& p : net.trainable()) r.grads.push_back(p.value.grad().clone());
  return r;
}

}  // namespace

TEST_CASE("network: batch_norm read only by a relu runs fused, with the two layers' values and gradients", "[network]") {
  pd::model::Network net(pd::model::parse_model_yaml(kYaml, "net.yaml"));
  const Tensor x = ops::normal({5, 3, 6, 6}, 0, 1, 7);
  for (bool training : {true, false}) {
    CAPTURE(training);
    const Run plain = run(net, x, training, {});  // every value asked for: nothing fused
    const Run fused = run(net, x, training, {"logits"});
    CHECK(plain.relu_calls == 2);
    CHECK(fused.relu_calls == 1);  // bn2 is read by the add too: its relu stays
    CHECK(pd::test::max_abs_diff(plain.logits, fused.logits) == 0.0f);
    REQUIRE(plain.grads.size() == fused.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) CHECK(pd::test::max_abs_diff(plain.grads[i], fused.grads[i]) <= 1e-6f);
  }
  // Asked for by name, the batch_norm's own value is there, so it is not fused.
  const Run kept = run(net, x, true, {"logits", "bn"});
  CHECK(kept.relu_calls == 2);
}

TEST_CASE("network: a relu read only by a max_pool2d runs after it, with the same values and gradients", "[network]") {
  pd::model::Network net(pd::model::parse_model_yaml(kPoolYaml, "pool.yaml"));
  const Tensor x = ops::normal({4, 3, 7, 7}, 0, 1, 11);
  const Run plain = run(net, x, true, {});
  const Run swapped = run(net, x, true, {"logits"});
  CHECK(pd::test::max_abs_diff(plain.logits, swapped.logits) == 0.0f);
  REQUIRE(plain.grads.size() == swapped.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) CHECK(pd::test::max_abs_diff(plain.grads[i], swapped.grads[i]) == 0.0f);
}

TEST_CASE("network: wide convolutions run in NHWC with their batch_norms, relus and adds, to the same values", "[network]") {
  pd::model::Network net(pd::model::parse_model_yaml(kWideYaml, "wide.yaml"));
  const Tensor x = ops::normal({3, 1, 24, 24}, 0, 1, 5);
  for (bool training : {true, false}) {
    CAPTURE(training);
    const std::map<std::string, Tensor> before = net.state();
    std::map<std::string, Tensor> saved;
    for (const auto& [name, t] : before) saved[name] = t.clone();
    const Run plain = run(net, x, training, {});  // every value asked for: NCHW, nothing fused
    std::map<std::string, Tensor> after_plain;
    for (const auto& [name, t] : net.state()) after_plain[name] = t.clone();
    net.load_state(saved);
    const Run nhwc = run(net, x, training, {"logits"});
    CHECK(plain.calls.count("transpose") == 0);
    CHECK(plain.calls.count("batch_norm_add_relu") == 0);
    REQUIRE(nhwc.calls.count("batch_norm_add_relu") == 1);
    CHECK(nhwc.calls.at("batch_norm_add_relu") == 1);  // bn1, sum, out
    CHECK(nhwc.calls.count("add") == 0);
    // The image in, the strided conv's output out to max_pool2d; NCHW throughout in a build without oneDNN.
    const bool onednn = pd::cpu_backend_built(pd::Backend::onednn);
    CHECK(nhwc.calls.count("transpose") == (onednn ? 1 : 0));
    if (onednn) CHECK(nhwc.calls.at("transpose") == 2);
    // The sums run in other orders: equal to rounding.
    CHECK(pd::test::max_abs_diff(plain.logits, nhwc.logits) <= 1e-4f);
    REQUIRE(plain.grads.size() == nhwc.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      CAPTURE(i);
      CHECK(pd::test::max_abs_diff(plain.grads[i], nhwc.grads[i]) <= 1e-4f);
    }
    for (const auto& [name, t] : net.state()) {  // the running statistics were updated on the same axis
      CAPTURE(name);
      CHECK(pd::test::max_abs_diff(after_plain.at(name), t) <= 1e-5f);
    }
  }
  // A kept NHWC value is given back in NCHW.
  const auto kept = net.forward({{"image", x}}, true, 0, {"logits", "sum"});
  const auto all = net.forward({{"image", x}}, true, 0, {});
  REQUIRE(kept.at("sum").shape() == pd::Shape{3, 16, 24, 24});
  CHECK(pd::test::max_abs_diff(kept.at("sum"), all.at("sum")) <= 1e-4f);
}

TEST_CASE("network: a decoder's conv2d_transpose and upsample layers, torch's shapes and trainable weights", "[network]") {
  const char* yaml = R"(
inputs:
  image: {shape: [3, 8, 8], dtype: f32}
  label: {shape: [], dtype: i64}
network:
  - {name: down, type: conv2d, input: image, out_channels: 6, kernel_size: 3, stride: 2, padding: 1}
  - {name: act, type: relu}
  - {name: up, type: conv2d_transpose, out_channels: 4, kernel_size: 3, stride: 2, padding: 1, output_padding: 1, groups: 2}
  - {name: bigger, type: upsample, scale_factor: 2, mode: bilinear}
  - {name: nearer, type: upsample, size: [5, 7]}
  - {name: smoother, type: upsample, size: [9, 6], mode: bicubic, align_corners: true}
  - {type: flatten}
  - {name: logits, type: linear, out_features: 3}
loss: {input: logits, label: label}
)";
  pd::model::Network net(pd::model::parse_model_yaml(yaml, "decoder.yaml"));
  const Tensor x = ops::normal({2, 3, 8, 8}, 0, 1, 5);
  const auto out = net.forward({{"image", x}}, true, 0, {"up", "bigger", "nearer", "smoother", "logits"});
  CHECK(out.at("up").shape() == pd::Shape{2, 4, 8, 8});  // (4 - 1) * 2 - 2 + 3 + 1
  CHECK(out.at("bigger").shape() == pd::Shape{2, 4, 16, 16});
  CHECK(out.at("nearer").shape() == pd::Shape{2, 4, 5, 7});
  // nn.Upsample(scale_factor=2, mode="bilinear"): torch's half-pixel coordinates with its factor.
  const Tensor want = ops::interpolate(out.at("up"), {16, 16}, {2.0, 2.0}, "bilinear", "pytorch_half_pixel", "floor");
  CHECK(pd::test::max_abs_diff(out.at("bigger"), want) == 0.0f);
  // nn.Upsample(size=(9, 6), mode="bicubic", align_corners=True): torch's a = -0.75 on corner-aligned
  // coordinates.
  const Tensor cubic = ops::interpolate(out.at("nearer"), {9, 6}, {}, "bicubic", "align_corners", "floor");
  CHECK(pd::test::max_abs_diff(out.at("smoother"), cubic) == 0.0f);
  pd::backward(ops::sum(ops::mul(out.at("logits"), out.at("logits"))));
  for (auto& p : net.trainable()) {
    CAPTURE(p.name);
    REQUIRE(p.value.grad().defined());
    CHECK(ops::max(ops::abs(p.value.grad())).item<float>() > 0.0f);  // the transposed conv's weight and bias learn
  }
  // Exported as pd-train writes the model file, the program runs both ops to the same logits.
  pd::NoGradGuard no_grad;
  const pd::ir::Program program = pd::model::to_program(net);
  const Tensor eval = net.forward({{"image", x}}, false, 0, {"logits"}).at("logits");
  const auto ran = pd::exec::Executor(program).run({{program.value(program.inputs()[0]).name, x}});
  CHECK(pd::test::max_abs_diff(ran.at(0), eval) <= 1e-6f);
  const char* both = R"(
inputs:
  image: {shape: [3, 8, 8], dtype: f32}
network:
  - {name: up, type: upsample, input: image, scale_factor: 2, size: [16, 16]}
)";
  CHECK_THROWS_WITH(pd::model::Network(pd::model::parse_model_yaml(both, "both.yaml")), Catch::Contains("exactly one of scale_factor and size"));
}
