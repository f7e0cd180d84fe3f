// What the CPU can run, for kernels whose vector code is compiled for more than the build's baseline
// x86-64 (winograd_conv2d, fused_conv2d_maxpool) and for the passes that only pay off with that code.
#pragma once

namespace pd {

// AVX2 and FMA are present, and PD_CPU_ISA=baseline does not ask for the portable code instead (the
// tests run both). Read once per process.
bool cpu_has_avx2_fma();

// AVX-512 (F and VL) as well, and PD_CPU_ISA=avx2 or baseline does not ask for narrower code.
bool cpu_has_avx512();

// The CPU multiplies u8 by s8 into int32 without saturating (AVX512-VNNI with AVX-512 in use, or
// AVX-VNNI) and PD_CPU_ISA does not ask for narrower code. Without it, int8 kernels go through
// vpmaddubsw, whose 16-bit pair sums saturate for u8 activations and full 8-bit weights.
bool cpu_has_vnni();

// How the int8 kernels multiply on this CPU, for reports: "vnni" or "avx2 without VNNI (7-bit weights
// for u8 activations)".
const char* int8_path_name();

}  // namespace pd
