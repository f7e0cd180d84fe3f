// The float quantize loops of quantize_run.h compiled for one instruction set (libcore/CMakeLists.txt,
// pd_add_isa_variants); quantize.cc calls them after the CPU check.
#include <cstdint>
#include <limits>

#include "cpu/common/target_pragma.h"

#if defined(__x86_64__)
// The loop after every other header, so that only its code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/quantize_run.h"

namespace pd::kernels::reference {
void PD_ISA_FN(quantize_run_u8)(const float* x, uint8_t* out, int64_t n, float s, float z) { quantize_run(x, out, n, s, z); }
void PD_ISA_FN(quantize_run_i8)(const float* x, int8_t* out, int64_t n, float s, float z) { quantize_run(x, out, n, s, z); }
void PD_ISA_FN(quantize_gated_run_u8)(const float* x, const float* g, uint8_t* out, int64_t n, float s, float z) {
  quantize_gated_run(x, g, out, n, s, z);
}
void PD_ISA_FN(quantize_gated_run_i8)(const float* x, const float* g, int8_t* out, int64_t n, float s, float z) {
  quantize_gated_run(x, g, out, n, s, z);
}
void PD_ISA_FN(dequantize_run_u8)(const uint8_t* x, float* out, int64_t n, float s, int32_t z) { dequantize_run(x, out, n, s, z); }
void PD_ISA_FN(dequantize_run_i8)(const int8_t* x, float* out, int64_t n, float s, int32_t z) { dequantize_run(x, out, n, s, z); }
}  // namespace pd::kernels::reference
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and quantize.cc never calls these
#include "cpu/ref/quantize_run.h"

namespace pd::kernels::reference {
void PD_ISA_FN(quantize_run_u8)(const float*, uint8_t*, int64_t, float, float) {}
void PD_ISA_FN(quantize_run_i8)(const float*, int8_t*, int64_t, float, float) {}
void PD_ISA_FN(quantize_gated_run_u8)(const float*, const float*, uint8_t*, int64_t, float, float) {}
void PD_ISA_FN(quantize_gated_run_i8)(const float*, const float*, int8_t*, int64_t, float, float) {}
void PD_ISA_FN(dequantize_run_u8)(const uint8_t*, float*, int64_t, float, int32_t) {}
void PD_ISA_FN(dequantize_run_i8)(const int8_t*, float*, int64_t, float, int32_t) {}
}  // namespace pd::kernels::reference
#endif
