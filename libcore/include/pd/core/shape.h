// Shape: int64 extents. A 0-D tensor has shape {} and one element; any zero extent makes it empty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pd {

using Shape = std::vector<int64_t>;

// Number of elements; throws pd::Error on negative extents or int64 overflow.
int64_t shape_numel(const Shape& shape);
// Row-major strides in elements.
Shape contiguous_strides(const Shape& shape);
// "[2, 3, 4]"; "[]" for 0-D.
std::string shape_str(const Shape& shape);
// Maps a possibly negative axis into [0, ndim); `what` names the op and argument for the error.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* what);

}  // namespace pd
