// layer_norm_fuse, gelu_fuse and linear_bias_fuse: the op-by-op forms ONNX exporters write (before
// opsets 17 and 20) become layer_norm, gelu (or gelu_tanh) and a linear with its bias, computing the same; every failed
// precondition leaves the graph as it was. attention_qkv_fuse (lowering): multi-head attention fed by
// one packed QKV projection becomes qkv_attention; linear_residual_fuse (lowering) folds the skip
// connection's add into the linear before it. And the whole way: a transformer block exported to ONNX at
// opset 13 and imported back comes out of -O2 with the ops it started with.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "pd/exec/executor.h"
#include "pd/io/onnx.h"
#include "pd/ir/pass.h"
#include "test_util.h"
#include "pd/pd.h"

using pd::DType;
using pd::Shape;
using pd::Tensor;
using pd::ir::Program;
using pd::ir::ValueId;
using Ints = std::vector<int64_t>;

namespace {

using pd::test::count_ops;

Program run_passes(const Program& p, std::vector<std::string> passes) {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = std::move(passes);
  opt.passes.push_back("dce");
  pd::ir::PassManager(opt).run(q);
  return q;
}

// The first outputs of both programs on the same random inputs (-1 extents as 3).
float max_difference(const Program& a, const Program& b) {
  std::map<std::string, Tensor> in;
  int64_t seed = 5;
  for (ValueId v : a.inputs()) {
    Shape s = a.value(v).type.shape;
    for (auto& d : s) d = d < 0 ? 3 : d;
    in[a.value(v).name] = pd::ops::normal(s, 1.0, 2.0, seed++);
  }
  return pd::test::max_abs_diff(pd::exec::Executor(a).run(in)[0], pd::exec::Executor(b).run(in)[0]);
}

ValueId constant(Program& p, double v) { return p.add_param(p.unique_name("c"), pd::ops::full({}, v)); }

struct NormOptions {
  bool rsqrt = false;           // d * rsqrt(v + eps) instead of d / sqrt(v + eps)
  bool pow = false;             // pow(d, 2) instead of d * d
  Ints mean_axes = {2};         // of x [N, 5, 8]
  Ints var_axes = {2};
  Shape scale = {8};            // empty: no affine mul
  bool bias = true;
  bool runtime_eps = false;     // eps is an input, not a constant
  bool centred_read = false;    // x - mean(x) is also a graph output
};

Program layer_norm_chain(const NormOptions& o) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 5, 8}});
  auto op = [&](const std::string& t, std::vector<std::vector<ValueId>> in, pd::AttrMap a = {}) { return p.add_op(t, in, a)[0]; };
  const ValueId m = op("mean", {{x}}, {{"axis", o.mean_axes}, {"keepdim", true}});
  const ValueId d = op("sub", {{x}, {m}});
  const ValueId sq = o.pow ? op("pow", {{d}, {constant(p, 2.0)}}) : op("mul", {{d}, {d}});
  const ValueId var = op("mean", {{sq}}, {{"axis", o.var_axes}, {"keepdim", true}});
  const ValueId eps = o.runtime_eps ? p.add_input("eps", {DType::f32, {}}) : constant(p, 1e-5);
  const ValueId ve = op("add", {{var}, {eps}});
  ValueId y = o.rsqrt ? op("mul", {{op("rsqrt", {{ve}})}, {d}}) : op("div", {{d}, {op("sqrt", {{ve}})}});
  if (!o.scale.empty()) y = op("mul", {{y}, {p.add_param("scale", pd::ops::normal(o.scale, 1, 0.5, 1))}});
  if (o.bias) y = op("add", {{y}, {p.add_param("bias", pd::ops::normal({8}, 0, 0.5, 2))}});
  p.mark_output(y, "y");
  if (o.centred_read) p.mark_output(d, "centred");
  pd::ir::verify(p);
  return p;
}

}  // namespace

TEST_CASE("layer_norm_fuse: the written-out chain becomes one layer_norm", "[pass][transformer]") {
  for (bool rsqrt : {false, true})
    for (bool pow : {false, true}) {
      NormOptions o;
      o.rsqrt = rsqrt, o.pow = pow;
      const Program p = layer_norm_chain(o);
      const Program q = run_passes(p, {"layer_norm_fuse"});
      CHECK(q.ops().size() == 1);
      CHECK(count_ops(q, "layer_norm") == 1);
      CHECK(max_difference(p, q) < 1e-5f);
    }
  SECTION("over the last two axes, a [1, 8] scale, no bias") {
    NormOptions o;
    o.mean_axes = o.var_axes = {-2, -1};
    o.scale = {1, 5, 8};
    o.bias = false;
    const Program p = layer_norm_chain(o);
    const Program q = run_passes(p, {"layer_norm_fuse"});
    REQUIRE(count_ops(q, "layer_norm") == 1);
    CHECK(pd::ir::attr_int(q.ops().back(), "begin_norm_axis") == 1);
    CHECK(max_difference(p, q) < 1e-5f);
  }
  SECTION("no affine part: a scale of ones and a bias of zeros") {
    NormOptions o;
    o.scale = {};
    o.bias = false;
    const Program p = layer_norm_chain(o);
    const Program q = run_passes(p, {"layer_norm_fuse"});
    CHECK(q.ops().size() == 1);
    CHECK(max_difference(p, q) < 1e-5f);
  }
}

TEST_CASE("layer_norm_fuse: unmet preconditions leave the chain alone", "[pass][transformer]") {
  auto unchanged = [](const NormOptions& o) {
    const Program p = layer_norm_chain(o);
    const Program q = run_passes(p, {"layer_norm_fuse"});
    CHECK(count_ops(q, "layer_norm") == 0);
    CHECK(q.ops().size() == p.ops().size());
  };
  SECTION("the means are not over trailing axes") {
    NormOptions o;
    o.mean_axes = o.var_axes = {1};
    unchanged(o);
  }
  SECTION("the two means are over different axes") {
    NormOptions o;
    o.var_axes = {1, 2};
    unchanged(o);
  }
  SECTION("eps is not a constant") {
    NormOptions o;
    o.runtime_eps = true;
    unchanged(o);
  }
  SECTION("an intermediate has a second reader") {
    NormOptions o;
    o.centred_read = true;
    unchanged(o);
  }
  SECTION("a scale that is not of the normalised shape stays a mul") {
    NormOptions o;
    o.scale = {5, 1};  // per row, not per feature
    const Program q = run_passes(layer_norm_chain(o), {"layer_norm_fuse"});
    CHECK(count_ops(q, "layer_norm") == 1);
    CHECK(count_ops(q, "mul") == 1);
    CHECK(count_ops(q, "add") == 1);  // the bias follows the mul, not the normalisation: it stays too
  }
}

namespace {

struct GeluOptions {
  bool divide = true;     // erf(x / sqrt 2) rather than erf(x * 0.7071)
  bool half_first = false;  // (x * 0.5) * (1 + erf) rather than x * (1 + erf) * 0.5
  double half = 0.5;
  bool other_x = false;   // erf reads another tensor
  bool erf_read = false;  // the erf is also a graph output
};

Program gelu_chain(const GeluOptions& o) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 6}});
  const ValueId x2 = o.other_x ? p.add_input("x2", {DType::f32, {-1, 6}}) : x;
  auto op = [&](const std::string& t, std::vector<std::vector<ValueId>> in) { return p.add_op(t, in)[0]; };
  const ValueId arg = o.divide ? op("div", {{x2}, {constant(p, 1.4142135)}}) : op("mul", {{x2}, {constant(p, 0.70710678)}});
  const ValueId e = op("erf", {{arg}});
  const ValueId one_plus = op("add", {{e}, {constant(p, 1.0)}});
  const ValueId y = o.half_first ? op("mul", {{op("mul", {{x}, {constant(p, o.half)}})}, {one_plus}})
                                 : op("mul", {{op("mul", {{x}, {one_plus}})}, {constant(p, o.half)}});
  p.mark_output(y, "y");
  if (o.erf_read) p.mark_output(e, "erf");
  pd::ir::verify(p);
  return p;
}

// GELU's tanh approximation as HF transformers' gelu_new (pow(x, 3)) or torch's symbolic for
// gelu(approximate='tanh') writes it (x * (x * x)).
struct TanhGeluOptions {
  bool pow = true;             // pow(x, 3) rather than x * (x * x)
  bool swapped = false;        // constants first and x second in every product and sum
  double cube_coefficient = 0.044715;
};

Program tanh_gelu_chain(const TanhGeluOptions& o) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 6}});
  auto op = [&](const std::string& t, ValueId a, ValueId b) { return o.swapped ? p.add_op(t, {{b}, {a}})[0] : p.add_op(t, {{a}, {b}})[0]; };
  const ValueId cube = o.pow ? p.add_op("pow", {{x}, {constant(p, 3.0)}})[0] : op("mul", x, op("mul", x, x));
  const ValueId inner = op("add", x, op("mul", cube, constant(p, o.cube_coefficient)));
  const ValueId t = p.add_op("tanh", {{op("mul", inner, constant(p, 0.7978845608))}})[0];
  const ValueId y = op("mul", op("mul", x, constant(p, 0.5)), op("add", t, constant(p, 1.0)));
  p.mark_output(y, "y");
  pd::ir::verify(p);
  return p;
}

}  // namespace

TEST_CASE("gelu_fuse: the tanh form becomes one gelu_tanh, x^3 as pow or as products", "[pass][transformer]") {
  for (bool pow : {true, false})
    for (bool swapped : {false, true}) {
      TanhGeluOptions o;
      o.pow = pow, o.swapped = swapped;
      const Program p = tanh_gelu_chain(o);
      const Program q = run_passes(p, {"gelu_fuse"});
      CHECK(q.ops().size() == 1);
      CHECK(count_ops(q, "gelu_tanh") == 1);
      CHECK(max_difference(p, q) < 1e-5f);
    }
  // Another coefficient of x^3 is another function: left alone.
  TanhGeluOptions o;
  o.cube_coefficient = 0.05;
  const Program p = tanh_gelu_chain(o);
  const Program q = run_passes(p, {"gelu_fuse"});
  CHECK(count_ops(q, "gelu_tanh") == 0);
  CHECK(q.ops().size() == p.ops().size());
}

TEST_CASE("gelu_fuse: the erf form becomes one gelu, in either grouping", "[pass][transformer]") {
  for (bool divide : {false, true})
    for (bool half_first : {false, true}) {
      GeluOptions o;
      o.divide = divide, o.half_first = half_first;
      const Program p = gelu_chain(o);
      const Program q = run_passes(p, {"gelu_fuse"});
      CHECK(q.ops().size() == 1);
      CHECK(count_ops(q, "gelu") == 1);
      CHECK(max_difference(p, q) < 1e-5f);
    }
  auto unchanged = [](const GeluOptions& o) {
    const Program p = gelu_chain(o);
    const Program q = run_passes(p, {"gelu_fuse"});
    CHECK(count_ops(q, "gelu") == 0);
    CHECK(q.ops().size() == p.ops().size());
  };
  SECTION("another constant than 0.5") {
    GeluOptions o;
    o.half = 0.6;
    unchanged(o);
  }
  SECTION("erf of another tensor") {
    GeluOptions o;
    o.other_x = true;
    unchanged(o);
  }
  SECTION("an intermediate has a second reader") {
    GeluOptions o;
    o.erf_read = true;
    unchanged(o);
  }
}

TEST_CASE("linear_bias_fuse: a bias-free linear and an added bias param become one linear", "[pass][transformer]") {
  auto chain = [](Shape bias_shape, bool bias_is_input, bool linear_has_bias) {
    Program p;
    const ValueId x = p.add_input("x", {DType::f32, {-1, 5, 4}});
    const ValueId w = p.add_param("w", pd::ops::normal({6, 4}, 0, 1, 1));
    std::vector<ValueId> b0;
    if (linear_has_bias) b0 = {p.add_param("b0", pd::ops::normal({6}, 0, 1, 2))};
    const ValueId y = p.add_op("linear", {{x}, {w}, b0})[0];
    const ValueId b = bias_is_input ? p.add_input("b", {DType::f32, bias_shape}) : p.add_param("b", pd::ops::normal(bias_shape, 0, 1, 3));
    p.mark_output(p.add_op("add", {{b}, {y}})[0], "out");
    pd::ir::verify(p);
    return p;
  };
  for (const Shape& s : {Shape{6}, Shape{1, 1, 6}}) {
    const Program p = chain(s, false, false);
    const Program q = run_passes(p, {"linear_bias_fuse"});
    CHECK(q.ops().size() == 1);
    CHECK(max_difference(p, q) < 1e-5f);
  }
  CHECK(run_passes(chain({6}, true, false), {"linear_bias_fuse"}).ops().size() == 2);     // the bias is no param
  CHECK(run_passes(chain({6}, false, true), {"linear_bias_fuse"}).ops().size() == 2);     // the linear has a bias
  CHECK(run_passes(chain({5, 6}, false, false), {"linear_bias_fuse"}).ops().size() == 2);  // not per output feature
}

TEST_CASE("a transformer block through ONNX opset 13 comes back from -O2 with the ops it started with", "[pass][transformer][onnx]") {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {-1, 7, 16}});
  auto op = [&](const std::string& t, std::vector<std::vector<ValueId>> in, pd::AttrMap a = {}) { return p.add_op(t, in, a)[0]; };
  auto param = [&](const std::string& n, const Shape& s, double mean) { return p.add_param(n, pd::ops::normal(s, mean, 0.3, p.params().size() + 1)); };
  const ValueId h = op("layer_norm", {{x}, {param("ln.weight", {16}, 1.0)}, {param("ln.bias", {16}, 0.0)}});
  const ValueId qkv = op("linear", {{h}, {param("qkv.weight", {48, 16}, 0.0)}, {param("qkv.bias", {48}, 0.0)}});
  const auto parts = p.add_op("split", {{qkv}}, {{"sections", Ints{16, 16, 16}}, {"axis", int64_t{-1}}});
  auto heads = [&](ValueId t) { return op("transpose", {{op("reshape", {{t}}, {{"shape", Ints{-1, 7, 2, 8}}})}}, {{"perm", Ints{0, 2, 1, 3}}}); };
  ValueId a = op("scaled_dot_product_attention", {{heads(parts[0])}, {heads(parts[1])}, {heads(parts[2])}, {}});
  a = op("reshape", {{op("transpose", {{a}}, {{"perm", Ints{0, 2, 1, 3}}})}}, {{"shape", Ints{-1, 7, 16}}});
  ValueId y = op("add", {{x}, {op("linear", {{a}, {param("out.weight", {16, 16}, 0.0)}, {param("out.bias", {16}, 0.0)}})}});
  y = op("gelu", {{op("linear", {{y}, {param("ff.weight", {32, 16}, 0.0)}, {param("ff.bias", {32}, 0.0)}})}});
  p.mark_output(y, "y");
  pd::ir::verify(p);

  const auto path = std::filesystem::temp_directory_path() / ("pd_transformer_fuse_" + std::to_string(::getpid()) + ".onnx");
  pd::io::OnnxExportOptions opt;
  opt.opset = 13;  // layer_norm, gelu and attention are written out op by op
  pd::io::export_onnx(p, path.string(), opt);
  Program back = pd::io::import_onnx(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.ops().size() > p.ops().size() + 15);
  const Program optimised = run_passes(back, pd::ir::level_passes(2));
  for (const char* type : {"layer_norm", "gelu", "scaled_dot_product_attention", "linear", "split", "add"}) {
    INFO(type);
    CHECK(count_ops(optimised, type) == count_ops(p, type));
  }
  CHECK(optimised.ops().size() == p.ops().size());
  CHECK(max_difference(p, optimised) < 1e-4f);
}

namespace {

struct QkvOptions {
  int64_t heads = 4, kv_heads = 2;
  bool mask = true, causal = false;
  bool swap_kv = false;       // the split's results go to the attention as q, v, k
  bool second_reader = true;  // false: nothing else reads q; true: the head view of q is also an output
  double dropout = 0.0;
};

// y [N, 6, (H + 2 Hk) * 8] -> split -> heads -> attention -> heads merged [N, 6, H * 8].
Program qkv_chain(const QkvOptions& o) {
  Program p;
  const int64_t E = 8, L = 6, width = (o.heads + 2 * o.kv_heads) * E;
  const ValueId y = p.add_input("y", {DType::f32, {-1, L, width}});
  auto op = [&](const std::string& t, std::vector<std::vector<ValueId>> in, pd::AttrMap a = {}) { return p.add_op(t, in, a)[0]; };
  const auto parts = p.add_op("split", {{y}}, {{"sections", Ints{o.heads * E, o.kv_heads * E, o.kv_heads * E}}, {"axis", int64_t{-1}}});
  auto heads = [&](ValueId t, int64_t h) {
    return op("transpose", {{op("reshape", {{t}}, {{"shape", Ints{-1, L, h, E}}})}}, {{"perm", Ints{0, 2, 1, 3}}});
  };
  const ValueId q = heads(parts[0], o.heads);
  ValueId k = heads(parts[1], o.kv_heads), v = heads(parts[2], o.kv_heads);
  if (o.swap_kv) std::swap(k, v);
  std::vector<ValueId> mask;
  if (o.mask) mask = {p.add_input("mask", {DType::f32, {-1, 1, 1, L}})};
  const ValueId a = op("scaled_dot_product_attention", {{q}, {k}, {v}, mask}, {{"is_causal", o.causal}, {"dropout_p", o.dropout}});
  const ValueId merged = op("reshape", {{op("transpose", {{a}}, {{"perm", Ints{0, 2, 1, 3}}})}}, {{"shape", Ints{-1, L, o.heads * E}}});
  p.mark_output(merged, "out");
  if (o.second_reader) p.mark_output(q, "q_heads");
  pd::ir::verify(p);
  return p;
}

// p after `passes` (lowering ones) and dce for `target`.
Program lowered(const Program& p, std::vector<std::string> passes = {"attention_qkv_fuse"}, const char* target = "cpu-avx2") {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = std::move(passes);
  opt.passes.push_back("dce");
  opt.target = pd::Target::parse(target);
  pd::ir::PassManager(opt).run(q);
  return q;
}

}  // namespace

TEST_CASE("attention_qkv_fuse: attention on a packed QKV projection becomes one qkv_attention", "[pass][transformer]") {
  for (int64_t kv_heads : {2, 4})
    for (bool mask : {false, true})
      for (bool causal : {false, true}) {
        QkvOptions o;
        o.kv_heads = kv_heads, o.mask = mask, o.causal = causal, o.second_reader = false;
        const Program p = qkv_chain(o);
        const Program q = lowered(p);
        REQUIRE(q.ops().size() == 1);
        CHECK(q.ops()[0].type == "qkv_attention");
        CHECK(max_difference(p, q) < 1e-5f);
      }
  auto unchanged = [](const QkvOptions& o) {
    const Program p = qkv_chain(o);
    const Program q = lowered(p);
    CHECK(count_ops(q, "qkv_attention") == 0);
    CHECK(q.ops().size() == p.ops().size());
  };
  SECTION("k and v taken from the split in the other order") {
    QkvOptions o;
    o.second_reader = false, o.swap_kv = true;
    unchanged(o);
  }
  SECTION("an intermediate has a second reader") { unchanged(QkvOptions{}); }
  SECTION("attention dropout (a training program)") {
    QkvOptions o;
    o.second_reader = false, o.dropout = 0.1;
    unchanged(o);
  }
  SECTION("a target without AVX2 keeps the general form") {
    QkvOptions o;
    o.second_reader = false;
    Program q = qkv_chain(o);
    pd::ir::PassOptions opt;
    opt.passes = {"attention_qkv_fuse"};
    opt.target = pd::Target::parse("cpu-baseline");
    pd::ir::PassManager(opt).run(q);
    CHECK(count_ops(q, "qkv_attention") == 0);
  }
}

namespace {

struct ResidualOptions {
  Shape residual = {2, 5, 6};      // the skip connection's shape (the add broadcasts otherwise)
  bool second_reader = false;      // the linear's result is also a graph output
  bool quantized_weight = false;   // the weight comes from a dequantize_linear (a QDQ model)
  std::string activation = "none"; // the linear is already a fused_linear with this activation
  bool relu_after = false;         // relu(linear + r): a residual MLP block
};

// x [2, 5, 4] -> linear(w, b) -> add(r): a pre-norm block's projection and skip connection.
Program residual_chain(const ResidualOptions& o) {
  Program p;
  const ValueId x = p.add_input("x", {DType::f32, {2, 5, 4}});
  const ValueId r = p.add_input("r", {DType::f32, o.residual});
  ValueId w = p.add_param("w", pd::ops::normal({6, 4}, 0, 1, 1));
  if (o.quantized_weight) {
    const ValueId wq = p.add_param("wq", pd::ops::cast(pd::ops::full({6, 4}, 3), DType::i8));
    w = p.add_op("dequantize_linear", {{wq}, {constant(p, 0.1)}, {p.add_param("wz", pd::ops::cast(pd::ops::full({}, 0), DType::i8))}})[0];
  }
  const ValueId b = p.add_param("b", pd::ops::normal({6}, 0, 1, 2));
  const ValueId y = o.activation == "none" ? p.add_op("linear", {{x}, {w}, {b}})[0]
                                           : p.add_op("fused_linear", {{x}, {w}, {b}, {}}, {{"activation", pd::AttrValue(o.activation)}})[0];
  const ValueId sum = p.add_op("add", {{r}, {y}})[0];
  p.mark_output(o.relu_after ? p.add_op("relu", {{sum}})[0] : sum, "out");
  if (o.second_reader) p.mark_output(y, "projection");
  pd::ir::verify(p);
  return p;
}

Program residual_lowered(const Program& p) { return lowered(p, {"linear_residual_fuse", "linear_act_fuse"}, "cpu"); }

}  // namespace

TEST_CASE("linear_residual_fuse: a linear and its skip connection become one fused_linear", "[pass][transformer]") {
  const Program p = residual_chain({});
  const Program q = residual_lowered(p);
  REQUIRE(q.ops().size() == 1);
  CHECK(q.ops()[0].type == "fused_linear");
  CHECK(q.value(pd::ir::input_of(q, 0, 3)).name == "r");
  CHECK(max_difference(p, q) < 1e-5f);
  // A relu after the add joins the same op: activation(linear + residual), the fused ops' order.
  const Program relu = residual_chain({.relu_after = true});
  const Program rq = residual_lowered(relu);
  REQUIRE(rq.ops().size() == 1);
  CHECK(pd::ir::attr_string(rq.ops()[0], "activation") == "relu");
  CHECK(max_difference(relu, rq) < 1e-5f);

  auto unchanged = [](const ResidualOptions& o) {
    const Program p = residual_chain(o);
    CHECK(count_ops(residual_lowered(p), "add") == 1);
  };
  SECTION("the residual broadcasts") { unchanged({.residual = {5, 6}}); }
  SECTION("the linear's result has a second reader") { unchanged({.second_reader = true}); }
  SECTION("a quantized model's linear (int8_lower takes it)") { unchanged({.quantized_weight = true}); }
  SECTION("the linear already applies an activation") { unchanged({.activation = "gelu"}); }
}
