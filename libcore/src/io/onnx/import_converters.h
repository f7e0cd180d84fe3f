// What the converter files share: small helpers, and the shape converters (import_shape_ops.cc) that
// the table in import_ops.cc names.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
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

// The symbol's extent and its factor: "batch*64" is ("batch", 64), "batch" ("batch", 1); a name that does
// not end in "*digits" (an exporter's "s0*s1") is an extent of its own.
inline std::pair<std::string, int64_t> scaled(const std::string& symbol) {
  const size_t star = symbol.rfind('*');
  if (star == std::string::npos || star + 1 == symbol.size() || symbol.size() - star > 18 ||
      !std::all_of(symbol.begin() + static_cast<std::ptrdiff_t>(star) + 1, symbol.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return {symbol, 1};
  return {symbol.substr(0, star), std::stoll(symbol.substr(star + 1))};
}

inline std::string scaled_symbol(const std::string& extent, int64_t factor) {
  return factor == 1 ? extent : fmt::format("{}*{}", extent, factor);
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
void expand(NodeContext& c);
void pad(NodeContext& c);

// Indexing: import_index_ops.cc.
void gather(NodeContext& c);
void gather_nd(NodeContext& c);
void gather_elements(NodeContext& c);
void scatter_nd(NodeContext& c);

// Convolution and pooling: import_conv_ops.cc.
void conv(NodeContext& c);
void conv_transpose(NodeContext& c);
void max_pool(NodeContext& c);
void average_pool(NodeContext& c);
void global_average_pool(NodeContext& c);
void global_max_pool(NodeContext& c);

// Resize and Upsample as interpolate: import_resize.cc.
void resize(NodeContext& c);
void upsample(NodeContext& c);

// Arithmetic and comparisons on shape computations with dynamic extents: import_symbolic_ops.cc.
void mul(NodeContext& c);
void div(NodeContext& c);
void equal(NodeContext& c);
void where(NodeContext& c);

}  // namespace pd::io::onnx_import
