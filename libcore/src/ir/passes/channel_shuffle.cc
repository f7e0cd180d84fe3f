#include "channel_shuffle.h"

#include <algorithm>

namespace pd::ir::passes {

std::optional<ChannelShuffle> channel_shuffle_read(const Program& p, int32_t i) {
  const auto producer = [&](ValueId v, const char* type) -> const Operation* {
    if (v == kNoValue || p.value(v).kind != ValueKind::OpResult) return nullptr;
    const Operation& op = p.ops()[p.value(v).producer];
    return op.type == type ? &op : nullptr;
  };
  const Operation& op = p.ops()[i];
  int64_t start = 0, end = -1;
  const Operation* last = &op;
  if (op.type == "slice") {
    const std::vector<int64_t> axes = attr_ints(op, "axes"), steps = attr_ints(op, "steps");
    if (axes.size() != 1 || (axes[0] != 1 && axes[0] != -3) || !(steps.empty() || steps == std::vector<int64_t>{1})) return std::nullopt;
    start = attr_ints(op, "starts")[0], end = attr_ints(op, "ends")[0];
    last = producer(op.inputs[0][0], "reshape");
  } else if (op.type != "reshape") {
    return std::nullopt;
  }
  const Operation* transpose = last ? producer(last->inputs[0][0], "transpose") : nullptr;
  const Operation* split = transpose ? producer(transpose->inputs[0][0], "reshape") : nullptr;
  const Operation* concat = split ? producer(split->inputs[0][0], "concat") : nullptr;
  if (!concat || attr_ints(*transpose, "perm") != std::vector<int64_t>{0, 2, 1, 3, 4}) return std::nullopt;
  const int64_t axis = attr_int(*concat, "axis");
  const Shape& joined = p.value(concat->results[0]).type.shape;
  const Shape& groups = p.value(split->results[0]).type.shape;
  if ((axis != 1 && axis != -3) || joined.size() != 4 || p.value(concat->results[0]).type.dtype != DType::f32 || groups.size() != 5 ||
      p.value(last->results[0]).type.shape != joined)
    return std::nullopt;
  const int64_t C = joined[1], g = groups[1];
  if (C <= 0 || g <= 0 || groups[1] * groups[2] != C || groups[0] != joined[0] || groups[3] != joined[2] || groups[4] != joined[3])
    return std::nullopt;
  for (ValueId v : concat->inputs[0])
    if (p.value(v).type.shape.size() != 4 || p.value(v).type.shape[1] <= 0) return std::nullopt;
  // Channel c of the shuffle is channel (c % g) * (C / g) + c / g of the concat.
  const auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + C : v, int64_t{0}, C); };
  start = clamp(start), end = op.type == "slice" ? clamp(end) : C;
  if (start >= end) return std::nullopt;
  ChannelShuffle s{concat->results[0], {}};
  for (int64_t c = start; c < end; ++c) s.index.push_back((c % g) * (C / g) + c / g);
  return s;
}

bool read_only_by_slices(const Program& p, int32_t i) {
  const Operation& op = p.ops()[i];
  const std::vector<int32_t> readers = p.users(op.results[0]);
  return op.type == "reshape" && !p.is_output(op.results[0]) && !readers.empty() &&
         std::all_of(readers.begin(), readers.end(), [&](int32_t r) { return p.ops()[r].type == "slice" && channel_shuffle_read(p, r); });
}

bool shuffle_source(const Program& p, int32_t i) {
  for (int32_t split : p.users(p.ops()[i].results[0]))
    for (int32_t transpose : p.users(p.ops()[split].results[0]))
      for (int32_t last : p.users(p.ops()[transpose].results[0]))
        if (channel_shuffle_read(p, last)) return true;
  return false;
}

}  // namespace pd::ir::passes
