#include "pd/core/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "pd/core/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PD_CPU_RELAX() _mm_pause()
#else
#define PD_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace pd {
namespace {

// How long an idle worker looks for the next loop before it sleeps: the gaps between one run's loops
// (an op's bookkeeping, a small op run inline, a oneDNN primitive) are microseconds; a sleeping worker
// costs the next loop a futex wake and tens of microseconds before it helps. It spins on `pause` alone,
// never sched_yield: under Linux's EEVDF scheduler a yield moves the thread's deadline a whole slice
// back whenever anything else is runnable. Beside two busy 2-thread processes on 2 cores the residual
// example's batch-1 p50 went 2.6 -> 1.7 ms without the yields (8 alternating rounds); beside one, level.
constexpr auto kSpin = std::chrono::microseconds(100);
constexpr int kPausesPerCheck = 64;
// How long OpenMP's team stays awake after a primitive: libgomp spins GOMP_SPINCOUNT pauses, 10,000
// as the tools start it (tools/common/openmp_spin.h), about 0.6 ms on a current Xeon core.
constexpr auto kOpenMPAwake = std::chrono::milliseconds(1);

thread_local bool t_in_loop = false;  // nested loops (and the workers' own) run inline

// One parallel loop, on its caller's stack: the chunks are claimed from `next`.
struct Loop {
  Loop(RangeFn f, void* c, int64_t items, int64_t per_chunk) : fn(f), ctx(c), n(items), chunk(per_chunk) {}

  RangeFn fn;
  void* ctx;
  int64_t n;
  int64_t chunk;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written by the thread that set `failed`

  int64_t claim() { return next.fetch_add(chunk, std::memory_order_relaxed); }

  // Runs the chunk from `begin` (claimed) and then claims more until none are left.
  void work(int64_t begin) {
    for (; begin < n; begin = claim()) {
      try {
        fn(ctx, begin, std::min(n, begin + chunk));
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
        next.store(n, std::memory_order_relaxed);  // chunks not yet claimed never start
        return;
      }
    }
  }
  void work() { work(claim()); }
};

// A worker's mailbox. The caller posts a loop (kIdle -> kPosted); the worker takes it (kPosted ->
// kRunning) and reports (kDone); a caller that has run out of chunks takes back a loop its worker has
// not taken (kPosted -> kIdle), so it never waits for a thread the OS has not run.
enum State : uint32_t { kIdle, kPosted, kRunning, kDone, kStop };

struct alignas(64) Slot {
  std::atomic<uint32_t> state{kIdle};
  std::atomic<bool> sleeping{false};
  Loop* loop = nullptr;
};

// Spins, then sleeps, until the slot holds a loop or the stop request; returns which.
uint32_t await_post(Slot& slot) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int spins = 0;; ++spins) {
    const uint32_t s = slot.state.load(std::memory_order_acquire);
    if (s == kPosted || s == kStop) return s;
    if (spins % kPausesPerCheck == kPausesPerCheck - 1 && std::chrono::steady_clock::now() > until) break;
    PD_CPU_RELAX();
  }
  for (;;) {
    // Dekker with the caller's post: it stores the state, then reads `sleeping`; we store `sleeping`,
    // then read the state. One of the two sees the other's store, so a post is never missed.
    slot.sleeping.store(true, std::memory_order_seq_cst);
    const uint32_t s = slot.state.load(std::memory_order_seq_cst);
    if (s == kPosted || s == kStop) {
      slot.sleeping.store(false, std::memory_order_relaxed);
      return s;
    }
    slot.state.wait(s, std::memory_order_seq_cst);
    slot.sleeping.store(false, std::memory_order_relaxed);
  }
}

void worker_main(Slot* slot) {
  t_in_loop = true;
  for (;;) {
    if (await_post(*slot) == kStop) return;
    uint32_t posted = kPosted;
    if (!slot->state.compare_exchange_strong(posted, kRunning, std::memory_order_acquire)) continue;  // taken back
    slot->loop->work();
    slot->state.store(kDone, std::memory_order_release);
  }
}

class Pool {
 public:
  ~Pool() { resize(0); }

  // One loop at a time: a second caller runs its loop inline rather than wait.
  std::mutex busy;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int workers) {
    for (auto& slot : slots_) post(*slot, kStop);
    for (auto& t : workers_) t.join();
    workers_.clear();
    slots_.clear();
    for (int i = 0; i < workers; ++i) {
      slots_.push_back(std::make_unique<Slot>());
      workers_.emplace_back(worker_main, slots_.back().get());
    }
  }

  // The caller claims the first chunk before it posts the loop, so that it runs the first band of a
  // loop in bands (parallel_bands) whichever worker is awake first.
  void run(Loop& loop, int64_t chunks) {
    const int64_t first = loop.claim();
    const int posted = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(slots_.size()), chunks - 1));
    for (int i = 0; i < posted; ++i) {
      slots_[i]->loop = &loop;
      post(*slots_[i], kPosted);
    }
    loop.work(first);
    for (int i = 0; i < posted; ++i) {
      Slot& slot = *slots_[i];
      uint32_t s = kPosted;
      if (slot.state.compare_exchange_strong(s, kIdle, std::memory_order_acq_rel)) continue;  // never started
      while (slot.state.load(std::memory_order_acquire) != kDone) PD_CPU_RELAX();
      slot.state.store(kIdle, std::memory_order_relaxed);
    }
  }

 private:
  static void post(Slot& slot, uint32_t s) {
    slot.state.store(s, std::memory_order_seq_cst);
    if (slot.sleeping.load(std::memory_order_seq_cst)) slot.state.notify_one();
  }

  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::thread> workers_;
};

// Never destroyed: a static destructor elsewhere may still run a loop at exit (the workers are left
// asleep then). A child process made by fork() has none of its parent's workers: it starts a new pool.
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(new Pool, std::memory_order_release); });
    Pool* expected = nullptr;
    Pool* made = new Pool;
    if (!g_pool.compare_exchange_strong(expected, made)) delete made;
  });
  return *g_pool.load(std::memory_order_acquire);
}

std::atomic<int64_t> g_openmp_used_ns{std::numeric_limits<int64_t>::min() / 2};
std::atomic<int64_t> g_openmp_uses{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool openmp_team_awake() {
  return now_ns() - g_openmp_used_ns.load(std::memory_order_relaxed) <
         std::chrono::duration_cast<std::chrono::nanoseconds>(kOpenMPAwake).count();
}

namespace {

// The loop on OpenMP's team, its threads claiming chunks as the pool's would.
void run_on_openmp_team(Loop& loop, int threads) {
#pragma omp parallel num_threads(threads)
  loop.work();
}

bool inside_openmp_region() {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

}  // namespace

void note_openmp_team_used() {
  g_openmp_used_ns.store(now_ns(), std::memory_order_relaxed);
  g_openmp_uses.fetch_add(1, std::memory_order_relaxed);
}

int64_t openmp_team_uses() { return g_openmp_uses.load(std::memory_order_relaxed); }

int parallel_threads() { return std::max(1, num_threads()); }

void parallel_ranges(int64_t n, RangeFn fn, void* ctx, int chunks_per_thread) {
  if (n <= 0) return;
  const int threads = parallel_threads();
  if (n == 1 || threads == 1 || t_in_loop || inside_openmp_region()) return fn(ctx, 0, n);
  // On OpenMP's team one chunk a thread, as its static schedule would.
  const bool on_openmp = openmp_team_awake();
  const int64_t chunks = std::min(n, on_openmp ? threads : threads * static_cast<int64_t>(std::max(1, chunks_per_thread)));
  Loop loop(fn, ctx, n, (n + chunks - 1) / chunks);
  if (on_openmp) {
    run_on_openmp_team(loop, threads);
  } else {
    Pool& p = pool();
    std::unique_lock<std::mutex> lock(p.busy, std::try_to_lock);
    if (!lock.owns_lock()) return fn(ctx, 0, n);
    if (p.threads() != threads) p.resize(threads - 1);
    t_in_loop = true;
    p.run(loop, (n + loop.chunk - 1) / loop.chunk);
    t_in_loop = false;
  }
  if (loop.failed.load()) std::rethrow_exception(loop.error);
}

}  // namespace pd
