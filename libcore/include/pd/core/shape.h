// Shape: int64 extents. A 0-D tensor has shape {} and one element; any zero extent makes it empty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pd {

using Shape = std::vector<int64_t>;

// Limits on shapes that come from outside (files, importers, model YAML). Every reader checks what a
// file declares against them before allocating, and against the file's real size where the data is in
// the file (docs/testing.md). They bound what a file may ask for, not what the library can compute.
inline constexpr int64_t kMaxRank = 64;                  // oneDNN and CUDA copies stop at 12; the reference kernels go on
inline constexpr int64_t kMaxNumel = int64_t{1} << 40;   // elements of one tensor (4 TiB of f32); also bounds each extent

// Number of elements; throws pd::Error on negative extents or int64 overflow.
int64_t shape_numel(const Shape& shape);
// Throws pd::Error (kShape) "WHAT: ..." unless rank <= kMaxRank, every extent is in [0, kMaxNumel] (or
// -1, "unknown", when allow_unknown) and the known extents multiply to at most kMaxNumel.
void check_shape_limits(const Shape& shape, const std::string& what, bool allow_unknown = false);
// check_shape_limits for a concrete shape, then its element count.
int64_t checked_numel(const Shape& shape, const std::string& what);
// Row-major strides in elements.
Shape contiguous_strides(const Shape& shape);
// "[2, 3, 4]"; "[]" for 0-D.
std::string shape_str(const Shape& shape);
// Maps a possibly negative axis into [0, ndim); `what` names the op and argument for the error.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* what);

}  // namespace pd
