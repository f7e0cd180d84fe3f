// scaled_dot_product_attention's float tile kernels (attention_tiles.h) compiled for one instruction
// set. The build compiles this file once per set (libcore/CMakeLists.txt, pd_add_isa_variants), with
// PD_ISA the vector type of simd.h and PD_ISA_FN(f) f with the set's suffix; attention.cc calls them
// after the CPU check (widest.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/ref/attention_common.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

// The kernel templates after every other header, so that only their code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/attention_tiles.h"

namespace pd::kernels::reference::attention {

void PD_ISA_FN(forward_item)(const Geometry& g, const Tensors& t, int64_t nh, int64_t i0, float* scratch) {
  forward_item<simd::PD_ISA>(g, t, nh, i0, scratch);
}
void PD_ISA_FN(backward_item)(const Geometry& g, const Tensors& t, int64_t item, float* scratch) {
  backward_item<simd::PD_ISA>(g, t, item, scratch);
}

}  // namespace pd::kernels::reference::attention
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and the portable kernel always runs

namespace pd::kernels::reference::attention {
void PD_ISA_FN(forward_item)(const Geometry&, const Tensors&, int64_t, int64_t, float*) {}
void PD_ISA_FN(backward_item)(const Geometry&, const Tensors&, int64_t, float*) {}
}  // namespace pd::kernels::reference::attention
#endif
