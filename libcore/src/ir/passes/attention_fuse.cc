// Attention written out op by op (what ONNX and Paddle exporters emit) -> scaled_dot_product_attention,
// whose kernel streams over key tiles instead of materialising the [Lq, Lk] scores:
//
//   matmul(q, k^T) [* or / scalar constants] [+ mask] -> softmax(last axis) -> matmul(., v)
//
// k^T is matmul's transpose_y or a transpose of k's last two axes; constant factors may also sit on q
// or on k (PyTorch's export splits sqrt(scale) between them); all of them multiply into `scale`.
// torch's opset-14 export of scaled_dot_product_attention (HF transformers' BERT and GPT-2) adds two forms:
// k^T as one transpose [0, 2, 3, 1] of k's [batch, len, heads, dim] (the fused op gets k through a
// [0, 2, 1, 3] transpose), and softmax's NaN rows zeroed, `where(isnan(p), 0, p)` (IsNaN as imported,
// `(p == p) == false`), which the fused kernel does itself: a row with nothing to attend gives zeros.
// torch's dynamo export (torch.onnx.export's default in torch 2.9+) writes k^T with the heads merged into
// the batch: k [b, h, l, d] reshaped to [b*h, l, d], transposed [0, 2, 1] and reshaped back to [b, h, d, l].
// Preconditions, cheapest first: every intermediate is read only by the next op of the chain and is not
// a graph output (it disappears); the factors are scalar constants; the mask has the scores' dtype and
// broadcasts to the scores without growing them (the add's result has the scores' shape); q, k, v are
// 4-D [batch, heads, len, dim] with equal batches, k and v agreeing, and k's heads dividing q's.
#include <optional>
#include <utility>
#include <vector>

#include "chain.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

struct AttentionMatch {
  ValueId q = kNoValue, k = kNoValue, v = kNoValue, mask = kNoValue;
  double scale = 1.0;
  bool k_by_len = false;  // m.k is [batch, len, heads, dim]
  std::vector<int32_t> chain;  // the ops that disappear, the final matmul last
};

// v = where((s == s) == false, 0, s) with s = softmax(...), each intermediate read only here and s read only
// by the test and the where: returns the softmax (the where and the two equals go in `chain`), or -1.
int32_t softmax_with_nan_rows_zeroed(const Program& p, ValueId v, std::vector<int32_t>& chain) {
  const int32_t where = chain_producer(p, v, "where");
  if (where < 0 || scalar_constant(p, input_of(p, where, 1)) != 0.0) return -1;
  const ValueId s = input_of(p, where, 2);
  const Value& sv = p.value(s);
  if (sv.kind != ValueKind::OpResult || sv.producer < 0 || p.ops()[sv.producer].type != "softmax") return -1;
  const int32_t is_nan = chain_producer(p, input_of(p, where, 0), "equal");
  if (is_nan < 0 || !is_param(p, input_of(p, is_nan, 1))) return -1;
  const Tensor& f = p.param(input_of(p, is_nan, 1));
  if (f.dtype() != DType::boolean || f.numel() != 1 || f.to_vector<uint8_t>()[0] != 0) return -1;
  const int32_t same = chain_producer(p, input_of(p, is_nan, 0), "equal");
  if (same < 0 || input_of(p, same, 0) != s || input_of(p, same, 1) != s || p.is_output(s) || p.users(s).size() != 2) return -1;
  chain.insert(chain.end(), {where, is_nan, same});
  return sv.producer;
}

// k for k^T = reshape(transpose(reshape(k, [b*h, l, d]), [0, 2, 1]), [b, h, d, l]) (the three ops go in
// `chain`), or kNoValue.
ValueId heads_merged_key(const Program& p, ValueId kt, std::vector<int32_t>& chain) {
  const int32_t back = chain_producer(p, kt, "reshape");
  if (back < 0) return kNoValue;
  const int32_t tr = chain_producer(p, input_of(p, back, 0), "transpose");
  if (tr < 0 || attr_ints(p.ops()[tr], "perm") != std::vector<int64_t>{0, 2, 1}) return kNoValue;
  const int32_t merge = chain_producer(p, input_of(p, tr, 0), "reshape");
  if (merge < 0) return kNoValue;
  const ValueId k = input_of(p, merge, 0);
  const Shape &k4 = p.value(k).type.shape, &merged = p.value(input_of(p, tr, 0)).type.shape, &t4 = p.value(kt).type.shape;
  if (k4.size() != 4 || merged.size() != 3 || t4.size() != 4) return kNoValue;
  const int64_t b = k4[0], h = k4[1], l = k4[2], d = k4[3];
  if (h < 1 || l < 1 || d < 1 || merged[1] != l || merged[2] != d || t4[1] != h || t4[2] != d || t4[3] != l) return kNoValue;
  if (b < 0 ? merged[0] >= 0 || t4[0] >= 0 : merged[0] != b * h || t4[0] != b) return kNoValue;
  chain.insert(chain.end(), {back, tr, merge});
  return k;
}

// Peels `x * c`, `c * x` and `x / c` with scalar constants c off v, multiplying them into m.scale.
ValueId peel_factors(const Program& p, ValueId v, AttentionMatch& m) {
  for (;;) {
    int32_t op = chain_producer(p, v, "mul");
    if (op < 0) op = chain_producer(p, v, "div");
    if (op < 0) return v;
    const ValueId a = input_of(p, op, 0), b = input_of(p, op, 1);
    const bool div = p.ops()[op].type == "div";
    std::optional<double> c = scalar_constant(p, b);
    ValueId rest = a;
    if (!c && !div) c = scalar_constant(p, a), rest = b;
    if (!c || *c == 0) return v;
    // The product must keep v's shape: a factor that broadcasts it up is not a scale.
    if (p.value(rest).type.shape != p.value(v).type.shape) return v;
    m.scale *= div ? 1.0 / *c : *c;
    m.chain.push_back(op);
    v = rest;
  }
}

bool compatible(int64_t a, int64_t b) { return a == b || a == -1 || b == -1; }

bool shapes_fit(const Program& p, const AttentionMatch& m) {
  const Shape &q = p.value(m.q).type.shape, &v = p.value(m.v).type.shape;
  Shape k = p.value(m.k).type.shape;
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return false;
  if (m.k_by_len) std::swap(k[1], k[2]);
  const DType dt = p.value(m.q).type.dtype;
  if ((dt != DType::f32 && dt != DType::f64) || p.value(m.k).type.dtype != dt || p.value(m.v).type.dtype != dt) return false;
  if (!compatible(q[0], k[0]) || !compatible(q[0], v[0]) || q[3] != k[3] || k[1] != v[1] || k[2] != v[2]) return false;
  return k[1] > 0 && q[1] % k[1] == 0;
}

std::optional<AttentionMatch> find_attention(const Program& p, int32_t i) {
  const Operation& out = p.ops()[i];
  if (attr_bool(out, "transpose_x") || attr_bool(out, "transpose_y")) return std::nullopt;
  AttentionMatch m;
  m.v = input_of(p, i, 1);
  int32_t softmax = chain_producer(p, input_of(p, i, 0), "softmax");
  if (softmax < 0) softmax = softmax_with_nan_rows_zeroed(p, input_of(p, i, 0), m.chain);
  if (softmax < 0) return std::nullopt;
  const ValueId logits = input_of(p, softmax, 0);
  const int64_t rank = static_cast<int64_t>(p.value(logits).type.shape.size());
  const int64_t axis = attr_int(p.ops()[softmax], "axis");
  if (rank != 4 || (axis != -1 && axis != rank - 1)) return std::nullopt;
  m.chain.push_back(softmax);

  ValueId scores = logits;
  if (const int32_t add = chain_producer(p, logits, "add"); add >= 0) {
    // The scores side is the one a matmul (perhaps scaled) produced; the other is the mask.
    for (int side = 0; side < 2 && m.mask == kNoValue; ++side) {
      const ValueId s = input_of(p, add, side), mask = input_of(p, add, 1 - side);
      const Value& sv = p.value(s);
      if (sv.kind != ValueKind::OpResult || sv.producer < 0) continue;
      const std::string& t = p.ops()[sv.producer].type;
      if (t != "matmul" && t != "mul" && t != "div") continue;
      if (p.value(logits).type.shape != sv.type.shape || p.value(mask).type.dtype != sv.type.dtype) continue;
      if (p.value(mask).type.shape.size() > 4) continue;
      scores = s, m.mask = mask;
    }
    if (m.mask == kNoValue) return std::nullopt;
    m.chain.push_back(add);
  }
  scores = peel_factors(p, scores, m);
  const int32_t qk = chain_producer(p, scores, "matmul");
  if (qk < 0 || attr_bool(p.ops()[qk], "transpose_x")) return std::nullopt;
  m.chain.push_back(qk);
  m.q = peel_factors(p, input_of(p, qk, 0), m);
  ValueId kt = peel_factors(p, input_of(p, qk, 1), m);
  if (!attr_bool(p.ops()[qk], "transpose_y")) {
    const int32_t tr = chain_producer(p, kt, "transpose");
    if (tr < 0) {
      m.k = heads_merged_key(p, kt, m.chain);
      if (m.k == kNoValue || !shapes_fit(p, m)) return std::nullopt;
      m.chain.push_back(i);
      return m;
    }
    const std::vector<int64_t> perm = attr_ints(p.ops()[tr], "perm");
    m.k_by_len = perm == std::vector<int64_t>{0, 2, 3, 1};
    if (perm != std::vector<int64_t>{0, 1, 3, 2} && !m.k_by_len) return std::nullopt;
    m.chain.push_back(tr);
    kt = peel_factors(p, input_of(p, tr, 0), m);
  }
  m.k = kt;
  if (!shapes_fit(p, m)) return std::nullopt;
  m.chain.push_back(i);
  return m;
}

class AttentionFusion final : public Pass {
 public:
  std::string name() const override { return "attention_fuse"; }
  std::string doc() const override { return "matmul -> scale -> mask -> softmax -> matmul -> scaled_dot_product_attention"; }
  std::vector<std::string> targets() const override { return {"matmul"}; }
  bool match(const Program& p, int32_t i) const override { return find_attention(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    AttentionMatch m = *find_attention(p, i);
    ValueId k = m.k;
    if (m.k_by_len) {  // [batch, len, heads, dim] -> [batch, heads, len, dim], in front of the chain's last op
      k = p.insert_op(i, "transpose", {{m.k}}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}})[0];
      for (int32_t& op : m.chain) op += op >= i ? 1 : 0;
      ++i;
    }
    const std::vector<std::vector<ValueId>> inputs = {{m.q}, {k}, {m.v}, m.mask == kNoValue ? std::vector<ValueId>{} : std::vector<ValueId>{m.mask}};
    replace_chain(p, i, "scaled_dot_product_attention", inputs, {{"scale", m.scale}, {"seed", int64_t{0}}}, m.chain, stats);
  }
};

}  // namespace

std::unique_ptr<Pass> attention_fusion() { return std::make_unique<AttentionFusion>(); }

}  // namespace pd::ir::passes
