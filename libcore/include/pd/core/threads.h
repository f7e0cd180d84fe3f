// Thread count for the CPU kernels (oneDNN runs on OpenMP).
#pragma once

namespace pd {

// n <= 0 keeps the current setting.
void set_num_threads(int n);
// The current setting (OpenMP's max threads; 1 without OpenMP).
int num_threads();

}  // namespace pd
