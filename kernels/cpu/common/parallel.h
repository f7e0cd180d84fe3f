// Splitting a kernel's independent items across the OpenMP threads (the same pool oneDNN uses).
#pragma once
#include <cstdint>

namespace pd::kernels::cpu {

// Runs f(i) for i in [0, n), across threads when n * work_per_item is large enough to pay for waking
// them. Each item runs start to finish on one thread, so results never depend on the thread count.
template <typename F>
void parallel_for(int64_t n, int64_t work_per_item, F&& f) {
  if (n > 1 && n * work_per_item >= (int64_t{1} << 15)) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

}  // namespace pd::kernels::cpu
