// Helpers of the passes that fuse a chain of ops written out one by one (attention_fuse, layer_norm_fuse,
// gelu_fuse): each intermediate of the chain must be read by the next op only, so that it disappears.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "pd/ir/pass.h"

namespace pd::ir::passes {

// The op producing v when it is of `type` and v feeds only one op and is not a graph output; -1 otherwise.
inline int32_t chain_producer(const Program& p, ValueId v, const char* type) {
  const Value& val = p.value(v);
  if (val.kind != ValueKind::OpResult || val.producer < 0 || p.ops()[val.producer].type != type) return -1;
  if (p.is_output(v) || p.users(v).size() != 1) return -1;
  return val.producer;
}

// The value of a one-element f32 / f64 param.
inline std::optional<double> scalar_constant(const Program& p, ValueId v) {
  if (!is_param(p, v)) return std::nullopt;
  const Tensor& t = p.param(v);
  if (t.numel() != 1 || (t.dtype() != DType::f32 && t.dtype() != DType::f64)) return std::nullopt;
  return t.to_vector<double>()[0];
}

// Replaces a matched chain by one op: inserts `type` where the chain's last op `at` is (every input is
// defined before it), points the readers of `at`'s first result to the new op's first result, removes
// the chain's ops (indices into the program before the insertion) and counts them as fused.
inline void replace_chain(Program& p, int32_t at, const std::string& type, const std::vector<std::vector<ValueId>>& inputs,
                          const AttrMap& attrs, const std::vector<int32_t>& chain, PassStats& stats) {
  const ValueId out = p.ops()[at].results[0];
  p.replace_uses(out, p.insert_op(at, type, inputs, attrs)[0]);
  std::vector<int32_t> remove;
  for (int32_t op : chain) remove.push_back(op >= at ? op + 1 : op);
  p.remove_ops(remove);
  stats.fused += static_cast<int64_t>(chain.size());
}

}  // namespace pd::ir::passes
