// What the CPU can run, for kernels whose vector code is compiled for more than the build's baseline
// x86-64 (winograd_conv2d, fused_conv2d_maxpool) and for the passes that only pay off with that code.
#pragma once

namespace pd {

// AVX2 and FMA are present, and PD_CPU_ISA=baseline does not ask for the portable code instead (the
// tests run both). Read once per process.
bool cpu_has_avx2_fma();

// AVX-512 (F and VL) as well, and PD_CPU_ISA=avx2 or baseline does not ask for narrower code.
bool cpu_has_avx512();

}  // namespace pd
