// A per-axis argument of the 2-D ops (kernel size, stride, padding, dilation), given as [] (the
// default), [v] (both axes) or [h, w]; the shape rules have checked its length.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pd::kernels {

inline int64_t spatial_arg(const std::vector<int64_t>& v, size_t axis, int64_t dflt) {
  if (v.empty()) return dflt;
  return v.size() == 1 ? v[0] : v[axis];
}

}  // namespace pd::kernels
