// Python slice semantics for one axis, shared by the slice view and the slice_grad kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "pd/core/error.h"
#include "pd/core/shape.h"

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

// slice_grad's slice as a strided box in its input: per dim the first index, the extent and the step
// (dims not in `axes` are taken whole). Checks the arguments and that `grad` has the box's shape.
struct SliceBox {
  Shape first, box, step;
};
inline SliceBox slice_box(const Shape& in, const Shape& grad, const std::vector<int64_t>& axes,
                          const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                          const std::vector<int64_t>& steps) {
  PD_CHECK(starts.size() == axes.size() && ends.size() == axes.size() && (steps.empty() || steps.size() == axes.size()),
           ErrorCode::kInvalidArgument,
           "slice_grad: arguments 'starts', 'ends' and 'steps' must have one value per axis ({}), but received {}, {} "
           "and {}", axes.size(), starts.size(), ends.size(), steps.size());
  const int64_t nd = static_cast<int64_t>(in.size());
  SliceBox b{Shape(in.size(), 0), in, Shape(in.size(), 1)};
  for (size_t a = 0; a < axes.size(); ++a) {
    const int64_t d = normalize_axis(axes[a], nd, "slice_grad: argument 'axes'");
    b.step[d] = steps.empty() ? 1 : steps[a];
    normalize_slice(in[d], starts[a], ends[a], b.step[d], b.first[d], b.box[d]);
  }
  PD_CHECK(grad == b.box, ErrorCode::kShape, "slice_grad: argument 'grad' must have the slice's shape {}, but received {}",
           shape_str(b.box), shape_str(grad));
  return b;
}

namespace cpu {
using kernels::normalize_slice;
using kernels::SliceBox;
using kernels::slice_box;
}  // namespace cpu

}  // namespace pd::kernels
