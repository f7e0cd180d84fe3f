// Gathering a strided view into dense memory on the host (Tensor::contiguous on the CPU): the copy
// behind every transpose, slice and expand that a kernel reads.
#pragma once

#include <cstddef>

#include "pd/core/shape.h"

namespace pd::detail {

// dst (dense, `shape` in row-major order) <- the elements of size `elem` that src holds at `strides`
// (in elements). Dimensions of extent 1 are dropped and dense neighbours merged first; then rows are
// one memcpy each where the innermost stride is 1, a permutation that moves the unit-stride axis
// (NCHW <-> NHWC, the attention heads' [N, L, H, E] <-> [N, H, L, E]) is copied in square tiles, so
// that both reads and writes stay in cache lines, and anything else element by element. Large
// copies spread over the OpenMP threads.
void copy_strided_host(void* dst, const void* src, size_t elem, const Shape& shape, const Shape& strides);

}  // namespace pd::detail
