// Patterns of the QDQ form that the int8 lowerings (int8_lower, weight_only_lower) share.
#pragma once
#include <algorithm>

#include "pd/ir/pass.h"

namespace pd::ir::passes {

inline bool is_dequantize(const Program& p, ValueId v) {
  if (v == kNoValue) return false;
  const Value& val = p.value(v);
  return val.kind == ValueKind::OpResult && val.producer >= 0 && p.ops()[val.producer].type == "dequantize_linear";
}

inline bool all_zero(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  return std::all_of(v.begin(), v.end(), [](double e) { return e == 0.0; });
}

// The dequantize_linear producing `v` reads a symmetric i8 weight param, per output channel (axis
// `axis`) or per tensor.
inline bool quantized_weight(const Program& p, ValueId v, int64_t axis = 0) {
  if (!is_dequantize(p, v)) return false;
  const int32_t d = p.value(v).producer;
  const ValueId q = input_of(p, d, 0), s = input_of(p, d, 1), z = input_of(p, d, 2);
  if (!is_param(p, q) || !is_param(p, s) || !is_param(p, z) || p.value(q).type.dtype != DType::i8) return false;
  return (p.value(s).type.shape.empty() || attr_int(p.ops()[d], "axis") == axis) && all_zero(p.param(z));
}

}  // namespace pd::ir::passes
