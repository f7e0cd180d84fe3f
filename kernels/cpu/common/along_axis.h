// Geometry of ops that work along one axis of a contiguous tensor (gather, take_along_axis, cumsum,
// sort, topk...): the tensor is [outer, n, inner], and element (o, k, i) is at (o * n + k) * inner + i.
// Index tensors (i32 or i64) are read as int64 with negative values wrapped and every value checked.
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/error.h"
#include "pd/core/shape.h"
#include "pd/core/tensor.h"

namespace pd::kernels::cpu {

struct AlongAxis {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * n + k) * inner + i; }
};

// The product of extents [begin, end) of `s` (1 for an empty range): the outer or inner size around
// an axis.
inline int64_t extent_product(const Shape& s, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t d = begin; d < end; ++d) p *= s[static_cast<size_t>(d)];
  return p;
}

// `axis` may be negative; a 0-D shape is one element along its only axis.
inline AlongAxis along_axis(const Shape& shape, int64_t axis, const char* op) {
  AlongAxis g;
  if (shape.empty()) return g;
  const int64_t a = normalize_axis(axis, static_cast<int64_t>(shape.size()), op);
  for (int64_t d = 0; d < a; ++d) g.outer *= shape[d];
  g.n = shape[a];
  for (size_t d = static_cast<size_t>(a) + 1; d < shape.size(); ++d) g.inner *= shape[d];
  return g;
}

// The values of `index` in [0, extent): negative ones count from the end; anything outside
// [-extent, extent) raises pd::Error naming the op, the value, the axis and its extent.
inline std::vector<int64_t> read_indices(const Tensor& index, int64_t extent, int64_t axis, const char* op) {
  std::vector<int64_t> v = index.to_vector<int64_t>();
  for (int64_t& i : v) {
    PD_CHECK(i >= -extent && i < extent, ErrorCode::kOutOfRange, "{}: index {} is out of range for axis {} of extent {}", op,
             i, axis, extent);
    if (i < 0) i += extent;
  }
  return v;
}

}  // namespace pd::kernels::cpu
