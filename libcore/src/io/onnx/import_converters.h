// What the converter files share: small helpers, and the shape converters (import_shape_ops.cc) that
// the table in import_ops.cc names.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "import_context.h"

namespace pd::io::onnx_import {

using ir::ValueId;
using Ints = std::vector<int64_t>;

inline int64_t rank_of(NodeContext& c, ValueId v) { return static_cast<int64_t>(c.type(v).shape.size()); }

inline int64_t norm_axis(NodeContext& c, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) c.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return a;
}

// Shapes, constants and data movement: import_shape_ops.cc.
void shape(NodeContext& c);
void size(NodeContext& c);
void constant(NodeContext& c);
void constant_of_shape(NodeContext& c);
void range(NodeContext& c);
void reshape(NodeContext& c);
void flatten(NodeContext& c);
void transpose(NodeContext& c);
void unsqueeze(NodeContext& c);
void squeeze(NodeContext& c);
void concat(NodeContext& c);
void split(NodeContext& c);
void slice(NodeContext& c);
void gather(NodeContext& c);
void mul(NodeContext& c);
void div(NodeContext& c);
void equal(NodeContext& c);
void where(NodeContext& c);
void expand(NodeContext& c);
void pad(NodeContext& c);
void scatter_nd(NodeContext& c);

}  // namespace pd::io::onnx_import
