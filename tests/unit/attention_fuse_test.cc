// attention_fuse: attention written out op by op becomes scaled_dot_product_attention, computing the
// same; every failed precondition leaves the graph as it was.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "pd/exec/executor.h"
#include "pd/ir/pass.h"
#include "test_util.h"
#include "pd/pd.h"

using pd::DType;
using pd::Shape;
using pd::ir::Program;
using pd::ir::ValueId;

namespace {

using pd::test::count_ops;

Program fused(const Program& p) {
  Program q = p;
  pd::ir::PassOptions opt;
  opt.passes = {"attention_fuse", "dce"};
  pd::ir::PassManager(opt).run(q);
  return q;
}

// The outputs of both programs on the same random inputs (-1 extents as 3).
float max_difference(const Program& a, const Program& b) {
  std::map<std::string, pd::Tensor> in;
  int64_t seed = 5;
  for (ValueId v : a.inputs()) {
    Shape s = a.value(v).type.shape;
    for (auto& d : s) d = d < 0 ? 3 : d;
    in[a.value(v).name] = pd::ops::normal(s, 0, 1, seed++);
  }
  auto x = pd::exec::Executor(a).run(in)[0].to_vector<float>(), y = pd::exec::Executor(b).run(in)[0].to_vector<float>();
  REQUIRE(x.size() == y.size());
  float m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

struct Options {
  bool split_scale = false;     // PyTorch's export: sqrt(scale) on q and on k^T
  bool runtime_scale = false;   // the scale is an input, not a constant
  bool second_reader = false;   // the scaled scores are also a graph output
  Shape mask = {-1, 1, 1, 12};  // an additive mask input of this shape; empty: none
};

// [N, 4, 10, 8] queries against [N, 1 or 4, 12, 8] keys: softmax(q k^T * 0.35 + mask) v.
Program attention(const Options& o, int64_t kv_heads = 4) {
  Program p;
  ValueId q = p.add_input("q", {DType::f32, {-1, 4, 10, 8}});
  ValueId k = p.add_input("k", {DType::f32, {-1, kv_heads, 12, 8}});
  ValueId v = p.add_input("v", {DType::f32, {-1, kv_heads, 12, 8}});
  ValueId kt = p.add_op("transpose", {{k}}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})[0];
  ValueId scores;
  if (o.split_scale) {
    ValueId c = p.add_param("sqrt_scale", pd::Tensor::full_scalar(std::sqrt(0.35), DType::f32));
    scores = p.add_op("matmul", {{p.add_op("mul", {{q}, {c}})[0]}, {p.add_op("mul", {{kt}, {c}})[0]}})[0];
  } else {
    ValueId c = o.runtime_scale ? p.add_input("scale", {DType::f32, {}}) : p.add_param("scale", pd::Tensor::full_scalar(1 / 0.35, DType::f32));
    scores = p.add_op(o.runtime_scale ? "mul" : "div", {{p.add_op("matmul", {{q}, {kt}})[0]}, {c}})[0];
  }
  if (o.second_reader) p.mark_output(scores, "scores");
  if (!o.mask.empty()) scores = p.add_op("add", {{scores}, {p.add_input("mask", {DType::f32, o.mask})}})[0];
  ValueId probs = p.add_op("softmax", {{scores}}, {{"axis", int64_t{-1}}})[0];
  p.mark_output(p.add_op("matmul", {{probs}, {v}})[0], "out");
  return p;
}

// As torch's opset-14 export of scaled_dot_product_attention writes it (HF transformers' BERT, GPT-2): k
// as [N, 12, 4, 8] turned into k^T by one transpose [0, 2, 3, 1], sqrt(scale) on q and on k^T, an additive
// mask, and softmax's NaN rows zeroed with where(isnan(p), 0, p) (IsNaN as the importer writes it).
Program torch_sdpa_export(bool nan_guard_read_twice = false) {
  Program p;
  ValueId q = p.add_input("q", {DType::f32, {-1, 4, 10, 8}});
  ValueId k = p.add_input("k", {DType::f32, {-1, 12, 4, 8}});
  ValueId v = p.add_input("v", {DType::f32, {-1, 4, 12, 8}});
  ValueId c = p.add_param("sqrt_scale", pd::Tensor::full_scalar(std::sqrt(0.35), DType::f32));
  ValueId kt = p.add_op("transpose", {{k}}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})[0];
  ValueId scores = p.add_op("matmul", {{p.add_op("mul", {{q}, {c}})[0]}, {p.add_op("mul", {{kt}, {c}})[0]}})[0];
  scores = p.add_op("add", {{scores}, {p.add_input("mask", {DType::f32, {-1, 1, 1, 12}})}})[0];
  ValueId probs = p.add_op("softmax", {{scores}}, {{"axis", int64_t{-1}}})[0];
  ValueId same = p.add_op("equal", {{probs}, {probs}})[0];
  ValueId is_nan = p.add_op("equal", {{same}, {p.add_param("false", pd::Tensor::full_scalar(0.0, DType::boolean))}})[0];
  ValueId zeroed = p.add_op("where", {{is_nan}, {p.add_param("zero", pd::Tensor::full_scalar(0.0, DType::f32))}, {probs}})[0];
  if (nan_guard_read_twice) p.mark_output(is_nan, "nan_rows");
  p.mark_output(p.add_op("matmul", {{zeroed}, {v}})[0], "out");
  return p;
}

// As torch's dynamo exporter writes it (torch.onnx.export's default since torch 2.9): k^T with the heads
// merged into the batch, k [N, 4, 12, 8] -> [N*4, 12, 8] -> transpose [0, 2, 1] -> [N, 4, 8, 12], sqrt(scale)
// on q and on k^T, no mask. `merged` other than {-1, 12, 8} regroups k's values: no transpose of k.
Program dynamo_export(std::vector<int64_t> merged_shape = {-1, 12, 8}) {
  Program p;
  ValueId q = p.add_input("q", {DType::f32, {-1, 4, 10, 8}});
  ValueId k = p.add_input("k", {DType::f32, {-1, 4, 12, 8}});
  ValueId v = p.add_input("v", {DType::f32, {-1, 4, 12, 8}});
  ValueId c = p.add_param("sqrt_scale", pd::Tensor::full_scalar(std::sqrt(0.35), DType::f32));
  ValueId merged = p.add_op("reshape", {{k}}, {{"shape", merged_shape}})[0];
  ValueId flipped = p.add_op("transpose", {{merged}}, {{"perm", std::vector<int64_t>{0, 2, 1}}})[0];
  ValueId kt = p.add_op("reshape", {{flipped}}, {{"shape", std::vector<int64_t>{-1, 4, 8, 12}}})[0];
  ValueId scores = p.add_op("matmul", {{p.add_op("mul", {{q}, {c}})[0]}, {p.add_op("mul", {{kt}, {c}})[0]}})[0];
  ValueId probs = p.add_op("softmax", {{scores}}, {{"axis", int64_t{-1}}})[0];
  p.mark_output(p.add_op("matmul", {{probs}, {v}})[0], "out");
  return p;
}

}  // namespace

TEST_CASE("attention_fuse: the dynamo exporter's form (heads merged into the batch for k^T) becomes one attention", "[pass][transformer]") {
  const Program p = dynamo_export();
  const Program q = fused(p);
  CHECK(count_ops(q, "scaled_dot_product_attention") == 1);
  CHECK(q.ops().size() == 1);
  CHECK(max_difference(p, q) < 1e-5f);
  // k's values regrouped ([N*4, 24, 4]) before the transpose: the scores are not q k^T.
  const Program regrouped = dynamo_export({-1, 24, 4});
  CHECK(count_ops(fused(regrouped), "scaled_dot_product_attention") == 0);
  CHECK(fused(regrouped).ops().size() == regrouped.ops().size());
}

TEST_CASE("attention_fuse: torch's opset-14 form (k by length, NaN rows zeroed) becomes one attention", "[pass][transformer]") {
  const Program p = torch_sdpa_export();
  const Program q = fused(p);
  CHECK(count_ops(q, "scaled_dot_product_attention") == 1);
  CHECK(count_ops(q, "transpose") == 1);  // k to [N, heads, len, dim]
  CHECK(q.ops().size() == 2);
  CHECK(max_difference(p, q) < 1e-5f);
  // Every key masked out: softmax gives NaN rows, which the where zeroes and the fused kernel leaves zero.
  std::map<std::string, pd::Tensor> in = {{"q", pd::ops::normal({2, 4, 10, 8}, 0, 1, 1)}, {"k", pd::ops::normal({2, 12, 4, 8}, 0, 1, 2)},
                                          {"v", pd::ops::normal({2, 4, 12, 8}, 0, 1, 3)},
                                          {"mask", pd::ops::full({2, 1, 1, 12}, -std::numeric_limits<double>::infinity())}};
  for (const Program* prog : {&p, &q})
    for (float x : pd::exec::Executor(*prog).run(in)[0].to_vector<float>()) CHECK(x == 0.0f);
  // The NaN test read elsewhere too: it cannot disappear, so the chain stays.
  const Program r = torch_sdpa_export(true);
  CHECK(count_ops(fused(r), "scaled_dot_product_attention") == 0);
}

TEST_CASE("attention_fuse: the written-out chain becomes one scaled_dot_product_attention", "[pass][transformer]") {
  for (bool split : {false, true})
    for (int64_t kv_heads : {4, 1}) {  // one kv head broadcast over four query heads
      Options o;
      o.split_scale = split;
      const Program p = attention(o, kv_heads);
      const Program q = fused(p);
      CHECK(count_ops(q, "scaled_dot_product_attention") == 1);
      CHECK(count_ops(q, "softmax") == 0);
      CHECK(count_ops(q, "matmul") == 0);
      CHECK(count_ops(q, "transpose") == 0);
      CHECK(q.ops().size() == 1);
      CHECK(max_difference(p, q) < 1e-5f);
    }
  Options no_mask;
  no_mask.mask = {};
  const Program p = attention(no_mask);
  CHECK(count_ops(fused(p), "scaled_dot_product_attention") == 1);
  CHECK(max_difference(p, fused(p)) < 1e-5f);
}

TEST_CASE("attention_fuse: unmet preconditions leave the graph alone", "[pass][transformer]") {
  auto unchanged = [](const Options& o) {
    const Program p = attention(o);
    const Program q = fused(p);
    CHECK(count_ops(q, "scaled_dot_product_attention") == 0);
    CHECK(q.ops().size() == p.ops().size());
  };
  SECTION("the mask does not broadcast into the scores as assumed (it grows them)") {
    Options o;
    o.mask = {2, -1, 4, 10, 12};
    unchanged(o);
  }
  SECTION("the scale is not a constant") {
    Options o;
    o.runtime_scale = true;
    unchanged(o);
  }
  SECTION("an intermediate has a second reader") {
    Options o;
    o.second_reader = true;
    unchanged(o);
  }
  SECTION("softmax over another axis") {
    Program p;
    ValueId q = p.add_input("q", {DType::f32, {2, 4, 10, 8}}), k = p.add_input("k", {DType::f32, {2, 4, 10, 8}});
    ValueId s = p.add_op("matmul", {{q}, {k}}, {{"transpose_y", true}})[0];
    p.mark_output(p.add_op("matmul", {{p.add_op("softmax", {{s}}, {{"axis", int64_t{2}}})[0]}, {k}})[0], "out");
    CHECK(count_ops(fused(p), "scaled_dot_product_attention") == 0);
  }
}
