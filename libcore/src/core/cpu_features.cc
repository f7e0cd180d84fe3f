#include "pd/core/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <string_view>

namespace pd {
namespace {

#if defined(__x86_64__)
// AVX-VNNI, CPUID.(EAX=7,ECX=1):EAX[4]: asked of CPUID itself because clang 14's __builtin_cpu_supports
// does not know "avxvnni" (gcc 12's does). The caller has checked AVX2, so the OS saves the registers.
bool cpuid_avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1);
}
#endif

}  // namespace

bool cpu_has_avx2_fma() {
  static const bool yes = [] {
#if defined(__x86_64__)
    const char* isa = std::getenv("PD_CPU_ISA");
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           std::string_view(isa ? isa : "") != "baseline";
#else
    return false;
#endif
  }();
  return yes;
}

bool cpu_has_avx512() {
  static const bool yes = [] {
#if defined(__x86_64__)
    const char* isa = std::getenv("PD_CPU_ISA");
    return cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           std::string_view(isa ? isa : "") != "avx2";
#else
    return false;
#endif
  }();
  return yes;
}

bool cpu_has_vnni() {
  static const bool yes = [] {
#if defined(__x86_64__)
    const char* isa = std::getenv("PD_CPU_ISA");
    const std::string_view narrowed(isa ? isa : "");
    if (narrowed == "avx2" || narrowed == "baseline") return false;
    return (cpu_has_avx512() && __builtin_cpu_supports("avx512vnni")) ||
           (cpu_has_avx2_fma() && cpuid_avx_vnni());
#else
    return false;
#endif
  }();
  return yes;
}

const char* int8_path_name() {
  return cpu_has_vnni() ? "vnni (u8 x s8 products summed exactly)"
                        : "no VNNI (u8 activations meet 7-bit weights so that vpmaddubsw cannot saturate)";
}

}  // namespace pd
