// The float optimizer loops of optimizer_rows.h compiled for one instruction set. The build compiles
// this file once per set (libcore/CMakeLists.txt, pd_add_isa_variants), with PD_ISA_FN(f) naming f with
// the set's suffix and PD_ISA_TARGET its target string; optimizer.cc calls them after the CPU check.
#include <cmath>
#include <cstdint>

#include "cpu/common/target_pragma.h"

#if defined(__x86_64__)
// The loops after every other header, so that only their code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/optimizer_rows.h"

namespace pd::kernels::reference::optim {

void PD_ISA_FN(sgd_rows)(const SgdArgs<float>& a, int64_t begin, int64_t end) { sgd_rows(a, begin, end); }
void PD_ISA_FN(momentum_rows)(const MomentumArgs<float>& a, int64_t begin, int64_t end) { momentum_rows(a, begin, end); }
void PD_ISA_FN(adam_rows)(const AdamArgs<float>& a, int64_t begin, int64_t end) { adam_rows(a, begin, end); }

}  // namespace pd::kernels::reference::optim
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and optimizer.cc never calls these
#include "cpu/ref/optimizer_rows.h"

namespace pd::kernels::reference::optim {
void PD_ISA_FN(sgd_rows)(const SgdArgs<float>&, int64_t, int64_t) {}
void PD_ISA_FN(momentum_rows)(const MomentumArgs<float>&, int64_t, int64_t) {}
void PD_ISA_FN(adam_rows)(const AdamArgs<float>&, int64_t, int64_t) {}
}  // namespace pd::kernels::reference::optim
#endif
