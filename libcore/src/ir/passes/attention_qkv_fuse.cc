// Multi-head attention around scaled_dot_product_attention, as a fused QKV projection feeds it ->
// qkv_attention, which reads the heads in place and writes them side by side:
//
//   q, k, v = split(y, [H E, Hk E, Hk E], last axis)
//   each -> reshape [N, L, heads, E] -> transpose [0, 2, 1, 3]
//   o = scaled_dot_product_attention(q, k, v [, mask])  ->  transpose [0, 2, 1, 3] -> reshape [N, L, H E]
//
// becomes qkv_attention(y [, mask]): no split, no transposed copies in or out (the kernel runs through
// strides). A lowering pass: the op has no gradient, so programs that train keep the general form.
// Preconditions, cheapest first: no dropout; the log-sum-exp unread; every intermediate read once,
// inside the chain, and not a graph output; the split is y's whole last axis in the order q, k, v; the
// reshapes only split that axis into (heads, E) and keep L; both transposes are [0, 2, 1, 3]; the output
// reshape merges the heads back; self attention (q, k and v have one length); f32 on a target whose
// CPU runs the vector kernel (AVX2), elsewhere the portable kernel would gather copies anyway.
#include <optional>

#include "chain.h"
#include "passes.h"

namespace pd::ir::passes {
namespace {

struct QkvMatch {
  ValueId qkv = kNoValue, mask = kNoValue;
  int64_t heads = 0, kv_heads = 0;
  int32_t merge = -1;          // the final reshape, whose result the fused op takes over
  std::vector<int32_t> chain;  // every op that disappears
};

const std::vector<int64_t> kSwapHeads = {0, 2, 1, 3};

// v = transpose(reshape(part, [N, L, heads, E]), [0, 2, 1, 3]) read only by the attention: returns the
// split result `part`, and the heads through `heads`.
ValueId head_view(const Program& p, ValueId v, int64_t& heads, std::vector<int32_t>& chain) {
  const int32_t tr = chain_producer(p, v, "transpose");
  if (tr < 0 || attr_ints(p.ops()[tr], "perm") != kSwapHeads) return kNoValue;
  const ValueId r = input_of(p, tr, 0);
  const int32_t rs = chain_producer(p, r, "reshape");
  if (rs < 0) return kNoValue;
  const ValueId part = input_of(p, rs, 0);
  const Shape &in = p.value(part).type.shape, &out = p.value(r).type.shape;
  if (in.size() != 3 || out.size() != 4 || out[1] != in[1] || out[1] < 0 || out[2] <= 0 || out[3] <= 0 ||
      out[2] * out[3] != in[2])
    return kNoValue;
  heads = out[2];
  chain.insert(chain.end(), {tr, rs});
  return part;
}

std::optional<QkvMatch> find_qkv(const Program& p, int32_t i) {
  const Operation& att = p.ops()[i];
  if (attr_float(att, "dropout_p") != 0 || !p.users(att.results[1]).empty() || p.is_output(att.results[1])) return std::nullopt;
  QkvMatch m;
  // The way out: transpose back, then merge the heads.
  const ValueId o = att.results[0];
  const std::vector<int32_t> o_users = p.users(o);
  if (p.is_output(o) || o_users.size() != 1 || p.ops()[o_users[0]].type != "transpose" ||
      attr_ints(p.ops()[o_users[0]], "perm") != kSwapHeads)
    return std::nullopt;
  const int32_t back = o_users[0];
  const ValueId t = p.ops()[back].results[0];
  const std::vector<int32_t> t_users = p.users(t);
  if (p.is_output(t) || t_users.size() != 1 || p.ops()[t_users[0]].type != "reshape") return std::nullopt;
  m.merge = t_users[0];
  const Shape &ts = p.value(t).type.shape, &merged = p.value(p.ops()[m.merge].results[0]).type.shape;
  if (merged.size() != 3 || merged[1] != ts[1] || ts[2] <= 0 || ts[3] <= 0 || merged[2] != ts[2] * ts[3]) return std::nullopt;
  // The way in: three head views of one split.
  int64_t heads[3] = {0, 0, 0};
  ValueId parts[3];
  for (int s = 0; s < 3; ++s)
    if ((parts[s] = head_view(p, input_of(p, i, static_cast<size_t>(s)), heads[s], m.chain)) == kNoValue) return std::nullopt;
  const Value& first = p.value(parts[0]);
  if (first.kind != ValueKind::OpResult || first.producer < 0) return std::nullopt;
  const int32_t split = first.producer;
  const Operation& sp = p.ops()[split];
  if (sp.type != "split" || sp.results.size() != 3) return std::nullopt;
  for (int s = 0; s < 3; ++s)
    if (sp.results[static_cast<size_t>(s)] != parts[s]) return std::nullopt;  // q, k, v in this order
  m.qkv = input_of(p, split, 0);
  const ir::ValueType& y = p.value(m.qkv).type;
  const int64_t axis = attr_int(sp, "axis");
  if (y.dtype != DType::f32 || y.shape.size() != 3 || (axis != -1 && axis != 2)) return std::nullopt;
  if (heads[1] != heads[2] || heads[0] % heads[1] != 0) return std::nullopt;
  m.heads = heads[0], m.kv_heads = heads[1];
  m.mask = input_of(p, i, 3);
  m.chain.insert(m.chain.end(), {split, i, back, m.merge});
  return m;
}

class AttentionQkvFusion final : public Pass {
 public:
  std::string name() const override { return "attention_qkv_fuse"; }
  std::string doc() const override { return "split -> reshape/transpose heads -> scaled_dot_product_attention -> transpose/reshape -> qkv_attention"; }
  std::vector<std::string> targets() const override { return {"scaled_dot_product_attention"}; }
  bool lowering() const override { return true; }
  bool supports(const Target& t) const override { return t.has_isa(CpuIsa::avx2); }
  bool match(const Program& p, int32_t i) const override { return find_qkv(p, i).has_value(); }

  void rewrite(Program& p, int32_t i, PassStats& stats) const override {
    const QkvMatch m = *find_qkv(p, i);
    const Operation& att = p.ops()[i];
    std::vector<std::vector<ValueId>> inputs = {{m.qkv}, m.mask == kNoValue ? std::vector<ValueId>{} : std::vector<ValueId>{m.mask}};
    replace_chain(p, m.merge, "qkv_attention", inputs,
                  {{"num_heads", m.heads}, {"num_kv_heads", m.kv_heads}, {"is_causal", attr_bool(att, "is_causal")},
                   {"scale", attr_float(att, "scale")}},
                  m.chain, stats);
  }
};

}  // namespace

std::unique_ptr<Pass> attention_qkv_fusion() { return std::make_unique<AttentionQkvFusion>(); }

}  // namespace pd::ir::passes
