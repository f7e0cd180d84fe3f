// Thread count for the CPU kernels (oneDNN runs on OpenMP).
#pragma once

namespace pd {

// n <= 0 keeps the current setting.
void set_num_threads(int n);

}  // namespace pd
