// pool_rows.h's byte loops and pixel_sums.h's float sums compiled for one instruction set (libcore/CMakeLists.txt,
// pd_add_isa_variants); pool_nhwc.cc calls them after the CPU check.
#include <cstdint>

#include "cpu/common/target_pragma.h"

#if defined(__x86_64__)
// The loops after every other header, so that only their code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/pixel_sums.h"
#include "cpu/ref/pool_rows.h"

namespace pd::kernels::reference {
void PD_ISA_FN(sum_pixels)(const float* rows, int64_t HW, int64_t L, float* a) { sum_pixels(rows, HW, L, a); }
void PD_ISA_FN(max_rows_bytes)(const uint8_t* const* rows, int64_t count, int64_t n, uint8_t* out) {
  max_rows_bytes(rows, count, n, out);
}
void PD_ISA_FN(max_rows_bytes)(const int8_t* const* rows, int64_t count, int64_t n, int8_t* out) {
  max_rows_bytes(rows, count, n, out);
}
void PD_ISA_FN(max_pixels_bytes)(const uint8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, uint8_t* out) {
  max_pixels_bytes(row, C, kw, sw, oW, out);
}
void PD_ISA_FN(max_pixels_bytes)(const int8_t* row, int64_t C, int64_t kw, int64_t sw, int64_t oW, int8_t* out) {
  max_pixels_bytes(row, C, kw, sw, oW, out);
}
void PD_ISA_FN(max_shifted_bytes)(const uint8_t* row, int64_t C, int64_t kw, int64_t n, uint8_t* out) {
  max_shifted_bytes(row, C, kw, n, out);
}
void PD_ISA_FN(max_shifted_bytes)(const int8_t* row, int64_t C, int64_t kw, int64_t n, int8_t* out) {
  max_shifted_bytes(row, C, kw, n, out);
}
}  // namespace pd::kernels::reference
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and pool_nhwc.cc never calls these
#include "cpu/ref/pixel_sums.h"
#include "cpu/ref/pool_rows.h"

namespace pd::kernels::reference {
void PD_ISA_FN(sum_pixels)(const float*, int64_t, int64_t, float*) {}
void PD_ISA_FN(max_rows_bytes)(const uint8_t* const*, int64_t, int64_t, uint8_t*) {}
void PD_ISA_FN(max_rows_bytes)(const int8_t* const*, int64_t, int64_t, int8_t*) {}
void PD_ISA_FN(max_pixels_bytes)(const uint8_t*, int64_t, int64_t, int64_t, int64_t, uint8_t*) {}
void PD_ISA_FN(max_pixels_bytes)(const int8_t*, int64_t, int64_t, int64_t, int64_t, int8_t*) {}
void PD_ISA_FN(max_shifted_bytes)(const uint8_t*, int64_t, int64_t, int64_t, uint8_t*) {}
void PD_ISA_FN(max_shifted_bytes)(const int8_t*, int64_t, int64_t, int64_t, int8_t*) {}
}  // namespace pd::kernels::reference
#endif
