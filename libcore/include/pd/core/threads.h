// Thread count for the CPU kernels: the kernels' pool (pd/core/thread_pool.h) and OpenMP's team,
// which oneDNN runs on.
#pragma once

namespace pd {

// n <= 0 keeps the current setting.
void set_num_threads(int n);
// The current setting; until one is made, OpenMP's max threads when first asked (1 without OpenMP).
int num_threads();

}  // namespace pd
