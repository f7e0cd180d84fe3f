#include "pd/core/shape.h"

#include <fmt/format.h>

#include "pd/core/error.h"

namespace pd {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    PD_CHECK(d >= 0, ErrorCode::kShape, "shape {} has a negative extent", shape_str(shape));
    PD_CHECK(!__builtin_mul_overflow(n, d, &n), ErrorCode::kShape,
             "shape {} has more elements than fit in int64", shape_str(shape));
  }
  return n;
}

void check_shape_limits(const Shape& shape, const std::string& what, bool allow_unknown) {
  PD_CHECK(static_cast<int64_t>(shape.size()) <= kMaxRank, ErrorCode::kShape,
           "{}: rank {} is above the limit of {} dimensions", what, shape.size(), kMaxRank);
  // The running product counts a 0 extent as 1, so that an empty tensor's strides stay in range too, and
  // saturates at kMaxNumel + 1, so it never overflows.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == -1 && allow_unknown) continue;
    PD_CHECK(d >= 0, ErrorCode::kShape, "{}: shape {} has a negative extent", what, shape_str(shape));
    PD_CHECK(d <= kMaxNumel, ErrorCode::kShape, "{}: shape {} has an extent above the limit of {}", what,
             shape_str(shape), kMaxNumel);
    const int64_t f = std::max<int64_t>(d, 1);
    n = n > kMaxNumel / f ? kMaxNumel + 1 : n * f;
  }
  PD_CHECK(n <= kMaxNumel, ErrorCode::kShape, "{}: shape {} has more than {} elements (the limit; a 0 extent counts as 1)",
           what, shape_str(shape), kMaxNumel);
}

int64_t checked_numel(const Shape& shape, const std::string& what) {
  check_shape_limits(shape, what);
  return shape_numel(shape);
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  // Unsigned, so that an empty tensor whose other extents multiply past int64 (its strides are never
  // used to address anything) wraps instead of overflowing a signed product (found by fuzz_idx, UBSan).
  uint64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = static_cast<int64_t>(s);
    s *= static_cast<uint64_t>(std::max<int64_t>(shape[i], 1));
  }
  return strides;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* what) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  PD_CHECK(axis >= lo && axis <= hi, ErrorCode::kOutOfRange,
           "{}: axis {} is out of range for a {}-D tensor (expected {} <= axis <= {})", what, axis, ndim, lo, hi);
  return axis < 0 ? axis + std::max<int64_t>(ndim, 1) : axis;
}

}  // namespace pd
