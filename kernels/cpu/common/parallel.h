// Splitting a kernel's independent items across threads (pd/core/thread_pool.h: the kernels' own pool,
// which a busy machine slows in proportion; oneDNN's primitives run on OpenMP's threads).
#pragma once
#include <cstdint>

#include "pd/core/thread_pool.h"

namespace pd::kernels::cpu {

// Runs f(i) for i in [0, n), across threads when n * work_per_item is large enough to pay for waking
// them. Each item runs start to finish on one thread, so results never depend on the thread count.
template <typename F>
void parallel_for(int64_t n, int64_t work_per_item, F&& f) {
  if (n > 1 && n * work_per_item >= (int64_t{1} << 15)) {
    pd::parallel_items(n, f);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

// parallel_for in one contiguous band of items a thread, the caller's the first (pd::parallel_bands).
template <typename F>
void parallel_for_bands(int64_t n, int64_t work_per_item, F&& f) {
  if (n > 1 && n * work_per_item >= (int64_t{1} << 15)) {
    pd::parallel_bands(n, f);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

}  // namespace pd::kernels::cpu
