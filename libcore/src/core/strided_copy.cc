#include "strided_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pd/core/thread_pool.h"

namespace pd::detail {
namespace {

// The copy's dimensions after dropping extent-1 axes and merging each axis into its outer neighbour
// where the two are dense together (stride[d] == stride[d + 1] * extent[d + 1]).
struct Dims {
  Shape extent, stride;
};

Dims simplify(const Shape& shape, const Shape& strides) {
  Dims d;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!d.extent.empty() && d.stride.back() == strides[i] * shape[i]) {
      d.extent.back() *= shape[i];
      d.stride.back() = strides[i];
    } else {
      d.extent.push_back(shape[i]);
      d.stride.push_back(strides[i]);
    }
  }
  return d;
}

// Offsets of the `index`-th position of an odometer over `extent` (outermost first), in source
// elements and in dense destination elements.
struct Offsets {
  int64_t src = 0, dst = 0;
};

Offsets odometer(int64_t index, const Shape& extent, const Shape& src_stride, const Shape& dst_stride) {
  Offsets o;
  for (int64_t d = static_cast<int64_t>(extent.size()) - 1; d >= 0; --d) {
    const int64_t i = index % extent[d];
    index /= extent[d];
    o.src += i * src_stride[d];
    o.dst += i * dst_stride[d];
  }
  return o;
}

// Runs f(item) for item in [0, n), over the pool's threads when the copy is large enough to pay.
template <typename F>
void for_items(int64_t n, int64_t bytes, F&& f) {
  if (n > 1 && bytes >= (int64_t{1} << 18)) {
    parallel_items(n, f);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

// One [rows, cols] tile of a transposition: dst[r * dst_row + c] = src[r + c * src_col] (in elements of
// E bytes; the source is dense along r). A memcpy of a constant E bytes is one load and one store, and
// says nothing about the elements' type.
template <size_t E>
void transpose_tile(char* dst, const char* src, int64_t rows, int64_t cols, int64_t dst_row, int64_t src_col) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) std::memcpy(dst + (r * dst_row + c) * E, src + (r + c * src_col) * E, E);
}

template <size_t E>
void gather_row(char* dst, const char* src, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * E, src + i * stride * E, E);
}

// Calls f(std::integral_constant<size_t, elem>) for the element sizes of the dtypes; false for others.
template <typename F>
bool with_size(size_t elem, F&& f) {
  switch (elem) {
    case 1: f(std::integral_constant<size_t, 1>{}); return true;
    case 2: f(std::integral_constant<size_t, 2>{}); return true;
    case 4: f(std::integral_constant<size_t, 4>{}); return true;
    case 8: f(std::integral_constant<size_t, 8>{}); return true;
    default: return false;
  }
}

}  // namespace

void copy_strided_host(void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  char* out = static_cast<char*>(dst);
  const char* in = static_cast<const char*>(src);
  const auto esize = static_cast<int64_t>(elem);
  const Dims d = simplify(shape, strides);
  const int64_t nd = static_cast<int64_t>(d.extent.size());
  if (nd == 0) {
    std::memcpy(out, in, elem);
    return;
  }
  const Shape dense = contiguous_strides(d.extent);
  const int64_t bytes = n * esize;
  const int64_t last = d.extent[nd - 1];

  // Dense rows: one memcpy each.
  if (d.stride[nd - 1] == 1) {
    const Shape outer(d.extent.begin(), d.extent.end() - 1);
    const int64_t rows = n / last;
    for_items(rows, bytes, [&](int64_t r) {
      const Offsets o = odometer(r, outer, d.stride, dense);
      std::memcpy(out + o.dst * esize, in + o.src * esize, static_cast<size_t>(last * esize));
    });
    return;
  }

  // A permutation that moves the unit-stride axis `a` inwards: square tiles of [axis a, last axis],
  // read down a and written along the last axis.
  const auto unit = std::find(d.stride.begin(), d.stride.end() - 1, int64_t{1});
  if (unit != d.stride.end() - 1) {
    const int64_t a = unit - d.stride.begin();
    constexpr int64_t kTile = 32;
    Shape extent = d.extent, src_stride = d.stride, dst_stride = dense;
    const int64_t rows = extent[a], row_tiles = (rows + kTile - 1) / kTile, col_tiles = (last + kTile - 1) / kTile;
    const int64_t src_col = d.stride[nd - 1], dst_row = dense[a];
    // The odometer walks every other axis, then the tiles.
    extent[a] = row_tiles;
    src_stride[a] = kTile;
    dst_stride[a] = kTile * dst_row;
    extent[nd - 1] = col_tiles;
    src_stride[nd - 1] = kTile * src_col;
    dst_stride[nd - 1] = kTile;
    const int64_t items = n / (rows * last) * row_tiles * col_tiles;
    int64_t tiles_inside_a = 1;  // odometer positions per step of axis a
    for (int64_t k = a + 1; k < nd; ++k) tiles_inside_a *= extent[k];
    const bool typed = with_size(elem, [&](auto size) {
      for_items(items, bytes, [&](int64_t item) {
        const Offsets o = odometer(item, extent, src_stride, dst_stride);
        const int64_t tile_col = item % col_tiles, tile_row = item / tiles_inside_a % row_tiles;
        const int64_t tr = std::min(kTile, rows - tile_row * kTile), tc = std::min(kTile, last - tile_col * kTile);
        transpose_tile<decltype(size)::value>(out + o.dst * esize, in + o.src * esize, tr, tc, dst_row, src_col);
      });
    });
    if (typed) return;
  }

  // Anything else: element by element along the innermost axis.
  const Shape outer(d.extent.begin(), d.extent.end() - 1);
  const int64_t rows = n / last, stride = d.stride[nd - 1];
  const bool typed = with_size(elem, [&](auto size) {
    for_items(rows, bytes, [&](int64_t r) {
      const Offsets o = odometer(r, outer, d.stride, dense);
      gather_row<decltype(size)::value>(out + o.dst * esize, in + o.src * esize, last, stride);
    });
  });
  if (typed) return;
  for (int64_t r = 0; r < rows; ++r) {
    const Offsets o = odometer(r, outer, d.stride, dense);
    for (int64_t i = 0; i < last; ++i)
      std::memcpy(out + (o.dst + i) * esize, in + (o.src + i * stride) * esize, elem);
  }
}

}  // namespace pd::detail
