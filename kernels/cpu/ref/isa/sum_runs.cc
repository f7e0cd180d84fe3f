// sum_run (sum_run.h) over floats compiled for one instruction set (libcore/CMakeLists.txt,
// pd_add_isa_variants); reduce.cc calls it after the CPU check.
#include <cstdint>
#include <type_traits>

#include "cpu/common/target_pragma.h"

#if defined(__x86_64__)
// The loop after every other header, so that only its code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/sum_run.h"

namespace pd::kernels::reference {
double PD_ISA_FN(sum_run)(const float* x, int64_t n) { return sum_run(x, n); }
}  // namespace pd::kernels::reference
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and reduce.cc never calls this
#include "cpu/ref/sum_run.h"

namespace pd::kernels::reference {
double PD_ISA_FN(sum_run)(const float*, int64_t) { return 0; }
}  // namespace pd::kernels::reference
#endif
