// Splitting a kernel's independent items across threads (pd/core/thread_pool.h: the kernels' own pool,
// which a busy machine slows in proportion; oneDNN's primitives run on OpenMP's threads).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>

#include "pd/core/thread_pool.h"

namespace pd::kernels::cpu {

// Whether n items of work_per_item each pay for waking the other threads.
inline bool worth_threads(int64_t n, int64_t work_per_item) { return n > 1 && n * work_per_item >= (int64_t{1} << 15); }

// Runs f(i) for i in [0, n), across threads when n * work_per_item is large enough to pay for waking
// them. Each item runs start to finish on one thread, so results never depend on the thread count.
// `chunks_per_thread` as pd::parallel_items' (1: one contiguous band a thread, the caller's the first).
template <typename F>
void parallel_for(int64_t n, int64_t work_per_item, F&& f, int chunks_per_thread = 4) {
  if (worth_threads(n, work_per_item)) {
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

// Parts an image of `count` rows (or pixels) is cut into, one a thread's band: where the images do not
// divide among the threads, the thread count, at most one a row (or `align` pixels: none is left
// empty); else 1.
inline int64_t image_parts(int64_t images, int64_t count, int64_t align = 1) {
  const int64_t threads = std::max(1, pd::parallel_threads());
  return images % threads == 0 ? 1 : std::clamp<int64_t>(count / align, 1, threads);
}

// Part q of `count` rows (or pixels) cut into `parts` near-equal ranges, inner edges on multiples of
// `align` (image_parts' parts are never empty).
inline std::pair<int64_t, int64_t> part_range(int64_t q, int64_t parts, int64_t count, int64_t align = 1) {
  const auto edge = [&](int64_t k) { return k >= parts ? count : k * count / parts / align * align; };
  return {edge(q), edge(q + 1)};
}

// parallel_for over the items of a batch of maps, ordered image by image and within an image by rows (or
// pixels), each image cut into `parts` (image_parts). Where an image is cut (batch 1), in bands: each
// thread takes the same rows in op after op and reads what its own core wrote (MnasNet's 56x56 and
// 112x112 layers, 2 threads of Zen 5 in an hour when the cores shared data slowly: 1.3-1.6x faster).
// Where images are whole, in chunks: a thread's images outgrow its caches anyway, and a chunk can move
// to a faster thread (MobileNetV2 at batch 8 was 4% slower in bands).
template <typename F>
void parallel_for_images(int64_t parts, int64_t n, int64_t work_per_item, F&& f) {
  parallel_for(n, work_per_item, std::forward<F>(f), parts > 1 ? 1 : 4);
}

// parallel_for_images handing each thread's ranges of items whole: f(begin, end), for kernels that
// prepare what a range reads first (each its own copy, in its own core's cache).
template <typename F>
void parallel_ranges_images(int64_t parts, int64_t n, int64_t work_per_item, F&& f) {
  using Body = std::remove_reference_t<F>;
  if (worth_threads(n, work_per_item))
    pd::parallel_ranges(
        n, [](void* ctx, int64_t begin, int64_t end) { (*static_cast<Body*>(ctx))(begin, end); },
        const_cast<void*>(static_cast<const void*>(&f)), parts > 1 ? 1 : 4);
  else if (n > 0)
    f(int64_t{0}, n);
}

}  // namespace pd::kernels::cpu
