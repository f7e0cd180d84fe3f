// Python slice semantics for one axis, shared by the slice view and the slice_grad kernel.
#pragma once
#include <cstdint>

#include "pd/core/error.h"

namespace pd::kernels {

// Resolves x[start:end:step] on an axis of extent `dim` like Python's slice.indices(): negative start
// and end count from the end, then both clamp into range ([0, dim] for a positive step, [-1, dim - 1]
// for a negative one). Gives the first index taken and how many are taken (index first + k * step).
inline void normalize_slice(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t& first, int64_t& count) {
  PD_CHECK(step != 0, ErrorCode::kInvalidArgument, "slice: argument 'steps' must not contain 0, but received {}", step);
  const int64_t lower = step > 0 ? 0 : -1;
  const int64_t upper = step > 0 ? dim : dim - 1;
  auto clamp = [&](int64_t v) {
    if (v < 0) v = v < -dim ? lower : v + dim;  // compare first: no overflow for INT64_MIN
    if (v < lower) v = lower;
    if (v > upper) v = upper;
    return v;
  };
  start = clamp(start);
  end = clamp(end);
  first = start;
  if (step > 0) {
    count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    // A step below -dim takes one element (and -INT64_MIN would overflow).
    count = start > end ? (step < -dim ? 1 : (start - end - 1) / (-step) + 1) : 0;
  }
}

namespace cpu {
using kernels::normalize_slice;
}  // namespace cpu

}  // namespace pd::kernels
