// The kernels' own thread pool: a parallel loop whose caller never waits for a thread that has not
// started. OpenMP's fork-join barrier makes every thread of a region arrive before the caller goes on,
// so when another process holds a core, each region waits out that process's time slice (pd-infer ran
// 5-15x slower beside a 2-thread pd-train, onnxruntime 1-2.4x). Here the items are claimed in chunks from a
// shared counter by the caller and the workers that are awake; a worker that has not picked the loop
// up when the caller runs out of chunks is taken off it, and the caller has done its share. Idle
// workers spin briefly on `pause` (no sched_yield: see kSpin), then sleep on a futex.
//
// oneDNN's primitives run on OpenMP's threads (Debian's libdnnl is built for its OpenMP runtime), which
// spin for a while after each primitive. Two spinning teams on the same cores take turns by the OS's
// time slice, so a loop that starts while OpenMP's team is awake runs on that team instead. The
// primitives inference runs most (linears, channel-blocked convolutions and their reorders) are given
// to this pool as one-thread primitives over parts of the work, so that team mostly sleeps.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

namespace pd {

// Runs fn(ctx, begin, end) over chunks covering [0, n), on the calling thread and the pool's workers.
// Each chunk runs on one thread; which thread runs which chunk varies. Runs inline when called from
// inside a parallel loop (ours or an OpenMP region) or while another thread is using the pool. The
// first exception a chunk throws stops the chunks not yet started and is rethrown to the caller once
// every started chunk has finished.
// `chunks_per_thread` (default 4): more chunks let a thread the OS slowed leave its share to the
// others; one makes each thread's chunk a contiguous band, the caller's the first (parallel_bands).
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
void parallel_ranges(int64_t n, RangeFn fn, void* ctx, int chunks_per_thread = 4);

// Says that OpenMP's team has just been given work (oneDNN's CPU stream calls it for each primitive
// that runs on more than one thread): loops started in the next millisecond run on that team.
void note_openmp_team_used();

// Whether OpenMP's team was given work in the last millisecond (its threads are still spinning).
bool openmp_team_awake();

// How many times OpenMP's team has been given work in this process (pd-infer --profile reports it a
// run: each is a barrier that waits for every thread of the team, beside a busy process a time slice).
int64_t openmp_team_uses();

// Threads a parallel loop can use, the caller included (pd::num_threads()).
int parallel_threads();

// f(i) for i in [0, n) through parallel_ranges.
template <typename F>
void parallel_items(int64_t n, F&& f, int chunks_per_thread = 4) {
  using Body = std::remove_reference_t<F>;
  parallel_ranges(
      n,
      [](void* ctx, int64_t begin, int64_t end) {
        Body& body = *static_cast<Body*>(ctx);
        for (int64_t i = begin; i < end; ++i) body(i);
      },
      const_cast<void*>(static_cast<const void*>(&f)), chunks_per_thread);
}

// parallel_items in one contiguous band of items a thread, the caller's the first: for a small kernel
// between others that split their rows the same way (at batch 1 a convolution's parts are bands of its
// output rows, the caller's the top one), so that each thread reads rows its own core wrote. The
// residual example's int8 projections (a few us each) lost a fifth of their time to chunks read across
// cores and the last chunk's wait (host B). A band cannot move to a faster thread: kernels whose work
// is larger than their data keep parallel_items' chunks (the int8 stem was 1 us slower in bands in an
// hour when one core ran slow).
template <typename F>
void parallel_bands(int64_t n, F&& f) {
  parallel_items(n, std::forward<F>(f), 1);
}

}  // namespace pd
