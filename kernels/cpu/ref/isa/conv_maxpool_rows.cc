// fused_conv2d_maxpool's direct kernels compiled for one instruction set. The build compiles this file
// once per set (libcore/CMakeLists.txt, pd_add_isa_variants), through a wrapper that defines
//   PD_ISA         the vector type of conv_maxpool_simd.h (Avx2, Avx512)
//   PD_ISA_FN(f)   f with the set's suffix (pooled_rows_avx2)
//   PD_ISA_TARGET  the target string ("avx2,fma")
// (the build targets baseline x86-64); conv_maxpool.cc calls them only after the runtime check in
// pd/core/cpu_features.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/ref/conv_maxpool_block.h"
#include "elementwise_ops.h"

#if defined(__x86_64__)
#include "cpu/ref/conv_maxpool_simd.h"

#include "cpu/common/target_pragma.h"

// The kernel templates after every other header, so that only their code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/conv_maxpool_channels.h"
#include "cpu/ref/conv_maxpool_columns.h"

namespace pd::kernels::reference::direct {

void PD_ISA_FN(pooled_rows)(const Geom& g, int64_t n, int64_t p0, int64_t p1) {
  return g.cv ? pooled_rows_by_channels<PD_ISA>(g, n, p0, p1) : pooled_rows_by_columns<PD_ISA>(g, n, p0, p1);
}

}  // namespace pd::kernels::reference::direct
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and the composition always runs

namespace pd::kernels::reference::direct {
void PD_ISA_FN(pooled_rows)(const Geom&, int64_t, int64_t, int64_t) {}
}  // namespace pd::kernels::reference::direct

#endif
