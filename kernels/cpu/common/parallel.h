// Splitting a kernel's independent items across threads (pd/core/thread_pool.h: the kernels' own pool,
// which a busy machine slows in proportion; oneDNN's primitives run on OpenMP's threads).
#pragma once
#include <cstdint>
#include <utility>

#include "pd/core/thread_pool.h"

namespace pd::kernels::cpu {

// Runs f(i) for i in [0, n), across threads when n * work_per_item is large enough to pay for waking
// them. Each item runs start to finish on one thread, so results never depend on the thread count.
// `chunks_per_thread` as pd::parallel_items' (1: one contiguous band a thread, the caller's the first).
template <typename F>
void parallel_for(int64_t n, int64_t work_per_item, F&& f, int chunks_per_thread = 4) {
  if (n > 1 && n * work_per_item >= (int64_t{1} << 15)) {
    pd::parallel_items(n, f, chunks_per_thread);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

// parallel_for in bands (pd::parallel_bands).
template <typename F>
void parallel_for_bands(int64_t n, int64_t work_per_item, F&& f) {
  parallel_for(n, work_per_item, std::forward<F>(f), 1);
}

}  // namespace pd::kernels::cpu
