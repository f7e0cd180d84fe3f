// What the conv_winograd pass needs to know about winograd_conv2d's kernel, without its vector code.
#pragma once

namespace pd::kernels::reference {

// Whether this CPU runs winograd_conv2d's AVX2 + FMA code (and PD_CPU_ISA=baseline does not ask for
// the portable code). The portable code is correct but slower than a direct convolution.
bool winograd_fast_path();

}  // namespace pd::kernels::reference
