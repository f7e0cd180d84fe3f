// Graph passes: each builds a tiny Program, runs one pass, counts ops by type, and runs the original
// and the rewritten program on the same random inputs; a negative case per pass checks that a failed
// precondition leaves the graph untouched.
#include <catch2/catch.hpp>

#include <sstream>

#include "pd/core/cpu_features.h"
#include "pd/exec/executor.h"
#include "pd/ir/pass.h"
#include "test_util.h"
#include "pd/kernels/direct_conv.h"
#include "pd/pd.h"
#include "pd/quant/qdq.h"

using pd::DType;
using pd::ir::Program;
using pd::ir::ValueId;

namespace {

using pd::test::count_ops;

pd::Tensor rnd(const pd::Shape& s, int64_t seed, double lo = -1, double hi = 1) { return pd::ops::uniform(s, lo, hi, seed); }

// Random inputs of the declared shapes (-1 -> 2), the same for every call with the same seed.
std::map<std::string, pd::Tensor> inputs_for(const Program& p, int64_t seed) {
  std::map<std::string, pd::Tensor> in;
  for (ValueId v : p.inputs()) {
    pd::Shape s = p.value(v).type.shape;
    for (auto& d : s) d = d < 0 ? 2 : d;
    in[p.value(v).name] = rnd(s, seed++);
  }
  return in;
}

// Compares the first `only` outputs (all by default).
void check_same_outputs(const Program& before, const Program& after, double tol = 1e-5, size_t only = 1000) {
  auto in = inputs_for(before, 11);
  auto a = pd::exec::Executor(before).run(in);
  auto b = pd::exec::Executor(after).run(in);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < std::min(a.size(), only); ++i) {
    REQUIRE(a[i].shape() == b[i].shape());
    auto x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) REQUIRE(std::abs(x[k] - y[k]) <= tol * (1 + std::abs(x[k])));
  }
}

// Runs one pass on a copy, checks the result verifies, and returns it with its stats.
Program run_pass(const Program& p, const std::string& name, pd::ir::PassStats* stats = nullptr) {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = {name};
  auto report = pd::ir::PassManager(opt).run(q);
  if (stats) *stats = report.at(0);
  return q;
}

// minmax scales and 7-bit weights: the int8 kernels multiply those exactly with or without VNNI, so
// the lowered program matches its QDQ form on both paths (these tests also run under PD_CPU_ISA=avx2:
// [int8_isa]).
pd::quant::QdqOptions minmax() {
  pd::quant::QdqOptions o;
  o.method = pd::quant::Method::minmax;
  o.weight_bits = 7;
  return o;
}

// x -> conv2d(w, bias?) -> [bn] -> act, with knobs for the negative cases.
struct ConvNet {
  bool bias = true, bn = true, bn_training = false, bn_relu = false, extra_user = false, pre_act_output = false;
  bool channels_last = false;  // x, the conv and the batch_norm in NHWC
  std::string act = "relu";
  Program build() const {
    Program p;
    auto x = p.add_input("x", {DType::f32, channels_last ? pd::Shape{-1, 6, 6, 2} : pd::Shape{-1, 2, 6, 6}});
    auto w = p.add_param("conv.weight", rnd({4, 2, 3, 3}, 1));
    std::vector<ValueId> b;
    if (bias) b.push_back(p.add_param("conv.bias", rnd({4}, 2)));
    auto y = p.add_op("conv2d", {{x}, {w}, b}, {{"padding", std::vector<int64_t>{1, 1}}, {"channels_last", channels_last}})[0];
    if (extra_user) p.mark_output(p.add_op("sigmoid", {{y}})[0], "side");
    if (bn) {
      auto s = p.add_param("bn.scale", rnd({4}, 3, 0.5, 1.5)), sh = p.add_param("bn.bias", rnd({4}, 4));
      auto m = p.add_param("bn.mean", rnd({4}, 5)), v = p.add_param("bn.var", rnd({4}, 6, 0.5, 2));
      y = p.add_op("batch_norm", {{y}, {s}, {sh}, {m}, {v}},
                   {{"training", bn_training}, {"fuse_relu", bn_relu}, {"channels_last", channels_last}})[0];
    }
    if (pre_act_output) p.mark_output(y, "pre");
    AttrMap attrs;
    if (act == "leaky_relu") attrs["alpha"] = 0.2;
    p.mark_output(p.add_op(act, {{y}}, attrs)[0], "out");
    return p;
  }
  using AttrMap = pd::AttrMap;
};

}  // namespace

TEST_CASE("pass: dead-code elimination", "[pass]") {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 3}});
  auto a = p.add_op("exp", {{x}})[0];
  p.add_op("tanh", {{p.add_op("relu", {{a}})[0]}});  // a dead chain of two
  auto w = p.add_param("unused.w", rnd({3}, 1));
  p.add_op("mul", {{x}, {w}});
  p.mark_output(p.add_op("sigmoid", {{a}})[0], "y");
  pd::ir::PassStats s;
  Program q = run_pass(p, "dce", &s);
  CHECK(q.ops().size() == 2);
  CHECK(s.removed == 3);
  CHECK(q.params().empty());  // the param only the dead mul read is dropped
  check_same_outputs(p, q);
  // Negative: training-mode batch_norm updates its running statistics, so it is never dead.
  Program t;
  auto tx = t.add_input("x", {DType::f32, {-1, 3}});
  auto bnp = [&](const char* n) { return t.add_param(n, rnd({3}, 7, 0.5, 1.5)); };
  t.add_op("batch_norm", {{tx}, {bnp("s")}, {bnp("b")}, {bnp("m")}, {bnp("v")}});
  t.mark_output(t.add_op("exp", {{tx}})[0], "y");
  CHECK(count_ops(run_pass(t, "dce"), "batch_norm") == 1);
}

TEST_CASE("pass: common-subexpression elimination", "[pass]") {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 3}});
  auto a = p.add_op("softmax", {{x}}, {{"axis", int64_t{1}}})[0];
  auto b = p.add_op("softmax", {{x}}, {{"axis", int64_t{1}}})[0];
  auto c = p.add_op("softmax", {{x}}, {{"axis", int64_t{0}}})[0];  // other attrs: kept
  auto r1 = p.add_op("uniform", {}, {{"shape", std::vector<int64_t>{2, 3}}})[0];
  auto r2 = p.add_op("uniform", {}, {{"shape", std::vector<int64_t>{2, 3}}})[0];  // random: kept
  auto d1 = p.add_op("dropout", {{a}}, {{"p", 0.5}})[0];
  auto d2 = p.add_op("dropout", {{a}}, {{"p", 0.5}})[0];  // training dropout: random, kept
  auto s = p.add_op("add", {{p.add_op("add", {{a}, {b}})[0]}, {c}})[0];
  p.mark_output(s, "y");
  p.mark_output(p.add_op("add", {{r1}, {r2}})[0], "r");
  p.mark_output(p.add_op("add", {{d1}, {d2}})[0], "d");
  Program q = run_pass(p, "cse");
  CHECK(count_ops(q, "softmax") == 2);
  CHECK(count_ops(q, "uniform") == 2);
  CHECK(count_ops(q, "dropout") == 2);
  check_same_outputs(p, q, 1e-5, 1);  // only the deterministic output
}

TEST_CASE("pass: constant folding", "[pass]") {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 4}});
  auto w = p.add_param("w", rnd({4, 3}, 1));
  auto wt = p.add_op("transpose", {{w}}, {{"perm", std::vector<int64_t>{1, 0}}})[0];  // params only: folded
  auto k = p.add_op("full", {}, {{"shape", std::vector<int64_t>{3}}, {"value", 0.5}})[0];  // no inputs: folded
  auto y = p.add_op("linear", {{x}, {wt}, {k}})[0];                                    // reads x: kept
  auto n = p.add_op("normal", {}, {{"shape", std::vector<int64_t>{3}}, {"seed", int64_t{3}}})[0];  // random: kept
  p.mark_output(y, "y");
  p.mark_output(n, "n");
  pd::ir::PassStats s;
  Program q = run_pass(p, "constant_fold", &s);
  CHECK(s.folded == 2);
  CHECK(count_ops(q, "transpose") == 0);
  CHECK(count_ops(q, "full") == 0);
  CHECK(count_ops(q, "normal") == 1);
  CHECK(count_ops(q, "linear") == 1);
  CHECK(q.params().size() == 2);  // the transposed weight and the constant; w itself is dropped
  check_same_outputs(p, q);       // normal has a fixed seed

  // A result too large to store in the model stays an op (found by fuzz_onnx: a ConstantOfShape of
  // 10^15 elements was computed at import time); 2^36 elements here, never allocated.
  Program big;
  auto huge = big.add_op("full", {}, {{"shape", std::vector<int64_t>{1 << 16, 1 << 16, 16}}, {"value", 0.5}})[0];
  big.mark_output(huge, "huge");
  CHECK_FALSE(pd::ir::foldable(big, 0));
  CHECK(count_ops(run_pass(big, "constant_fold"), "full") == 1);
  Program edge;  // 2^26 elements (256 MiB of f32) is the most folding computes
  edge.mark_output(edge.add_op("full", {}, {{"shape", std::vector<int64_t>{1 << 13, 1 << 13}}, {"value", 0.5}})[0], "edge");
  CHECK(pd::ir::foldable(edge, 0));
  Program past;
  past.mark_output(past.add_op("full", {}, {{"shape", std::vector<int64_t>{(1 << 13) + 1, 1 << 13}}, {"value", 0.5}})[0], "past");
  CHECK_FALSE(pd::ir::foldable(past, 0));

  // Integer arithmetic folded at import time wraps around as NumPy's does (fuzz_onnx under UBSan: an
  // int64 Mul of two constants overflowed, which is undefined behaviour in C++).
  Program ints;
  auto a = ints.add_param("a", pd::Tensor::from_vector<int64_t>({INT64_MAX, INT64_MIN, 7}, {3}));
  auto b = ints.add_param("b", pd::Tensor::from_vector<int64_t>({2, 3, 6}, {3}));
  ints.mark_output(ints.add_op("mul", {{a}, {b}})[0], "prod");
  ints.mark_output(ints.add_op("add", {{a}, {b}})[0], "sum");
  const Program folded = run_pass(ints, "constant_fold");
  CHECK(folded.ops().empty());
  CHECK(pd::exec::Executor(folded).run({})[0].to_vector<int64_t>() == std::vector<int64_t>{-2, INT64_MIN, 42});
  CHECK(pd::exec::Executor(folded).run({})[1].to_vector<int64_t>() == std::vector<int64_t>{INT64_MIN + 1, INT64_MIN + 3, 13});
}

TEST_CASE("pass: identity removal", "[pass]") {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 6}});
  auto a = p.add_op("dropout", {{x}}, {{"training", false}})[0];
  auto b = p.add_op("reshape", {{a}}, {{"shape", std::vector<int64_t>{-1, 6}}})[0];
  auto c = p.add_op("cast", {{b}}, {{"dtype", DType::f32}})[0];
  auto d = p.add_op("flatten", {{c}}, {{"start_axis", int64_t{1}}})[0];
  auto e = p.add_op("reshape", {{d}}, {{"shape", std::vector<int64_t>{-1, 2, 3}}})[0];  // changes shape: kept
  auto f = p.add_op("cast", {{e}}, {{"dtype", DType::f64}})[0];                           // changes dtype: kept
  auto g = p.add_op("dropout", {{f}}, {{"p", 0.0}})[0];  // training (default): kept
  p.mark_output(p.add_op("exp", {{g}})[0], "y");
  pd::ir::PassStats s;
  Program q = run_pass(p, "identity_elim", &s);
  CHECK(s.removed == 4);
  CHECK(count_ops(q, "reshape") == 1);
  CHECK(count_ops(q, "cast") == 1);
  CHECK(count_ops(q, "flatten") == 0);
  CHECK(count_ops(q, "dropout") == 1);
  check_same_outputs(p, q);
  // Negative: an eval dropout whose mask is read stays.
  Program m;
  auto mx = m.add_input("x", {DType::f32, {-1, 6}});
  auto outs = m.add_op("dropout", {{mx}}, {{"training", false}});
  m.mark_output(outs[1], "mask");
  CHECK(count_ops(run_pass(m, "identity_elim"), "dropout") == 1);
}

TEST_CASE("pass: batch_norm folding into conv2d and linear", "[pass]") {
  for (bool bias : {true, false}) {
    ConvNet n;
    n.bias = bias;
    Program p = n.build();
    pd::ir::PassStats s;
    Program q = run_pass(p, "bn_fold", &s);
    CHECK(s.fused == 1);
    CHECK(count_ops(q, "batch_norm") == 0);
    CHECK(count_ops(q, "conv2d") == 1);
    CHECK(q.ops()[0].inputs[2].size() == 1);  // a bias was created when absent
    check_same_outputs(p, q, 1e-4);
  }
  Program l;
  auto x = l.add_input("x", {DType::f32, {-1, 5}});
  auto y = l.add_op("linear", {{x}, {l.add_param("w", rnd({3, 5}, 1))}, {}})[0];
  auto bnp = [&](const char* n, int64_t seed) { return l.add_param(n, rnd({3}, seed, 0.5, 1.5)); };
  auto z = l.add_op("batch_norm", {{y}, {bnp("s", 2)}, {bnp("b", 3)}, {bnp("m", 4)}, {bnp("v", 5)}}, {{"training", false}})[0];
  l.mark_output(z, "out");
  Program lq = run_pass(l, "bn_fold");
  CHECK(count_ops(lq, "batch_norm") == 0);
  check_same_outputs(l, lq, 1e-4);
}

TEST_CASE("pass: batch_norm folding refuses unsafe cases", "[pass]") {
  ConvNet two_users;
  two_users.extra_user = true;
  ConvNet training;
  training.bn_training = true;
  ConvNet fused_relu;  // the relu would need an op of its own
  fused_relu.bn_relu = true;
  for (const ConvNet& n : {two_users, training, fused_relu}) {
    Program p = n.build();
    Program q = run_pass(p, "bn_fold");
    CHECK(pd::ir::print(q) == pd::ir::print(p));
  }
  // A weight computed at run time is not a param: nothing to fold into.
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 2, 5, 5}});
  auto wi = p.add_input("w", {DType::f32, {3, 2, 3, 3}});
  auto y = p.add_op("conv2d", {{x}, {wi}, {}})[0];
  auto bnp = [&](const char* n, int64_t seed) { return p.add_param(n, rnd({3}, seed, 0.5, 1.5)); };
  p.mark_output(p.add_op("batch_norm", {{y}, {bnp("s", 2)}, {bnp("b", 3)}, {bnp("m", 4)}, {bnp("v", 5)}}, {{"training", false}})[0], "o");
  CHECK(count_ops(run_pass(p, "bn_fold"), "batch_norm") == 1);
}

TEST_CASE("pass: the NCHW fusions and lowerings leave channels_last conv2d and batch_norm alone", "[pass]") {
  ConvNet with_bn, conv_act;
  with_bn.channels_last = conv_act.channels_last = true;
  conv_act.bn = false;
  for (const ConvNet& n : {with_bn, conv_act}) {
    const Program p = n.build();
    for (const char* pass : {"bn_fold", "conv_act_fuse", "conv_residual_fuse", "conv_pool_fuse", "conv_winograd", "channel_blocking"}) {
      CAPTURE(n.bn, pass);
      CHECK(pd::ir::print(run_pass(p, pass)) == pd::ir::print(p));
    }
  }
}

TEST_CASE("pass: conv2d + activation fusion", "[pass]") {
  for (const char* act : {"relu", "gelu", "silu", "tanh", "sigmoid", "leaky_relu"}) {
    ConvNet n;
    n.bn = false;
    n.act = act;
    Program p = n.build();
    Program q = run_pass(p, "conv_act_fuse");
    CHECK(count_ops(q, "fused_conv2d") == 1);
    CHECK(q.ops().size() == 1);
    check_same_outputs(p, q, 1e-4);
  }
  // Negative: the pre-activation value is a graph output, or has another user.
  ConvNet out;
  out.bn = false;
  out.pre_act_output = true;
  ConvNet other;
  other.bn = false;
  other.extra_user = true;
  for (const ConvNet& n : {out, other}) {
    Program p = n.build();
    CHECK(pd::ir::print(run_pass(p, "conv_act_fuse")) == pd::ir::print(p));
  }
}

TEST_CASE("pass: linear + activation fusion", "[pass]") {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 5}});
  auto h = p.add_op("linear", {{x}, {p.add_param("w1", rnd({4, 5}, 1))}, {p.add_param("b1", rnd({4}, 2))}})[0];
  auto a = p.add_op("gelu", {{h}})[0];
  auto y = p.add_op("linear", {{a}, {p.add_param("w2", rnd({3, 4}, 3))}, {}})[0];
  auto t = p.add_op("tanh", {{y}})[0];
  p.mark_output(t, "out");
  p.mark_output(y, "logits");  // the second activation's input is an output: not fused
  pd::ir::PassStats s;
  Program q = run_pass(p, "linear_act_fuse", &s);
  CHECK(s.fused == 1);
  CHECK(count_ops(q, "fused_linear") == 1);
  CHECK(count_ops(q, "linear") == 1);
  CHECK(count_ops(q, "tanh") == 1);
  check_same_outputs(p, q, 1e-4);
}

// x -> conv(w1) -> relu -> conv(w2) -> add(., shortcut) -> relu: a residual block after bn folding.
Program residual_block(bool projection, bool broadcast_residual = false) {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 4, 6, 6}});
  auto conv = [&](ValueId in, const char* name, int64_t k, int64_t seed) {
    auto w = p.add_param(name, rnd({4, 4, k, k}, seed));
    return p.add_op("conv2d", {{in}, {w}, {}}, {{"padding", std::vector<int64_t>{k / 2, k / 2}}})[0];
  };
  auto h = p.add_op("relu", {{conv(x, "w1", 3, 1)}})[0];
  auto y = conv(h, "w2", 3, 2);
  ValueId shortcut = projection ? conv(x, "proj", 1, 3) : x;
  if (broadcast_residual) shortcut = p.add_param("per_channel", rnd({1, 4, 1, 1}, 4));
  p.mark_output(p.add_op("relu", {{p.add_op("add", {{y}, {shortcut}})[0]}})[0], "out");
  return p;
}

TEST_CASE("pass: conv2d + residual add fusion", "[pass]") {
  for (bool projection : {false, true}) {
    Program p = residual_block(projection);
    pd::ir::PassStats s;
    Program q = run_pass(p, "conv_residual_fuse", &s);
    CHECK(s.fused == 1);
    CHECK(count_ops(q, "add") == 0);
    CHECK(count_ops(q, "fused_conv2d") == 1);
    check_same_outputs(p, q, 1e-4);
    // With the activation fusion after it, the block is two ops: conv+relu, conv+residual+relu
    // (three with a projection shortcut, which stays a plain conv feeding the residual).
    pd::ir::PassOptions opt;
    opt.passes = {"conv_residual_fuse", "conv_act_fuse"};
    Program r = p;
    pd::ir::PassManager(opt).run(r);
    CHECK(r.ops().size() == (projection ? 3u : 2u));
    CHECK(count_ops(r, "relu") == 0);
    CHECK(count_ops(r, "fused_conv2d") == 2);
    check_same_outputs(p, r, 1e-4);
    // The residual goes to the 3x3 conv (a Winograd candidate), not to the 1x1 projection.
    const pd::ir::Operation& last = r.ops().back();
    CHECK(r.value(pd::ir::input_of(r, static_cast<int32_t>(r.ops().size()) - 1, 1)).name == "w2");
    CHECK(pd::ir::input_of(r, static_cast<int32_t>(r.ops().size()) - 1, 3) != pd::ir::kNoValue);
    CHECK(pd::ir::attr_string(last, "activation") == "relu");
  }
  // Negative: a broadcast residual (the fused op needs the output's exact shape), and a conv result
  // that something else reads too.
  Program b = residual_block(false, true);
  CHECK(pd::ir::print(run_pass(b, "conv_residual_fuse")) == pd::ir::print(b));
  Program shared = residual_block(false);
  const ValueId y = shared.ops()[2].results[0];  // the second conv's output
  shared.mark_output(shared.add_op("exp", {{y}})[0], "side");
  CHECK(count_ops(run_pass(shared, "conv_residual_fuse"), "add") == 1);
}

// x [-1, c, 10, 9] -> conv2d(3x3, c -> k, the given attrs) -> [relu]: a candidate for conv_winograd.
Program conv3x3(int64_t c, int64_t k, const pd::AttrMap& attrs, bool weight_is_input = false) {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, c, 10, 9}});
  const pd::Shape ws{k, c / (attrs.count("groups") ? std::get<int64_t>(attrs.at("groups")) : 1), 3, 3};
  auto w = weight_is_input ? p.add_input("w", {DType::f32, ws}) : p.add_param("w", rnd(ws, 1, -0.2, 0.2));
  auto b = p.add_param("b", rnd({k}, 2));
  p.mark_output(p.add_op("conv2d", {{x}, {w}, {b}}, attrs)[0], "out");
  return p;
}

TEST_CASE("pass: conv2d taps that read only padding are cut from the weight", "[pass]") {
  // A 3x3 conv with dilation d and padding d on an h x w map (DeepLabV3's ASPP): where d >= the extent,
  // the outer taps of that axis read only padding.
  const auto aspp = [](int64_t h, int64_t w, std::vector<int64_t> dilation, std::vector<int64_t> padding, bool dynamic = false,
                       std::vector<int64_t> stride = {1, 1}) {
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 4, dynamic ? -1 : h, w}});
    auto wt = p.add_param("w", rnd({6, 4, 3, 3}, 3, -0.5, 0.5));
    p.mark_output(p.add_op("conv2d", {{x}, {wt}, {p.add_param("b", rnd({6}, 4))}},
                           {{"padding", padding}, {"dilation", dilation}, {"stride", stride}})[0],
                  "out");
    return p;
  };
  const auto kernel_of = [](const Program& q) {
    for (const auto& op : q.ops())
      if (op.type == "conv2d") return q.value(op.inputs[1][0]).type.shape;
    return pd::Shape{};
  };
  SECTION("both axes: a 1x1 convolution") {
    Program p = aspp(5, 6, {6, 6}, {6, 6});
    pd::ir::PassStats s;
    Program q = run_pass(p, "conv_tap_trim", &s);
    CHECK(s.fused == 1);
    CHECK(kernel_of(q) == pd::Shape{6, 4, 1, 1});
    check_same_outputs(p, q, 1e-6);
  }
  SECTION("one axis: the wide map keeps its taps") {
    Program p = aspp(5, 12, {6, 6}, {6, 6});
    Program q = run_pass(p, "conv_tap_trim");
    CHECK(kernel_of(q) == pd::Shape{6, 4, 1, 3});
    check_same_outputs(p, q, 1e-6);
  }
  SECTION("left alone: every tap live, a cut that would leave the padding uneven, unknown extents") {
    // Stride 2 on 6 rows at dilation 5: the first tap reads only padding, the last row 5: cut, the
    // padding would be 0 before and 5 after.
    for (const Program& p : {aspp(8, 8, {2, 2}, {2, 2}), aspp(6, 6, {5, 5}, {5, 5}, false, {2, 2}), aspp(5, 6, {6, 6}, {6, 6}, true)}) {
      pd::ir::PassStats s;
      run_pass(p, "conv_tap_trim", &s);
      CHECK(s.fused == 0);
    }
  }
}

TEST_CASE("pass: clip(0, 6) is relu6, which the conv fusion then takes", "[pass]") {
  // ONNX exporters write MobileNet's ReLU6 as Clip(0, 6); other bounds stay a clip.
  Program p = conv3x3(16, 16, {{"padding", std::vector<int64_t>{1, 1}}});
  const ValueId conv = p.outputs()[0];
  auto six = p.add_op("clip", {{conv}}, {{"min", 0.0}, {"max", 6.0}})[0];
  p.mark_output(six, "six");
  p.mark_output(p.add_op("clip", {{conv}}, {{"min", -1.0}, {"max", 6.0}})[0], "other");
  pd::ir::PassStats stats;
  Program q = run_pass(p, "clip_relu6", &stats);
  CHECK(stats.fused == 1);
  CHECK(count_ops(q, "relu6") == 1);
  CHECK(count_ops(q, "clip") == 1);
  check_same_outputs(p, q, 0);  // bit for bit
  Program only;
  auto x = only.add_input("x", {DType::f32, {-1, 16, 10, 9}});
  auto y = only.add_op("conv2d", {{x}, {only.add_param("w", rnd({16, 16, 3, 3}, 1, -0.2, 0.2))}, {}},
                       {{"padding", std::vector<int64_t>{1, 1}}})[0];
  only.mark_output(only.add_op("clip", {{y}}, {{"min", 0.0}, {"max", 6.0}})[0], "six");
  Program fused = run_pass(run_pass(only, "clip_relu6"), "conv_act_fuse");
  CHECK(count_ops(fused, "fused_conv2d") == 1);
  // NaN passes through both: relu6 keeps it as clip does.
  const pd::Tensor nan = pd::Tensor::from_vector<float>({std::numeric_limits<float>::quiet_NaN(), -1.0f, 7.0f, 2.5f}, {4});
  const auto a = pd::ops::clip(nan, 0.0, 6.0).to_vector<float>(), b = pd::ops::relu6(nan).to_vector<float>();
  CHECK(std::isnan(a[0]));
  CHECK(std::isnan(b[0]));
  CHECK(std::vector<float>(a.begin() + 1, a.end()) == std::vector<float>(b.begin() + 1, b.end()));
}

TEST_CASE("pass: x * sigmoid(x) is silu and x * hardsigmoid(x) hardswish, which the conv fusion then takes", "[pass]") {
  // ONNX exporters write EfficientNet's SiLU and (before opset 14) MobileNetV3's HardSwish as products.
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 16, 6, 5}});
  auto y = p.add_op("conv2d", {{x}, {p.add_param("w", rnd({16, 16, 3, 3}, 1, -0.3, 0.3))}, {}},
                    {{"padding", std::vector<int64_t>{1, 1}}})[0];
  auto gate = p.add_op("sigmoid", {{y}})[0];
  p.mark_output(p.add_op("mul", {{gate}, {y}})[0], "silu");  // the gate first
  auto hard = p.add_op("hardsigmoid", {{y}}, {{"alpha", 0.16666667}, {"beta", 0.5}})[0];
  p.mark_output(p.add_op("mul", {{y}, {hard}})[0], "hardswish");
  auto onnx_default = p.add_op("hardsigmoid", {{y}}, {{"alpha", 0.2}, {"beta", 0.5}})[0];
  p.mark_output(p.add_op("mul", {{y}, {onnx_default}})[0], "other_slope");  // not hardswish
  p.mark_output(p.add_op("mul", {{x}, {p.add_op("sigmoid", {{x}})[0]}})[0], "input_silu");
  p.mark_output(p.add_op("mul", {{x}, {p.add_op("sigmoid", {{p.add_op("relu", {{x}})[0]}})[0]}})[0], "other_gate");  // not silu
  pd::ir::PassStats stats;
  Program q = run_pass(run_pass(p, "swish_fuse", &stats), "dce");
  CHECK(stats.fused == 3);
  CHECK(count_ops(q, "silu") == 2);
  CHECK(count_ops(q, "hardswish") == 1);
  CHECK(count_ops(q, "mul") == 2);
  CHECK(count_ops(q, "sigmoid") == 1);
  check_same_outputs(p, q, 1e-6);
  Program only;
  auto xi = only.add_input("x", {DType::f32, {-1, 16, 10, 9}});
  auto conv = only.add_op("conv2d", {{xi}, {only.add_param("w", rnd({16, 16, 3, 3}, 1, -0.2, 0.2))}, {}},
                          {{"padding", std::vector<int64_t>{1, 1}}})[0];
  only.mark_output(only.add_op("mul", {{conv}, {only.add_op("sigmoid", {{conv}})[0]}})[0], "silu");
  Program fused = run_pass(run_pass(run_pass(only, "swish_fuse"), "conv_act_fuse"), "dce");
  CHECK(count_ops(fused, "fused_conv2d") == 1);
  CHECK(fused.ops().size() == 1);
  check_same_outputs(only, fused, 1e-5);
}

TEST_CASE("pass: 3x3 convolutions to Winograd", "[pass]") {
  const pd::AttrMap pad{{"padding", std::vector<int64_t>{1, 1}}};
  if (!pd::cpu_has_avx2_fma()) {  // no AVX2 + FMA (or PD_CPU_ISA=baseline): never fires
    Program p = conv3x3(16, 24, pad);
    CHECK(pd::ir::print(run_pass(p, "conv_winograd")) == pd::ir::print(p));
    return;
  }
  SECTION("conv2d, with and without padding; the transformed weight is a new param") {
    for (const pd::AttrMap& attrs : {pad, pd::AttrMap{}}) {
      Program p = conv3x3(16, 24, attrs);
      pd::ir::PassStats s;
      Program q = run_pass(p, "conv_winograd", &s);
      CHECK(s.folded == 1);
      CHECK(count_ops(q, "winograd_conv2d") == 1);
      CHECK(count_ops(q, "conv2d") == 0);
      CHECK(q.value(q.ops()[0].inputs[1][0]).type.shape == pd::Shape{36, 16, 24});
      check_same_outputs(p, q, 1e-4);
    }
  }
  SECTION("after the fusions: residual and activation carry over") {
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 16, 8, 8}});
    auto w = p.add_param("w", rnd({16, 16, 3, 3}, 1, -0.2, 0.2));
    auto y = p.add_op("conv2d", {{x}, {w}, {}}, pad)[0];
    p.mark_output(p.add_op("relu", {{p.add_op("add", {{y}, {x}})[0]}})[0], "out");
    pd::ir::PassOptions opt;
    opt.passes = {"conv_residual_fuse", "conv_act_fuse", "conv_winograd"};
    Program q = p;
    pd::ir::PassManager(opt).run(q);
    REQUIRE(q.ops().size() == 1);
    CHECK(q.ops()[0].type == "winograd_conv2d");
    CHECK(pd::ir::attr_string(q.ops()[0], "activation") == "relu");
    CHECK(pd::ir::input_of(q, 0, 3) == q.inputs()[0]);  // x is the residual
    check_same_outputs(p, q, 1e-4);
    CHECK(pd::ir::print(pd::ir::parse(pd::ir::print(q))) == pd::ir::print(q));
  }
  SECTION("refused: other kernels, strides, dilations, groups, few channels, a weight that is not a param") {
    auto unchanged = [](const Program& p) { CHECK(pd::ir::print(run_pass(p, "conv_winograd")) == pd::ir::print(p)); };
    unchanged(conv3x3(16, 16, {{"stride", std::vector<int64_t>{2, 2}}}));
    unchanged(conv3x3(16, 16, {{"dilation", std::vector<int64_t>{2, 2}}}));
    unchanged(conv3x3(16, 16, {{"groups", int64_t{2}}}));
    unchanged(conv3x3(1, 32, pad));  // a network's stem: the transforms would cost more than they save
    unchanged(conv3x3(16, 8, pad));
    unchanged(conv3x3(16, 16, pad, true));
    Program five;
    auto x = five.add_input("x", {DType::f32, {-1, 16, 8, 8}});
    five.mark_output(five.add_op("conv2d", {{x}, {five.add_param("w", rnd({16, 16, 5, 5}, 1))}, {}})[0], "out");
    unchanged(five);
  }
}

// x -> conv2d (or fused_conv2d with a residual) -> [relu] -> max_pool2d: LeNet's first block.
struct ConvPoolNet {
  int64_t cout = 6;
  bool relu = true, residual = false, extra_user = false, conv_output = false;
  pd::AttrMap pool = {{"kernel_size", std::vector<int64_t>{2, 2}}};
  Program build() const {
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 1, 12, 12}});
    auto w = p.add_param("conv.weight", rnd({cout, 1, 5, 5}, 1));
    auto b = p.add_param("conv.bias", rnd({cout}, 2));
    const pd::AttrMap attrs = {{"padding", std::vector<int64_t>{2, 2}}};
    ValueId y;
    if (residual) {
      auto r = p.add_input("res", {DType::f32, {-1, cout, 12, 12}});
      y = p.add_op("fused_conv2d", {{x}, {w}, {b}, {r}}, attrs)[0];
    } else {
      y = p.add_op("conv2d", {{x}, {w}, {b}}, attrs)[0];
    }
    if (relu) y = p.add_op("relu", {{y}})[0];
    if (extra_user) p.mark_output(p.add_op("exp", {{y}})[0], "side");
    if (conv_output) p.mark_output(y, "conv");
    p.mark_output(p.add_op("max_pool2d", {{y}}, pool)[0], "out");
    return p;
  }
};

TEST_CASE("pass: conv2d + max_pool2d fusion", "[pass]") {
  pd::ir::PassOptions opt;
  opt.passes = {"conv_act_fuse", "conv_pool_fuse"};
  if (!pd::cpu_has_avx2_fma()) {  // no direct kernel (or PD_CPU_ISA=baseline): never fires
    Program p = ConvPoolNet().build();
    CHECK(pd::ir::print(run_pass(p, "conv_pool_fuse")) == pd::ir::print(p));
    return;
  }
  // conv -> relu -> pool: one op carrying the activation and the pool attributes.
  ConvPoolNet n;
  Program p = n.build();
  Program q = p;
  pd::ir::PassManager(opt).run(q);
  REQUIRE(q.ops().size() == 1);
  const auto& op = q.ops()[0];
  CHECK(op.type == "fused_conv2d_maxpool");
  CHECK(pd::ir::attr_string(op, "activation") == "relu");
  CHECK(pd::ir::attr_ints(op, "pool_kernel_size") == std::vector<int64_t>{2, 2});
  CHECK(pd::ir::attr_ints(op, "padding") == std::vector<int64_t>{2, 2});
  check_same_outputs(p, q, 1e-5);
  // A conv straight into an overlapping, padded, ceil-mode pool.
  ConvPoolNet odd;
  odd.relu = false;
  odd.cout = 5;
  odd.pool = {{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
              {"padding", std::vector<int64_t>{1, 1}}, {"ceil_mode", true}};
  p = odd.build();
  pd::ir::PassStats s;
  q = run_pass(p, "conv_pool_fuse", &s);
  CHECK(s.fused == 1);
  CHECK(count_ops(q, "fused_conv2d_maxpool") == 1);
  CHECK(q.ops().size() == 1);
  check_same_outputs(p, q, 1e-5);

  // Negative: the conv output read twice, or a graph output; a residual (the fused op has none); a
  // conv outside the direct kernel's range (too many output channels: no gain, left alone).
  ConvPoolNet twice, output, residual, wide;
  twice.extra_user = true;
  output.conv_output = true;
  residual.residual = true;
  residual.relu = false;
  wide.cout = pd::kDirectConvMaxCout + 1;
  for (const ConvPoolNet& bad : {twice, output, residual, wide}) {
    Program b = bad.build();
    Program r = b;
    pd::ir::PassManager(opt).run(r);
    CHECK(count_ops(r, "fused_conv2d_maxpool") == 0);
    CHECK(count_ops(r, "max_pool2d") == 1);
  }
}

TEST_CASE("pass: elementwise chain fusion", "[pass]") {
  // A residual block's tail: relu(add(a, b)); then y * sigmoid(y), a chain reading one value twice.
  Program p;
  auto a = p.add_input("a", {DType::f32, {-1, 3, 4}});
  auto b = p.add_input("b", {DType::f32, {-1, 3, 4}});
  auto r = p.add_op("relu", {{p.add_op("add", {{a}, {b}})[0]}})[0];
  auto y = p.add_op("leaky_relu", {{r}}, {{"alpha", 0.25}})[0];
  auto g = p.add_op("mul", {{y}, {p.add_op("sigmoid", {{y}})[0]}})[0];
  p.mark_output(p.add_op("clip", {{g}}, {{"min", -0.5}, {"max", 0.75}})[0], "out");
  pd::ir::PassStats s;
  Program q = run_pass(p, "elementwise_fuse", &s);
  // add, relu, leaky_relu become one op; y has two readers, so mul(y, sigmoid(y)) + clip is another.
  CHECK(q.ops().size() == 2);
  CHECK(count_ops(q, "fused_elementwise") == 2);
  CHECK(s.fused == 4);
  CHECK(pd::ir::print(q).find("expr: \"leaky_relu(relu(add(x0, x1)), 0.25)\"") != std::string::npos);
  CHECK(pd::ir::print(q).find("expr: \"clip(mul(x0, sigmoid(x0)), -0.5, 0.75)\"") != std::string::npos);
  check_same_outputs(p, q);
  // The text form round-trips the fused op and its expression.
  CHECK(pd::ir::print(pd::ir::parse(pd::ir::print(q))) == pd::ir::print(q));
}

TEST_CASE("pass: elementwise chain fusion refuses what does not pay or would change results", "[pass]") {
  auto unchanged = [](const Program& p) { CHECK(pd::ir::print(run_pass(p, "elementwise_fuse")) == pd::ir::print(p)); };
  {  // the intermediate is a graph output
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 4}});
    auto e = p.add_op("exp", {{x}})[0];
    p.mark_output(e, "e");
    p.mark_output(p.add_op("relu", {{e}})[0], "out");
    unchanged(p);
  }
  {  // the intermediate is smaller than the result: fusing would recompute exp per element of x
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 4}});
    auto bias = p.add_param("bias", rnd({4}, 1));
    p.mark_output(p.add_op("add", {{x}, {p.add_op("exp", {{bias}})[0]}})[0], "out");
    unchanged(p);
  }
  {  // mixed dtypes: add promotes f32 + f64, which the fused op would not
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 4}});
    auto d = p.add_input("d", {DType::f64, {-1, 4}});
    p.mark_output(p.add_op("relu", {{p.add_op("add", {{x}, {d}})[0]}})[0], "out");
    unchanged(p);
  }
  {  // a single elementwise op is left alone, and so are non-elementwise neighbours
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 4}});
    p.mark_output(p.add_op("softmax", {{p.add_op("exp", {{x}})[0]}}, {{"axis", int64_t{1}}})[0], "out");
    unchanged(p);
  }
}

TEST_CASE("pass: PassManager levels, selection and report", "[pass]") {
  CHECK(pd::ir::level_passes(0).empty());
  CHECK(pd::ir::level_passes(1) == std::vector<std::string>{"identity_elim", "cse", "dce"});
  CHECK(pd::ir::level_passes(3) == pd::ir::level_passes(2));
  // Levels are portable; lowering passes come after them only when asked for (pd-opt --target).
  CHECK(pd::ir::level_passes(2) == std::vector<std::string>{"identity_elim", "constant_fold", "cse", "bn_fold", "conv_tap_trim", "attention_fuse",
                                                            "layer_norm_fuse", "gelu_fuse", "clip_relu6", "swish_fuse",
                                                            "linear_bias_fuse", "dce"});
  for (const std::string& n : pd::ir::level_passes(2)) CHECK_FALSE(pd::ir::make_pass(n)->lowering());
  CHECK(pd::ir::lowering_passes().back() == "dce");
  CHECK(pd::ir::lowering_passes().size() == pd::ir::pass_names().size() - 11);
  CHECK_THROWS_WITH(pd::ir::make_pass("fuse_everything"), Catch::Contains("valid passes: identity_elim"));
  CHECK_THROWS_WITH(pd::ir::level_passes(4), Catch::Contains("0 to 3"));

  ConvNet n;
  Program p = n.build();
  std::ostringstream dump;
  pd::ir::PassOptions opt;
  opt.level = 2;
  opt.lower = true;
  opt.disable = {"conv_act_fuse"};
  opt.print_after = &dump;
  pd::ir::PassManager pm(opt);
  CHECK(std::find(pm.pipeline().begin(), pm.pipeline().end(), "conv_act_fuse") == pm.pipeline().end());
  Program q = p;
  auto report = pm.run(q);
  CHECK(report.size() == pm.pipeline().size());
  CHECK(count_ops(q, "batch_norm") == 0);
  CHECK(count_ops(q, "relu") == 1);
  CHECK(dump.str().find("// after bn_fold\nprogram {") != std::string::npos);
  const std::string table = pd::ir::format_report(report);
  CHECK(table.find("bn_fold") != std::string::npos);
  CHECK(table.find("total") != std::string::npos);
  check_same_outputs(p, q, 1e-4);

  CHECK(q.target().empty());  // no lowering pass changed it

  opt = {};
  opt.level = 2;
  Program portable = p;
  pd::ir::PassManager(opt).run(portable);
  CHECK(count_ops(portable, "conv2d") == 1);  // bn folded, nothing fused
  CHECK(count_ops(portable, "batch_norm") == 0);
  CHECK(portable.target().empty());
  opt.lower = true;
  opt.target = pd::Target::parse("cpu-avx2");
  Program r = p;
  pd::ir::PassManager(opt).run(r);
  CHECK(r.ops().size() == 1);
  CHECK(count_ops(r, "fused_conv2d") == 1);
  CHECK(r.target() == "cpu-avx2");  // marked: a lowering pass changed it
  check_same_outputs(p, r, 1e-4);
  // Lowering it again for another target is refused; the same target is a no-op.
  opt.target = pd::Target::parse("cpu-avx512");
  CHECK_THROWS_WITH(pd::ir::PassManager(opt).run(r), Catch::Contains("already lowered for cpu-avx2"));
}

TEST_CASE("pass: lowering passes say which targets they support", "[pass]") {
  pd::ir::PassOptions opt;
  opt.lower = true;
  opt.target = pd::Target::parse("cpu-baseline");
  pd::ir::PassManager base(opt);
  // int8_lower needs oneDNN's int8 kernels; the conv rewrites' and packed attention's kernels only pay
  // off with AVX2 + FMA.
  const bool onednn = pd::cpu_backend_built(pd::Backend::onednn);
  const std::vector<std::string> int8 = {"int8_lower", "int8_channels_last"};
  std::vector<std::string> skipped = {"attention_qkv_fuse", "conv_pool_fuse", "channel_blocking", "conv_winograd"};
  if (!onednn) skipped.insert(skipped.begin() + 1, int8.begin(), int8.end());
  CHECK(base.skipped() == skipped);
  opt.target = pd::Target::parse("cpu-avx2");
  std::vector<std::string> without_onednn = int8;
  without_onednn.push_back("channel_blocking");  // oneDNN's blocked convolutions
  CHECK(pd::ir::PassManager(opt).skipped() == (onednn ? std::vector<std::string>{} : without_onednn));
  // The same conv -> relu -> pool block: one op on AVX2, conv + pool left apart on the baseline.
  ConvPoolNet n;
  Program p = n.build(), on_avx2 = p, on_base = p;
  pd::ir::PassManager(opt).run(on_avx2);
  base.run(on_base);
  CHECK(count_ops(on_avx2, "fused_conv2d_maxpool") == 1);
  CHECK(count_ops(on_base, "fused_conv2d_maxpool") == 0);
  CHECK(count_ops(on_base, "fused_conv2d") == 1);
  CHECK(on_base.target() == "cpu-baseline");
  check_same_outputs(p, on_avx2, 1e-5);
  check_same_outputs(p, on_base, 1e-5);
}

TEST_CASE("pass: an activation added to ops.yaml is fused everywhere without pass changes (hardswish)", "[pass]") {
  // conv -> hardswish -> max_pool2d (the direct kernel's lane path on AVX2 hosts), a linear ->
  // hardswish (oneDNN has no exact form: the reference fused kernel runs), and hardswish(add(a, b)).
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 1, 8, 8}});
  auto y = p.add_op("conv2d", {{x}, {p.add_param("w", rnd({4, 1, 3, 3}, 1))}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
  y = p.add_op("hardswish", {{y}})[0];
  y = p.add_op("max_pool2d", {{y}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0];
  y = p.add_op("flatten", {{y}}, {{"start_axis", int64_t{1}}})[0];
  auto h = p.add_op("hardswish", {{p.add_op("linear", {{y}, {p.add_param("fc", rnd({8, 64}, 2))}, {}})[0]}})[0];
  auto z = p.add_op("hardswish", {{p.add_op("add", {{h}, {p.add_param("b", rnd({8}, 3))}})[0]}})[0];
  p.mark_output(z, "out");
  pd::ir::PassOptions opt;
  opt.passes = pd::ir::lowering_passes();
  Program q = p;
  pd::ir::PassManager(opt).run(q);
  CHECK(count_ops(q, "hardswish") == 0);
  CHECK(count_ops(q, pd::cpu_has_avx2_fma() ? "fused_conv2d_maxpool" : "fused_conv2d") == 1);
  CHECK(count_ops(q, "fused_linear") == 1);
  REQUIRE(count_ops(q, "fused_elementwise") == 1);
  for (const auto& op : q.ops())
    if (op.type != "fused_elementwise" && op.attrs.count("activation"))
      CHECK(std::get<std::string>(op.attrs.at("activation")) == "hardswish");
  check_same_outputs(p, q, 1e-5);
}

namespace {

// The largest difference between the first outputs of an f32 program and its int8 lowering on one random
// batch, over the largest f32 output value.
double error_over_range(const Program& f32, const Program& lowered) {
  const auto in = inputs_for(f32, 23);
  const std::vector<double> want = pd::exec::Executor(f32).run(in)[0].to_vector<double>();
  const std::vector<double> got = pd::exec::Executor(lowered).run(in)[0].to_vector<double>();
  double range = 0, err = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    range = std::max(range, std::abs(want[k]));
    err = std::max(err, std::abs(want[k] - got[k]));
  }
  return err / range;
}

}  // namespace

namespace {

// conv -> relu -> conv -> relu -> max_pool -> flatten -> linear (LeNet's shape); the first conv has 2
// input channels, dilated or not.
Program small_cnn_f32(bool dilated) {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 2, 8, 8}});
  const int64_t d = dilated ? 2 : 1;
  auto c1 = p.add_op("conv2d", {{x}, {p.add_param("c1.w", rnd({16, 2, 3, 3}, 1))}, {p.add_param("c1.b", rnd({16}, 2))}},
                     {{"padding", std::vector<int64_t>{d, d}}, {"dilation", std::vector<int64_t>{d, d}}})[0];
  auto r1 = p.add_op("relu", {{c1}})[0];
  auto c2 = p.add_op("conv2d", {{r1}, {p.add_param("c2.w", rnd({6, 16, 3, 3}, 3))}, {p.add_param("c2.b", rnd({6}, 4))}},
                     {{"padding", std::vector<int64_t>{1, 1}}})[0];
  auto r2 = p.add_op("relu", {{c2}})[0];
  auto pool = p.add_op("max_pool2d", {{r2}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0];
  auto flat = p.add_op("flatten", {{pool}}, {{"start_axis", int64_t{1}}})[0];
  p.mark_output(p.add_op("linear", {{flat}, {p.add_param("fc.w", rnd({5, 96}, 5))}, {p.add_param("fc.b", rnd({5}, 6))}})[0], "out");
  return p;
}

}  // namespace

// int8_lower on the QDQ form pd-quant writes: conv -> relu -> max_pool -> flatten -> linear. The first
// conv has 2 input channels and a dilation, which the direct int8 kernel does not take, so it stays f32
// (its weight dequantized, its input's Q/DQ dropped); a 16-channel conv and the linear become int8
// kernels, the quantize after the pool moves up and is requantized into the conv's epilogue, and the
// result stays close to the QDQ program run in f32. Undilated, the 2-channel conv goes int8 as well.
TEST_CASE("pass: int8 lowering of the QDQ form", "[pass][quant][int8_isa]") {
  const bool dilated = GENERATE(true, false);
  const Program p = small_cnn_f32(dilated);
  std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  CHECK(pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax()) == 3);
  pd::ir::PassOptions opt;
  opt.passes = {"conv_act_fuse", "int8_lower", "dce"};
  Program lowered = q;
  pd::ir::PassManager(opt).run(lowered);
  const bool int8 = pd::ir::make_pass("int8_lower")->supports(pd::Target::host());
  if (!int8) {  // a build without oneDNN keeps the QDQ form
    CHECK(count_ops(lowered, "quantized_conv2d") == 0);
    return;
  }
  CHECK(count_ops(lowered, "quantized_conv2d") == (dilated ? 1 : 2));
  CHECK(count_ops(lowered, "quantized_linear") == 1);
  CHECK(count_ops(lowered, "fused_conv2d") == (dilated ? 1 : 0));  // the dilated 2-channel conv, in f32
  CHECK(count_ops(lowered, "dequantize_linear") == 0);
  // One conv's input (the second's when the first stays f32, else the graph input); the pool's moved
  // into the conv, and undilated, the second conv reads the first's requantized output.
  CHECK(count_ops(lowered, "quantize_linear") == 1);
  for (const auto& op : lowered.ops())
    if (op.type == "max_pool2d") CHECK(lowered.value(op.results[0]).type.dtype == DType::u8);
  // Quantization noise apart, the same function: within 5% of the output's range of the f32 model (the
  // dropped input Q/DQ makes the lowered program, if anything, closer to f32 than the QDQ one).
  CHECK(error_over_range(p, lowered) <= 0.05);
}

namespace {

// A residual network (residual_qdq: in the QDQ form pd-quant writes): conv a (relu) -> conv b + x (relu) -> conv c
// (relu) and a 1x1 projection, added (relu) -> [max_pool2d] -> global average pool -> linear. Every
// conv has 4+ input channels, so all become int8 kernels.
Program residual_f32(bool pool) {
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 4, 8, 8}});
  const pd::AttrMap same = {{"padding", std::vector<int64_t>{1, 1}}};
  auto conv = [&](ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t k, int64_t seed, const pd::AttrMap& attrs) {
    return p.add_op("conv2d", {{in}, {p.add_param(name + ".w", rnd({out, in_c, k, k}, seed))}, {p.add_param(name + ".b", rnd({out}, seed + 1))}},
                    attrs)[0];
  };
  auto a = p.add_op("relu", {{conv(x, "a", 4, 4, 3, 1, same)}})[0];
  auto b = p.add_op("relu", {{p.add_op("add", {{conv(a, "b", 4, 4, 3, 3, same)}, {x}})[0]}})[0];
  auto c = p.add_op("relu", {{conv(b, "c", 8, 4, 3, 5, same)}})[0];
  auto d = conv(b, "d", 8, 4, 1, 7, {});
  auto y = p.add_op("relu", {{p.add_op("add", {{conv(c, "e", 8, 8, 3, 9, same)}, {d}})[0]}})[0];
  if (pool) y = conv(p.add_op("max_pool2d", {{y}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0], "f", 8, 8, 3, 11, same);
  y = p.add_op("flatten", {{p.add_op("adaptive_avg_pool2d", {{y}}, {{"output_size", std::vector<int64_t>{1, 1}}})[0]}},
               {{"start_axis", int64_t{1}}})[0];
  p.mark_output(p.add_op("linear", {{y}, {p.add_param("fc.w", rnd({3, 8}, 13))}, {p.add_param("fc.b", rnd({3}, 14))}})[0], "out");
  return p;
}

Program residual_qdq(bool pool) {
  const Program p = residual_f32(pool);
  const std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax());
  return q;
}

Program lowered(const Program& p, bool channels_last) {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = {"conv_residual_fuse", "conv_act_fuse", "int8_lower", "dce"};
  if (channels_last) opt.passes.insert(opt.passes.begin() + 3, "int8_channels_last");
  pd::ir::PassManager(opt).run(q);
  return q;
}

}  // namespace

// int8_channels_last: every int8 conv in NHWC, the transposes between them cancelled, one transpose in
// (the residual block's input is both quantized for a conv and added in f32: one transpose serves
// both) and one out; the same numbers as the NCHW int8 program. A max_pool2d in the region pools in
// NHWC (max_pool2d_nhwc), so the transposes around it cancel too.
TEST_CASE("pass: int8 convolutions in NHWC with the transposes between them cancelled", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_channels_last does not run");
    return;
  }
  for (bool pool : {false, true}) {
    INFO("max_pool2d in the region: " << pool);
    const Program q = residual_qdq(pool), nchw = lowered(q, false), nhwc = lowered(q, true);
    REQUIRE(count_ops(nchw, "quantized_conv2d") == (pool ? 6 : 5));
    CHECK(count_ops(nhwc, "quantized_conv2d") == count_ops(nchw, "quantized_conv2d"));
    for (const auto& op : nhwc.ops())
      if (op.type == "quantized_conv2d") CHECK(std::get<bool>(op.attrs.at("channels_last")));
    CHECK(count_ops(nchw, "transpose") == 0);
    CHECK(count_ops(nhwc, "transpose") == 2);
    CHECK(count_ops(nhwc, "max_pool2d") == 0);
    CHECK(count_ops(nhwc, "max_pool2d_nhwc") == (pool ? 1 : 0));
    CHECK(count_ops(nhwc, "quantize_linear") == count_ops(nchw, "quantize_linear"));
    check_same_outputs(nchw, nhwc, 1e-6);
  }
}

namespace {

// conv2d(in, name.w [out, in_c / groups, k, k], name.b) with padding k / 2, its params seeded from `seed`.
ValueId add_conv(Program& p, ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t k, int64_t groups, int64_t seed) {
  const pd::AttrMap attrs = {{"padding", std::vector<int64_t>{k / 2, k / 2}}, {"groups", groups}};
  return p.add_op("conv2d", {{in}, {p.add_param(name + ".w", rnd({out, in_c, k, k}, seed))}, {p.add_param(name + ".b", rnd({out}, seed + 1))}},
                  attrs)[0];
}

}  // namespace

// A MobileNet stem and block in int8: 3x3 stem of 3 channels (hardswish, MobileNetV3's) -> 1x1 expansion
// (relu6) -> 3x3 depthwise (relu6) -> 1x1 projection. The stem goes to the direct kernel (hardswish is
// one of its epilogues); the depthwise conv has one input channel a group, but oneDNN's depthwise kernel
// takes it in int8, so it is lowered like the others (it stayed f32 between two dequantizes and
// transposes, and relu6 ran the int8 reference kernel: MobileNetV2's int8 model took 50x its f32 time),
// all four NHWC.
TEST_CASE("pass: a MobileNet block's depthwise convolution stays int8", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_lower does not run");
    return;
  }
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 3, 9, 9}});
  auto conv = [&](ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t k, int64_t groups, int64_t seed) {
    return add_conv(p, in, name, out, in_c, k, groups, seed);
  };
  auto y = p.add_op("hardswish", {{conv(x, "stem", 16, 3, 3, 1, 11)}})[0];
  y = p.add_op("relu6", {{conv(y, "expand", 32, 16, 1, 1, 1)}})[0];
  y = p.add_op("relu6", {{conv(y, "depthwise", 32, 1, 3, 32, 3)}})[0];
  p.mark_output(conv(y, "project", 8, 32, 1, 1, 5), "out");
  const std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  CHECK(pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax()) == 4);
  const Program nhwc = lowered(q, true);
  CHECK(count_ops(nhwc, "quantized_conv2d") == 4);
  CHECK(count_ops(nhwc, "fused_conv2d") == 0);
  CHECK(count_ops(nhwc, "conv2d") == 0);
  CHECK(count_ops(nhwc, "dequantize_linear") == 0);
  CHECK(count_ops(nhwc, "transpose") == 1);  // out: the first conv quantizes the f32 input as it reads it
  CHECK(error_over_range(p, nhwc) <= 0.05);
}

// A SqueezeNet fire module in int8: squeeze 1x1 -> expand 1x1 and expand 3x3 -> concat (channels) ->
// max_pool -> the next squeeze. The next squeeze's quantize moves up through the pool and the concat,
// into both expand convolutions' epilogues (requantized to the concat's one scale), and the concat
// joins their NHWC results (axis 3) in u8: no transpose inside the region (the concat in f32 NCHW,
// between transposes and the quantize, took SqueezeNet's int8 model past its f32 time).
TEST_CASE("pass: a fire module's concat joins int8 results in NHWC", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_lower does not run");
    return;
  }
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 16, 9, 9}});
  auto conv = [&](ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t k, int64_t seed) {
    return p.add_op("relu", {{add_conv(p, in, name, out, in_c, k, 1, seed)}})[0];
  };
  auto squeeze = conv(x, "squeeze", 8, 16, 1, 1);
  auto joined = p.add_op("concat", {{conv(squeeze, "e1", 16, 8, 1, 3), conv(squeeze, "e3", 16, 8, 3, 5)}}, {{"axis", int64_t{1}}})[0];
  auto pool = p.add_op("max_pool2d", {{joined}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0];
  p.mark_output(conv(pool, "next", 8, 32, 1, 7), "out");
  const std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  CHECK(pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax()) == 4);
  const Program nhwc = lowered(q, true);
  CHECK(count_ops(nhwc, "quantized_conv2d") == 4);
  CHECK(count_ops(nhwc, "quantize_linear") == 0);
  CHECK(count_ops(nhwc, "max_pool2d_nhwc") == 1);
  CHECK(count_ops(nhwc, "transpose") == 1);  // out of the last convolution
  for (const auto& op : nhwc.ops())
    if (op.type == "concat") {
      CHECK(attr_int(op, "axis") == 3);
      CHECK(nhwc.value(op.results[0]).type.dtype == DType::u8);
    }
  CHECK(count_ops(nhwc, "concat") == 1);
  // The QDQ program's numbers (its quantization noise on this small net is 16% of the output's range
  // with minmax scales): a quantize moved through the concat changes nothing.
  CHECK(error_over_range(q, nhwc) <= 0.01);
  check_same_outputs(lowered(q, false), nhwc, 1e-6);
}

// Two ShuffleNetV2 units in int8: two branches joined by a concat and shuffled (reshape, transpose,
// reshape), the shuffle's halves sliced, one half through a branch and joined to the other again,
// shuffled again into a last convolution. Every read of a shuffle becomes a gather_channels of the
// NHWC results: no concat, reshape, slice or transpose inside the region (in NCHW each unit's transposed
// concat and the shuffle's copy took a quarter of ShuffleNetV2's int8 time), the same numbers.
TEST_CASE("pass: a channel shuffle between int8 convolutions gathers NHWC channels", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_lower does not run");
    return;
  }
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 8, 6, 6}});
  auto conv = [&](ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t seed) {
    return p.add_op("relu", {{add_conv(p, in, name, out, in_c, 1, 1, seed)}})[0];
  };
  auto shuffle = [&](ValueId a, ValueId b) {
    auto joined = p.add_op("concat", {{a, b}}, {{"axis", int64_t{1}}})[0];
    auto split = p.add_op("reshape", {{joined}}, {{"shape", std::vector<int64_t>{-1, 2, 10, 6, 6}}})[0];
    auto swapped = p.add_op("transpose", {{split}}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}})[0];
    return p.add_op("reshape", {{swapped}}, {{"shape", std::vector<int64_t>{-1, 20, 6, 6}}})[0];
  };
  auto half = [&](ValueId v, int64_t start) {
    return p.add_op("slice", {{v}}, {{"axes", std::vector<int64_t>{1}}, {"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{start + 10}}})[0];
  };
  auto first = shuffle(conv(x, "b1", 10, 8, 1), conv(conv(x, "b2a", 10, 8, 3), "b2b", 10, 10, 5));
  auto second = shuffle(half(first, 0), conv(half(first, 10), "u2", 10, 10, 7));
  p.mark_output(conv(second, "last", 4, 20, 9), "out");
  const std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  CHECK(pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax()) == 5);
  const Program nhwc = lowered(q, true);
  CHECK(count_ops(nhwc, "quantized_conv2d") == 5);
  CHECK(count_ops(nhwc, "gather_channels") == 3);  // the first shuffle's two halves, the second shuffle whole
  for (const char* gone : {"concat", "reshape", "slice"}) CHECK(count_ops(nhwc, gone) == 0);
  CHECK(count_ops(nhwc, "transpose") == 2);  // the input, read by two convolutions, into NHWC; out of the last
  CHECK(error_over_range(q, nhwc) <= 0.01);
  check_same_outputs(lowered(q, false), nhwc, 1e-6);
}

// An EfficientNet block's squeeze-and-excitation gate in int8: depthwise conv (silu) -> global average
// pool -> 1x1 (silu) -> 1x1 (sigmoid) -> the gate times the depthwise result -> 1x1 projection. The mul
// of the gate ([N, C, 1, 1]) and a transposed NHWC result runs in NHWC (the gate reshaped to
// [N, 1, 1, C]), so the transposes around it cancel: the large tensors are transposed only on the way
// out and as the view the pool reads (which global_pool_fuse makes an NHWC pool). EfficientNet's int8
// model spent a fifth of its time in these muls on transposed views. The mul and the projection's
// quantize then become one gated_quantize (the product never stored).
TEST_CASE("pass: a squeeze-and-excitation gate multiplies in NHWC", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_lower does not run");
    return;
  }
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 16, 9, 9}});
  auto conv = [&](ValueId in, const std::string& name, int64_t out, int64_t in_c, int64_t k, int64_t groups, int64_t seed) {
    return add_conv(p, in, name, out, in_c, k, groups, seed);
  };
  auto expand = p.add_op("silu", {{conv(x, "expand", 32, 16, 1, 1, 1)}})[0];
  auto dw = p.add_op("silu", {{conv(expand, "dw", 32, 1, 3, 32, 3)}})[0];
  auto squeezed = p.add_op("adaptive_avg_pool2d", {{dw}}, {{"output_size", std::vector<int64_t>{1, 1}}})[0];
  auto gate = p.add_op("sigmoid", {{conv(p.add_op("silu", {{conv(squeezed, "se1", 8, 32, 1, 1, 5)}})[0], "se2", 32, 8, 1, 1, 7)}})[0];
  auto scaled = p.add_op("mul", {{gate}, {dw}})[0];
  p.mark_output(conv(scaled, "project", 16, 32, 1, 1, 9), "out");
  const std::vector<std::map<std::string, pd::Tensor>> batches = {inputs_for(p, 21), inputs_for(p, 22)};
  Program q = p;
  pd::quant::insert_qdq(q, pd::quant::calibrate(p, batches), minmax());
  const Program nhwc = lowered(q, true);
  CHECK(count_ops(nhwc, "quantized_conv2d") == 5);
  CHECK(count_ops(nhwc, "mul") == 0);
  CHECK(count_ops(nhwc, "gated_quantize") == 1);
  for (const auto& op : nhwc.ops()) {
    const pd::Shape& s = nhwc.value(op.results[0]).type.shape;
    if (op.type == "gated_quantize") CHECK(s == pd::Shape{-1, 9, 9, 32});
    if (op.type != "transpose" || s[2] == 1 || s[1] == 16) continue;  // the gate ([N, C, 1, 1]), the way out
    for (int32_t r : nhwc.users(op.results[0])) CHECK(nhwc.ops()[r].type == "adaptive_avg_pool2d");  // a view to pool
  }
  CHECK(error_over_range(q, nhwc) <= 0.01);
  check_same_outputs(lowered(q, false), nhwc, 1e-5);
}

// LeNet's int8 tail: conv (NHWC) -> max_pool -> flatten -> linear. The pool runs in NHWC and the
// linear reads the NHWC pixels flattened, its weight's columns permuted to match: no transpose after
// the last conv, and the same numbers as the NCHW int8 program.
TEST_CASE("pass: an int8 pool and flatten into a linear stay NHWC", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_channels_last does not run");
    return;
  }
  const Program p = small_cnn_f32(false);
  Program q = p;
  pd::quant::insert_qdq(q, pd::quant::calibrate(p, {inputs_for(p, 21), inputs_for(p, 22)}), minmax());
  const Program nchw = lowered(q, false), nhwc = lowered(q, true);
  REQUIRE(count_ops(nchw, "quantized_linear") == 1);
  CHECK(count_ops(nhwc, "max_pool2d_nhwc") == 1);
  CHECK(count_ops(nhwc, "max_pool2d") == 0);
  CHECK(count_ops(nhwc, "transpose") == 0);  // the first conv reads the f32 image itself (quantize_x)
  CHECK(count_ops(nhwc, "quantize_linear") == 0);
  for (const auto& op : nhwc.ops())
    if (op.type == "flatten") CHECK(nhwc.ops()[nhwc.value(op.inputs[0][0]).producer].type == "max_pool2d_nhwc");
  check_same_outputs(nchw, nhwc, 1e-6);
}

// LeNet's shape in int8: conv(1 -> 6) -> relu -> pool -> conv(6 -> 16) -> relu -> pool -> linear. On
// AVX-512 VNNI and AVX2 the one-channel conv is lowered to int8 (pixel lanes) and conv_pool_fuse makes
// each conv and its pool one quantized_conv2d_maxpool, pooling the sums: the same bytes as the two
// kernels in turn. Without AVX2 the first conv stays f32 and nothing int8 is fused (the fused op would
// run the same two kernels).
TEST_CASE("pass: int8 conv and max pool fused into quantized_conv2d_maxpool", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: the int8 passes do not run");
    return;
  }
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, 1, 12, 12}});
  auto conv = [&](ValueId in, const char* name, int64_t cin, int64_t cout, int64_t k, int64_t pad, int64_t seed) {
    auto c = p.add_op("conv2d", {{in}, {p.add_param(std::string(name) + ".w", rnd({cout, cin, k, k}, seed))},
                                 {p.add_param(std::string(name) + ".b", rnd({cout}, seed + 1))}},
                      {{"padding", std::vector<int64_t>{pad, pad}}})[0];
    return p.add_op("max_pool2d", {{p.add_op("relu", {{c}})[0]}}, {{"kernel_size", std::vector<int64_t>{2, 2}}})[0];
  };
  auto y = conv(conv(x, "c1", 1, 6, 5, 2, 1), "c2", 6, 16, 3, 1, 3);
  auto flat = p.add_op("flatten", {{y}}, {{"start_axis", int64_t{1}}})[0];
  p.mark_output(p.add_op("linear", {{flat}, {p.add_param("fc.w", rnd({5, 144}, 5))}, {p.add_param("fc.b", rnd({5}, 6))}})[0], "out");
  Program q = p;
  pd::quant::insert_qdq(q, pd::quant::calibrate(p, {inputs_for(p, 21), inputs_for(p, 22)}), minmax());
  pd::ir::PassOptions opt;
  opt.passes = {"conv_act_fuse", "int8_lower", "int8_channels_last", "dce"};
  Program unfused = q;
  pd::ir::PassManager(opt).run(unfused);
  opt.passes.insert(opt.passes.begin() + 3, "conv_pool_fuse");
  Program fused = q;
  pd::ir::PassManager(opt).run(fused);
  const bool direct = pd::cpu_has_avx2_fma();  // the direct kernels (pixel lanes for the first conv): AVX2 or VNNI
  CHECK(count_ops(unfused, "quantized_conv2d") == (direct ? 2 : 1));
  CHECK(count_ops(fused, "quantized_conv2d_maxpool") == (direct ? 2 : 0));
  CHECK(count_ops(fused, "quantized_conv2d") == (direct ? 0 : 1));
  CHECK(count_ops(fused, "max_pool2d_nhwc") == (direct ? 0 : 1));
  check_same_outputs(unfused, fused, 0.0);
}

// pd-quant quantizes the residual operand of each add that folds into a quantized conv (x for block b,
// the 1x1 projection d for e), as onnxruntime quantizes both inputs of an Add: int8_lower then hands the
// conv its residual in u8 with that scale and zero point, and a block's conv requantizes its own result,
// so only the graph input and the pooled features are quantized from f32. Noise apart, the same function.
TEST_CASE("pass: a quantized residual keeps the residual block in int8", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_lower")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_lower does not run");
    return;
  }
  const Program q = residual_qdq(false);
  int residual_adds = 0;
  for (const auto& op : q.ops())
    if (op.type == "add") {
      residual_adds += 1;
      const int dq = (q.value(op.inputs[0][0]).producer >= 0 && q.ops()[q.value(op.inputs[0][0]).producer].type == "dequantize_linear") +
                     (q.value(op.inputs[1][0]).producer >= 0 && q.ops()[q.value(op.inputs[1][0]).producer].type == "dequantize_linear");
      CHECK(dq == 1);  // the residual operand dequantized, the conv's result as it is
    }
  CHECK(residual_adds == 2);
  for (bool channels_last : {false, true}) {
    INFO("channels_last: " << channels_last);
    const Program low = lowered(q, channels_last);
    int with_residual = 0;
    for (const auto& op : low.ops()) {
      if (op.type != "quantized_conv2d" || op.inputs[6].empty()) continue;
      with_residual += 1;
      CHECK(low.value(op.inputs[6][0]).type.dtype == DType::u8);
      CHECK(!op.inputs[7].empty());  // its scale
    }
    CHECK(with_residual == 2);
    CHECK(count_ops(low, "quantize_linear") == 2);  // x and the pooled features: every conv requantizes
    CHECK(count_ops(low, "dequantize_linear") == 0);
    CHECK(error_over_range(residual_f32(false), low) <= 0.05);
  }
}

// What must stop a transpose: a per-channel quantization (its axis names the NCHW channel), a value
// that is also a graph output, an op that is not elementwise (softmax over the channels).
TEST_CASE("pass: int8_channels_last leaves transposes where moving them would change results", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_channels_last does not run");
    return;
  }
  Program p;
  auto s = p.add_param("s", pd::Tensor::scalar<float>(0.05f));
  auto z = p.add_param("z", pd::Tensor::scalar<uint8_t>(3));
  auto x = p.add_op("quantize_linear", {{p.add_input("x", {DType::f32, {-1, 4, 5, 5}})}, {s}, {z}}, {{"dtype", pd::AttrValue(DType::u8)}})[0];
  auto conv = [&](ValueId in, int64_t seed, DType out) {
    pd::AttrMap attrs = {{"padding", std::vector<int64_t>{1, 1}}, {"out_dtype", pd::AttrValue(out)}};
    std::vector<std::vector<ValueId>> ins = {{in}, {s}, {z}, {p.add_param(fmt::format("w{}", seed), pd::ops::cast(rnd({4, 4, 3, 3}, seed, -60, 60), DType::i8))},
                                             {p.add_param(fmt::format("ws{}", seed), rnd({4}, seed + 1, 0.01, 0.02))}, {}, {}, {}, {}, {}, {}};
    if (out != DType::f32) ins[9] = {s}, ins[10] = {z};
    return p.add_op("quantized_conv2d", ins, attrs)[0];
  };
  auto y1 = conv(x, 1, DType::f32);  // read by a per-channel quantize, then by a conv
  auto per_channel = p.add_op("quantize_linear", {{y1}, {p.add_param("pcs", rnd({4}, 3, 0.05, 0.1))}, {p.add_param("pcz", pd::Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {4}))}},
                              {{"dtype", pd::AttrValue(DType::u8)}})[0];
  auto y2 = conv(per_channel, 5, DType::u8);
  p.mark_output(y2, "y2");  // a graph output inside the region
  auto y3 = conv(y2, 7, DType::f32);
  p.mark_output(p.add_op("softmax", {{y3}}, {{"axis", int64_t{1}}})[0], "probs");
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = {"int8_channels_last", "dce"};
  pd::ir::PassManager(opt).run(q);
  for (const auto& op : q.ops())
    if (op.type == "quantized_conv2d") CHECK(std::get<bool>(op.attrs.at("channels_last")));
  // x goes to NHWC after its quantize (u8); y1 goes back to NCHW for the per-channel quantize, whose result goes to NHWC for the next conv;
  // y2 is an output (NCHW) and read by a conv (NHWC: taken before the transpose); softmax reads NCHW.
  CHECK(count_ops(q, "transpose") == 4);  // y1, per_channel, y2, y3 (x's quantize is read by its conv)
  check_same_outputs(p, q, 1e-6);
}

// The region's entry: quantize_linear -> transpose to NHWC -> quantized_conv2d becomes one
// quantized_conv2d{quantize_x} reading the f32 NCHW input, only when nothing else reads the quantized
// value and the conv dequantizes with the quantize's own scale and zero point.
TEST_CASE("pass: the int8 region's entry quantize is read by the first convolution", "[pass][quant][int8_isa]") {
  if (!pd::ir::make_pass("int8_channels_last")->supports(pd::Target::host())) {
    WARN("no oneDNN int8 kernels in this build: int8_channels_last does not run");
    return;
  }
  enum class Case { plain, quantized_is_output, other_scale };
  for (Case c : {Case::plain, Case::quantized_is_output, Case::other_scale}) {
    INFO("case " << static_cast<int>(c));
    Program p;
    auto s = p.add_param("s", pd::Tensor::scalar<float>(0.02f));
    auto z = p.add_param("z", pd::Tensor::scalar<uint8_t>(100));
    auto s2 = p.add_param("s2", pd::Tensor::scalar<float>(0.03f));
    auto x = p.add_op("quantize_linear", {{p.add_input("x", {DType::f32, {-1, 3, 6, 7}})}, {s}, {z}}, {{"dtype", pd::AttrValue(DType::u8)}})[0];
    if (c == Case::quantized_is_output) p.mark_output(x, "xq");
    auto w = p.add_param("w", pd::ops::cast(rnd({4, 3, 3, 3}, 11, -60, 60), DType::i8));
    auto ws = p.add_param("ws", rnd({4}, 12, 0.01, 0.02));
    auto y = p.add_op("quantized_conv2d", {{x}, {c == Case::other_scale ? s2 : s}, {z}, {w}, {ws}, {}, {}, {}, {}, {}, {}},
                      {{"padding", std::vector<int64_t>{1, 1}}, {"activation", pd::AttrValue(std::string("relu"))}})[0];
    p.mark_output(y, "y");
    Program q = p;
    pd::ir::PassOptions opt;
    opt.passes = {"int8_channels_last", "dce"};
    pd::ir::PassManager(opt).run(q);
    const bool fused = c == Case::plain;
    CHECK(count_ops(q, "quantize_linear") == (fused ? 0 : 1));
    CHECK(count_ops(q, "transpose") == (fused ? 1 : 2));  // the result back to NCHW; the input's unless fused
    for (const auto& op : q.ops())
      if (op.type == "quantized_conv2d") {
        CHECK(std::get<bool>(op.attrs.at("channels_last")));
        CHECK(op.attrs.count("quantize_x") == (fused ? 1u : 0u));
        if (fused) CHECK(q.value(op.inputs[0][0]).type.dtype == DType::f32);
      }
    check_same_outputs(p, q, 1e-6);
  }
}

namespace {

// x [-1, cin, hw, hw] -> conv 3x3 (cin -> c) relu -> conv 3x3 stride 2 (c -> 2c) + a 1x1 stride-2
// projection of the first conv's output -> relu: a residual block, a chain of three convolutions after
// conv_residual_fuse and conv_act_fuse. `c1`, when given, replaces the first conv's output channels.
Program residual_chain(int64_t cin, int64_t c, int64_t c1 = 0, bool side_output = false, int64_t hw = 10) {
  const int64_t k1 = c1 > 0 ? c1 : c;
  Program p;
  auto x = p.add_input("x", {DType::f32, {-1, cin, hw, hw}});
  auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t k, int64_t stride, int64_t seed) {
    auto w = p.add_param(p.unique_name("w"), rnd({co, ci, k, k}, seed, -0.3, 0.3));
    auto b = p.add_param(p.unique_name("b"), rnd({co}, seed + 1));
    const std::vector<int64_t> pad(2, k / 2), st(2, stride);
    return p.add_op("conv2d", {{in}, {w}, {b}}, {{"padding", pad}, {"stride", st}})[0];
  };
  auto a = p.add_op("relu", {{conv(x, cin, k1, 3, 1, 1)}})[0];
  if (side_output) p.mark_output(p.add_op("sigmoid", {{a}})[0], "side");
  auto main = conv(a, k1, 2 * c, 3, 2, 3), proj = conv(a, k1, 2 * c, 1, 2, 5);
  p.mark_output(p.add_op("relu", {{p.add_op("add", {{main}, {proj}})[0]}})[0], "out");
  return p;
}

Program blocked_for(const Program& p, const std::string& target, pd::ir::PassStats* stats = nullptr, bool winograd = false,
                    int64_t batch_hint = 1) {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.batch_hint = batch_hint;
  opt.passes = {"conv_residual_fuse", "conv_act_fuse", "channel_blocking"};
  if (winograd) opt.passes.push_back("conv_winograd");
  opt.target = pd::Target::parse(target);
  auto report = pd::ir::PassManager(opt).run(q);
  if (stats) *stats = report[2];
  return q;
}

bool blocking_runs_here() {
  return pd::cpu_has_avx2_fma() && pd::cpu_backend_built(pd::Backend::onednn);
}

}  // namespace

TEST_CASE("pass: chains of convolutions run on channel blocks", "[pass]") {
  if (!blocking_runs_here()) {
    WARN("channel_blocking needs oneDNN and AVX2: skipped");
    return;
  }
  const bool avx512 = pd::cpu_has_avx512();
  const std::string wide = avx512 ? "cpu-avx512" : "cpu-avx2";
  const int64_t block = avx512 ? 16 : 8;
  SECTION("a residual block: reorders only at its edges") {
    Program p = residual_chain(16, 16);
    pd::ir::PassStats s;
    Program q = blocked_for(p, wide, &s);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    CHECK(count_ops(q, "conv2d") + count_ops(q, "fused_conv2d") == 0);
    CHECK(count_ops(q, "to_channel_blocks") == 1);    // x, once
    CHECK(count_ops(q, "from_channel_blocks") == 1);  // the output, once
    CHECK(s.fused == 3);
    for (const auto& op : q.ops())
      if (op.type == "blocked_conv2d") CHECK(std::get<int64_t>(op.attrs.at("block")) == block);
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("the block follows the target: 8 lanes for AVX2") {
    Program q = blocked_for(residual_chain(16, 16), "cpu-avx2");
    REQUIRE(count_ops(q, "blocked_conv2d") == 3);
    CHECK(q.value(q.ops().back().results[0]).type.shape.size() == 4);
    for (const auto& op : q.ops())
      if (op.type == "blocked_conv2d") CHECK(std::get<int64_t>(op.attrs.at("block")) == 8);
    check_same_outputs(residual_chain(16, 16), q, 1e-4);
  }
  SECTION("an image input is read plain by the first convolution") {
    Program p = residual_chain(3, 16);
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    CHECK(count_ops(q, "to_channel_blocks") == 0);
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("a reader outside the chain gets the plain tensor") {
    Program p = residual_chain(16, 16, 0, true);
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    CHECK(count_ops(q, "from_channel_blocks") == 2);  // for the sigmoid, and the output
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("channels that are not whole blocks are padded with zero lanes, as oneDNN pads them") {
    // 16 -> 12 -> 24 channels: 12 takes one block of 16 (AVX-512) or two of 8, 24 two of 16 or three of 8.
    Program p = residual_chain(16, 12, 12);
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    CHECK(count_ops(q, "conv2d") + count_ops(q, "fused_conv2d") == 0);
    for (const auto& op : q.ops())
      if (op.type == "blocked_conv2d") {
        const int64_t cout = q.value(op.inputs[1][0]).type.shape[0];
        CHECK(q.value(op.results[0]).type.shape[1] == (cout + block - 1) / block);
      }
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("a map narrower than one block is read plain by the convolutions after it") {
    // 16 -> 6 -> 12 channels: on blocks the 6-channel map is one partly filled block, for which oneDNN 2.6
    // has no jit convolution (its reference kernel ran instead); read plain, its first-layer kernel.
    Program p = residual_chain(16, 6, 6);
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    int64_t plain_inputs = 0;
    for (const auto& op : q.ops())
      if (op.type == "blocked_conv2d") plain_inputs += q.value(op.inputs[0][0]).type.shape.size() == 4;
    CHECK(plain_inputs == 2);  // the stride-2 conv and the projection; the first reads x in blocks
    CHECK(count_ops(q, "from_channel_blocks") == 2);  // the narrow map for them, and the output
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("a squeeze-excitation's gate scales the blocks, and the chain goes on through it") {
    // conv -> relu -> (global pool -> 1x1 conv -> sigmoid) -> mul -> conv: EfficientNet's and MobileNetV3's.
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 16, 8, 8}});
    auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t k, int64_t seed) {
      return p.add_op("conv2d", {{in}, {p.add_param(p.unique_name("w"), rnd({co, ci, k, k}, seed, -0.3, 0.3))},
                                 {p.add_param(p.unique_name("b"), rnd({co}, seed + 1))}},
                      {{"padding", std::vector<int64_t>(2, k / 2)}})[0];
    };
    auto a = p.add_op("relu", {{conv(x, 16, 24, 3, 1)}})[0];
    auto pooled = p.add_op("adaptive_avg_pool2d", {{a}}, {{"output_size", std::vector<int64_t>{1, 1}}})[0];
    auto gate = p.add_op("sigmoid", {{conv(pooled, 24, 24, 1, 3)}})[0];
    p.mark_output(conv(p.add_op("mul", {{gate}, {a}})[0], 24, 16, 1, 5), "out");  // the gate first
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "scale_channel_blocks") == 1);
    CHECK(count_ops(q, "mul") == 0);
    CHECK(count_ops(q, "blocked_conv2d") == 2);  // the two on the map (24 channels: padded on AVX-512)
    CHECK(count_ops(q, "from_channel_blocks") == 2);  // for the pool, and the output
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("a concat along the channels of whole blocks joins the blocks, and the chain goes on") {
    // SqueezeNet's fire module: a squeeze conv, two expand convs (1x1 and 3x3) concatenated, a pool, a conv.
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 16, 9, 9}});
    auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t k, int64_t seed) {
      return p.add_op("relu", {{p.add_op("conv2d", {{in}, {p.add_param(p.unique_name("w"), rnd({co, ci, k, k}, seed, -0.3, 0.3))},
                                                    {p.add_param(p.unique_name("b"), rnd({co}, seed + 1))}},
                                         {{"padding", std::vector<int64_t>(2, k / 2)}})[0]}})[0];
    };
    auto squeeze = conv(x, 16, 16, 1, 1);
    auto joined = p.add_op("concat", {{conv(squeeze, 16, 16, 1, 3), conv(squeeze, 16, 32, 3, 5)}}, {{"axis", int64_t{1}}})[0];
    auto pooled = p.add_op("max_pool2d", {{joined}}, {{"kernel_size", std::vector<int64_t>{3, 3}},
                                                      {"stride", std::vector<int64_t>{2, 2}}, {"ceil_mode", true}})[0];
    p.mark_output(conv(pooled, 48, 16, 1, 7), "out");
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 4);
    CHECK(count_ops(q, "max_pool2d_nhwc") == 1);
    CHECK(count_ops(q, "from_channel_blocks") == 1);  // the output only
    for (const auto& op : q.ops())
      if (op.type == "concat") CHECK(q.value(op.results[0]).type.shape.size() == 5);
    check_same_outputs(p, q, 1e-4);
    // 24 channels are not whole blocks of 16: on AVX-512 that concat stays plain, between reorders.
    if (avx512) {
      Program r;
      auto y = r.add_input("y", {DType::f32, {-1, 16, 6, 6}});
      auto c1 = r.add_op("conv2d", {{y}, {r.add_param("w1", rnd({24, 16, 1, 1}, 1))}, {}}, {})[0];
      auto c2 = r.add_op("conv2d", {{y}, {r.add_param("w2", rnd({24, 16, 1, 1}, 2))}, {}}, {})[0];
      auto cat = r.add_op("concat", {{c1, c2}}, {{"axis", int64_t{1}}})[0];
      r.mark_output(r.add_op("conv2d", {{cat}, {r.add_param("w3", rnd({16, 48, 1, 1}, 3))}, {}}, {})[0], "out");
      Program rq = blocked_for(r, wide);
      for (const auto& op : rq.ops())
        if (op.type == "concat") CHECK(rq.value(op.results[0]).type.shape.size() == 4);
      check_same_outputs(r, rq, 1e-4);
    }
  }
  SECTION("a channel shuffle of a concat and slices of it gather channel blocks (ShuffleNet's unit)") {
    // Two units of h + h channels. Each unit concatenates its input's first half with its branch's
    // result, shuffles the 2h channels in 2 groups and splits them again; the second shuffle is read whole
    // (a stride-2 unit's two branches, or the network's last conv). h = 20: halves that are not whole
    // blocks; h = 16: whole blocks, whose concat must not be converted apart from its shuffle.
    for (int64_t h : {20, 16}) {
      INFO("halves of " << h << " channels");
      Program p;
      auto x = p.add_input("x", {DType::f32, {-1, 16, 6, 7}});
      auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t seed) {
        return p.add_op("relu", {{p.add_op("conv2d", {{in}, {p.add_param(p.unique_name("w"), rnd({co, ci, 1, 1}, seed, -0.3, 0.3))},
                                                      {p.add_param(p.unique_name("b"), rnd({co}, seed + 1))}},
                                           {})[0]}})[0];
      };
      const auto shuffle = [&](ValueId a, ValueId b) {
        auto joined = p.add_op("concat", {{a, b}}, {{"axis", int64_t{1}}})[0];
        auto groups = p.add_op("reshape", {{joined}}, {{"shape", std::vector<int64_t>{-1, 2, h, 6, 7}}})[0];
        auto swapped = p.add_op("transpose", {{groups}}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}})[0];
        return p.add_op("reshape", {{swapped}}, {{"shape", std::vector<int64_t>{-1, 2 * h, 6, 7}}})[0];
      };
      const auto half = [&](ValueId v, int64_t start) {
        return p.add_op("slice", {{v}}, {{"axes", std::vector<int64_t>{1}}, {"starts", std::vector<int64_t>{start}},
                                         {"ends", std::vector<int64_t>{start + h}}})[0];
      };
      auto first = shuffle(conv(x, 16, h, 1), conv(conv(x, 16, h, 3), h, h, 5));
      auto second = shuffle(half(first, 0), conv(half(first, h), h, h, 7));
      p.mark_output(conv(second, 2 * h, 16, 9), "out");
      Program q = blocked_for(p, wide);
      CHECK(count_ops(q, "gather_channel_blocks") == 3);  // the first shuffle's two halves, the second whole
      CHECK(count_ops(q, "blocked_conv2d") == 5);
      for (const char* gone : {"concat", "reshape", "transpose", "slice"}) {
        INFO(gone);
        CHECK(count_ops(q, gone) == 0);
      }
      CHECK(count_ops(q, "to_channel_blocks") == 1);    // the input only
      CHECK(count_ops(q, "from_channel_blocks") == 1);  // the output only
      check_same_outputs(p, q, 1e-4);
      // A shuffle that is also a graph output keeps its plain form for it.
      p.mark_output(second, "shuffled");
      Program r = blocked_for(p, wide);
      CHECK(count_ops(r, "gather_channel_blocks") == 3);
      CHECK(count_ops(r, "from_channel_blocks") == 2);
      check_same_outputs(p, r, 1e-4);
    }
  }
  SECTION("grouped convolutions join when each group's channels are whole blocks, or two groups of 8 a block of 16") {
    // conv 16 -> 32, a 3x3 conv in `groups` groups, conv 32 -> 16: RegNet's and ResNeXt's bottleneck.
    const auto grouped_chain = [&](int64_t groups) {
      Program p;
      auto x = p.add_input("x", {DType::f32, {-1, 16, 7, 7}});
      auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t k, int64_t g, int64_t seed) {
        return p.add_op("relu", {{p.add_op("conv2d", {{in}, {p.add_param(p.unique_name("w"), rnd({co, ci / g, k, k}, seed, -0.3, 0.3))},
                                                      {p.add_param(p.unique_name("b"), rnd({co}, seed + 1))}},
                                           {{"padding", std::vector<int64_t>(2, k / 2)}, {"groups", g}})[0]}})[0];
      };
      p.mark_output(conv(conv(conv(x, 16, 32, 1, 1, 1), 32, 32, 3, groups, 3), 32, 16, 1, 1, 5), "out");
      return p;
    };
    for (int64_t groups : {2, 4}) {  // 16 or 8 channels a group
      Program p = grouped_chain(groups);
      Program q = blocked_for(p, wide);
      const bool whole = (32 / groups) % block == 0, halves = block == 16 && 32 / groups == 8;  // grouped_conv's kernel
      CHECK(count_ops(q, "blocked_conv2d") == (whole || halves ? 3 : 0));
      check_same_outputs(p, q, 1e-4);
    }
    // Groups of 8 with a residual: grouped_conv's kernel does not take it, and it stays plain.
    if (block == 16) {
      Program p;
      auto x = p.add_input("x", {DType::f32, {-1, 32, 5, 5}});
      auto a = p.add_op("conv2d", {{x}, {p.add_param("w1", rnd({32, 32, 1, 1}, 1))}, {}}, {})[0];
      auto b = p.add_op("conv2d", {{a}, {p.add_param("w2", rnd({32, 8, 3, 3}, 2))}, {}},
                        {{"padding", std::vector<int64_t>{1, 1}}, {"groups", int64_t{4}}})[0];
      p.mark_output(p.add_op("conv2d", {{p.add_op("add", {{b}, {a}})[0]}, {p.add_param("w3", rnd({16, 32, 1, 1}, 3))}, {}}, {})[0], "out");
      Program q = blocked_for(p, wide);
      for (const auto& op : q.ops())
        if (op.type == "blocked_conv2d") CHECK(attr_int(op, "groups") == 1);
      check_same_outputs(p, q, 1e-4);
    }
  }
  SECTION("Winograd takes whole blocks only") {
    // The first conv, 24 -> 24 3x3 stride 1: whole blocks of 8 on AVX2, padded ones of 16 on AVX-512.
    Program p = residual_chain(24, 16, 24, false, 16);
    Program q = blocked_for(p, wide, nullptr, true);
    CHECK(count_ops(q, "winograd_conv2d") == (avx512 ? 0 : 1));
    CHECK(count_ops(q, "blocked_conv2d") == (avx512 ? 3 : 2));
    check_same_outputs(p, q, 1e-4);
  }
  SECTION("3x3 stride-1 convolutions on images of enough tiles go on to Winograd on the blocks") {
    Program p = residual_chain(16, 16, 0, false, 16);
    Program q = blocked_for(p, wide, nullptr, true);
    CHECK(count_ops(q, "winograd_conv2d") == 1);
    CHECK(count_ops(q, "blocked_conv2d") == 2);
    for (const auto& op : q.ops())
      if (op.type == "winograd_conv2d") CHECK(pd::ir::attr_int(op, "block") == block);
    check_same_outputs(p, q, 1e-4);
    // At 10x10 (9 tiles) and 6x6 (4 tiles) the blocked 3x3 convolution goes to Winograd on both targets,
    // at 4x4 (1 tile) it stays oneDNN's.
    for (const char* target : {"cpu-avx512", "cpu-avx2"}) {
      if (!avx512 && std::string(target) == "cpu-avx512") continue;
      Program nine = residual_chain(16, 16);
      Program w = blocked_for(nine, target, nullptr, true);
      CHECK(count_ops(w, "winograd_conv2d") == 1);
      check_same_outputs(nine, w, 1e-4);
      CHECK(count_ops(blocked_for(residual_chain(16, 16, 0, false, 6), target, nullptr, true), "winograd_conv2d") == 1);
      CHECK(count_ops(blocked_for(residual_chain(16, 16, 0, false, 4), target, nullptr, true), "winograd_conv2d") == 0);
    }
    // On AVX-512 a large transformed weight must also be read over enough tiles: 256 -> 256 channels at
    // 16x16 (16 tiles, 9.4 MB) stays oneDNN's, unless the batch hint says 8 images a call (128 tiles);
    // 64 -> 64 (590 KB) goes to Winograd, and so does 128 -> 128 at 7x7 (4 tiles, but 2.4 MB in all);
    // 256 -> 256 at 7x7 (9.4 MB over 4 tiles) stays. On AVX2 all go.
    for (const char* target : {"cpu-avx512", "cpu-avx2"}) {
      const bool bound = std::string(target) == "cpu-avx512";
      const auto winograd_ops = [&](int64_t c, int64_t hw, int64_t batch) {
        return count_ops(blocked_for(residual_chain(c, 64, c, false, hw), target, nullptr, true, batch), "winograd_conv2d");
      };
      CHECK(winograd_ops(256, 16, 1) == (bound ? 0 : 1));
      CHECK(winograd_ops(256, 16, 8) == 1);
      CHECK(winograd_ops(64, 16, 1) == 1);
      CHECK(winograd_ops(128, 7, 1) == 1);
      CHECK(winograd_ops(256, 7, 1) == (bound ? 0 : 1));
    }
  }
  SECTION("a max pool between convolutions pools the blocks (ResNet's stem)") {
    // image [3, 17, 15] -> conv 3x3 (3 -> 2b) -> relu -> max_pool2d 3x3 / 2 / pad 1 -> conv 3x3 (2b -> 2b)
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, 3, 17, 15}});
    const auto conv = [&](ValueId in, int64_t ci, int64_t co, int64_t seed) {
      auto w = p.add_param(p.unique_name("w"), rnd({co, ci, 3, 3}, seed, -0.3, 0.3));
      return p.add_op("conv2d", {{in}, {w}, {}}, {{"padding", std::vector<int64_t>{1, 1}}})[0];
    };
    auto stem = p.add_op("relu", {{conv(x, 3, 2 * block, 1)}})[0];
    auto pooled = p.add_op("max_pool2d", {{stem}}, {{"kernel_size", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{2, 2}},
                                                    {"padding", std::vector<int64_t>{1, 1}}})[0];
    p.mark_output(conv(pooled, 2 * block, 2 * block, 2), "out");
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 2);
    CHECK(count_ops(q, "max_pool2d_nhwc") == 1);
    CHECK(count_ops(q, "max_pool2d") == 0);
    CHECK(count_ops(q, "to_channel_blocks") == 0);  // the image is read plain, the pool's output stays blocked
    check_same_outputs(p, q, 1e-5);
  }
  SECTION("depthwise convolutions join the chain (MobileNet's 1x1 -> depthwise 3x3 -> 1x1)") {
    const int64_t c = 2 * block;
    Program p;
    auto x = p.add_input("x", {DType::f32, {-1, c, 10, 9}});
    const auto conv = [&](ValueId in, int64_t k, int64_t groups, int64_t stride, int64_t seed) {
      auto w = p.add_param(p.unique_name("w"), rnd({c, c / groups, k, k}, seed, -0.3, 0.3));
      auto b = p.add_param(p.unique_name("b"), rnd({c}, seed + 1));
      return p.add_op("conv2d", {{in}, {w}, {b}},
                      {{"padding", std::vector<int64_t>(2, k / 2)}, {"stride", std::vector<int64_t>(2, stride)}, {"groups", groups}})[0];
    };
    auto y = p.add_op("relu6", {{conv(x, 1, 1, 1, 1)}})[0];
    y = p.add_op("relu6", {{conv(y, 3, c, 2, 3)}})[0];
    p.mark_output(conv(y, 1, 1, 1, 5), "out");
    Program q = blocked_for(p, wide);
    CHECK(count_ops(q, "blocked_conv2d") == 3);
    CHECK(count_ops(q, "fused_conv2d") + count_ops(q, "conv2d") == 0);
    bool depthwise = false;
    for (const auto& op : q.ops())
      if (op.type == "blocked_conv2d" && pd::ir::attr_int(op, "groups") == c) depthwise = true;
    CHECK(depthwise);
    check_same_outputs(p, q, 1e-5);
  }
  SECTION("a lone convolution is left plain (the reorders would cost what oneDNN's own do)") {
    Program p = conv3x3(16, 32, {{"padding", std::vector<int64_t>{1, 1}}});
    CHECK(pd::ir::print(blocked_for(p, wide)) == pd::ir::print(p));
  }
}
