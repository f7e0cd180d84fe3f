// Kernel backends: each is a separately built set of kernels (reference: Eigen and loops, always
// built; onednn: PD_WITH_ONEDNN; cuda: PD_WITH_CUDA). The generated registry lists, per op and dtype,
// the kernels of the backends this build has.
#pragma once
#include <cstdint>
#include <vector>

namespace pd {

enum class Backend : uint8_t { reference, onednn, cuda };
const char* backend_name(Backend b);

// The CPU backends compiled into this build, fastest first.
std::vector<Backend> built_cpu_backends();
// Whether this build has CPU backend b (onednn: built with PD_WITH_ONEDNN).
bool cpu_backend_built(Backend b);

}  // namespace pd
