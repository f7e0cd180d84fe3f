// Picking among the forms of a loop that pd_add_isa_variants compiled (libcore/CMakeLists.txt): the
// widest one this CPU runs (PD_CPU_ISA narrows it, so tests run every form on one machine).
#pragma once

#include "pd/core/cpu_features.h"

namespace pd::kernels::cpu {

template <typename F>
F widest(F portable, F avx2, F avx512) {
  if (cpu_has_avx512()) return avx512;
  return cpu_has_avx2_fma() ? avx2 : portable;
}

}  // namespace pd::kernels::cpu
