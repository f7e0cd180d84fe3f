// fused_conv2d_maxpool's direct kernels compiled for AVX2 + FMA (the build targets baseline x86-64);
// conv_maxpool.cc calls them only after the runtime check in pd/core/cpu_features.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/common/scalar_math.h"
#include "cpu/ref/conv_maxpool_block.h"

#if defined(__x86_64__)
#include "cpu/ref/conv_maxpool_simd.h"

// The kernel templates after every other header, so that only their code takes the target.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "cpu/ref/conv_maxpool_channels.h"
#include "cpu/ref/conv_maxpool_columns.h"

namespace pd::kernels::reference::direct {

void pooled_rows_avx2(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  return g.cv ? pooled_rows_by_channels<Avx2>(g, n, p0, p1) : pooled_rows_by_columns<Avx2>(g, n, p0, p1);
}

}  // namespace pd::kernels::reference::direct
#pragma GCC pop_options

#else  // not x86-64: the CPU checks are false and the composition always runs

namespace pd::kernels::reference::direct {
void pooled_rows_avx2(const Geom&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference::direct

#endif
