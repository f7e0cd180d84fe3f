// What the Paddle converter files share: small helpers, and the converters of shapes, data movement
// and constants (import_shape_ops.cc) that the table in import_ops.cc names.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "import_context.h"

namespace pd::io::paddle_import {

using ir::ValueId;
using Ints = std::vector<int64_t>;

inline int64_t rank_of(OpContext& c, ValueId v) { return static_cast<int64_t>(c.type(v).shape.size()); }

inline int64_t norm_axis(OpContext& c, int64_t axis, int64_t rank, const char* what = "axis") {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) c.fail(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return a;
}

inline void require_nchw(OpContext& c) {
  for (const char* key : {"data_format", "data_layout"}) {
    const std::string f = c.attr_string(key, "NCHW");
    if (f != "NCHW" && f != "AnyLayout") c.unsupported(fmt::format("{} '{}' (only NCHW models are supported)", key, f));
  }
}

// A 2-D op's window attribute: 2 values, or 1 for both axes.
inline Ints pair_attr(OpContext& c, const char* name, Ints def) {
  Ints v = c.attr_ints(name, def);
  if (v.size() == 1) v = {v[0], v[0]};
  if (v.size() != 2) c.fail(fmt::format("{} {} (expected 2 values for a 2-D op)", name, v));
  return v;
}

// import_upsampling_ops.cc
void interp_v2(OpContext& c);
void conv2d_transpose(OpContext& c);

// import_shape_ops.cc
void reshape2(OpContext& c);
void transpose2(OpContext& c);
void flatten_range(OpContext& c);
void flatten2(OpContext& c);
void unsqueeze2(OpContext& c);
void squeeze2(OpContext& c);
void concat(OpContext& c);
void shape(OpContext& c);
void slice(OpContext& c);
void split(OpContext& c);
void assign(OpContext& c);
void cast(OpContext& c);
void fill_constant(OpContext& c);

}  // namespace pd::io::paddle_import
