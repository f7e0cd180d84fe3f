// The kernels' thread pool (pd/core/thread_pool.h): every item once, nested and concurrent loops inline,
// errors back to the caller, a pool that follows the thread setting and survives fork().
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "pd/core/thread_pool.h"
#include "pd/core/threads.h"

namespace {

// Sets the thread count for one test and puts the previous one back.
struct Threads {
  explicit Threads(int n) : saved(pd::num_threads()) { pd::set_num_threads(n); }
  ~Threads() { pd::set_num_threads(saved); }
  int saved;
};

// Which threads ran a loop of n items that each take `item_time`.
std::set<std::thread::id> threads_of_loop(int64_t n, std::chrono::microseconds item_time) {
  std::mutex m;
  std::set<std::thread::id> ids;
  pd::parallel_items(n, [&](int64_t) {
    std::this_thread::sleep_for(item_time);
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  return ids;
}

}  // namespace

TEST_CASE("thread pool: every item runs exactly once, for any count and thread setting", "[thread_pool]") {
  for (int threads : {1, 2, 3}) {
    Threads t(threads);
    CHECK(pd::parallel_threads() == threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 64, 1000, 4097}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      pd::parallel_items(n, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
      int64_t once = 0;
      for (auto& r : runs) once += r.load() == 1;
      INFO("threads " << threads << ", n " << n);
      CHECK(once == n);
    }
  }
}

TEST_CASE("thread pool: a loop uses the workers, as many as the thread setting", "[thread_pool]") {
  // Items of 2 ms: the workers are woken, or still spinning, long before the caller could run them all.
  Threads t(3);
  const auto ids = threads_of_loop(48, std::chrono::microseconds(2000));
  CHECK(ids.size() == 3);
  CHECK(ids.count(std::this_thread::get_id()) == 1);  // the caller works too
  pd::set_num_threads(2);
  CHECK(threads_of_loop(48, std::chrono::microseconds(2000)).size() == 2);
}

TEST_CASE("thread pool: a loop in bands runs each band on one thread, the caller the first", "[thread_pool]") {
  // Items of 200 us: a worker is awake long before the caller could run its band and take the next (how
  // many threads take part is the OS's to decide: a worker it has not run is taken off the loop).
  for (int threads : {2, 3}) {
    Threads t(threads);
    const int64_t n = 12;
    std::vector<std::thread::id> ran(static_cast<size_t>(n));
    pd::parallel_bands(n, [&](int64_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      ran[static_cast<size_t>(i)] = std::this_thread::get_id();
    });
    INFO("threads " << threads);
    const int64_t band = n / threads;
    for (int64_t i = 0; i < n; ++i) CHECK(ran[static_cast<size_t>(i)] == ran[static_cast<size_t>(i / band * band)]);  // one thread a band
    CHECK(ran[0] == std::this_thread::get_id());
  }
}

TEST_CASE("thread pool: a loop inside a loop, or beside one on another thread, runs inline", "[thread_pool]") {
  Threads t(2);
  std::atomic<int> inner_items{0}, inner_elsewhere{0};
  pd::parallel_items(16, [&](int64_t) {
    const auto outer = std::this_thread::get_id();
    pd::parallel_items(8, [&](int64_t) {
      inner_items.fetch_add(1);
      if (std::this_thread::get_id() != outer) inner_elsewhere.fetch_add(1);
    });
  });
  CHECK(inner_items.load() == 16 * 8);
  CHECK(inner_elsewhere.load() == 0);

  // While one thread's loop holds the pool, another thread's loop runs on that thread alone.
  std::atomic<bool> holding{false}, release{false};
  std::thread holder([&] {
    pd::parallel_items(2, [&](int64_t i) {
      if (i != 0) return;
      holding = true;
      while (!release) std::this_thread::yield();
    });
  });
  while (!holding) std::this_thread::yield();
  std::set<std::thread::id> ids = threads_of_loop(8, std::chrono::microseconds(100));
  release = true;
  holder.join();
  CHECK(ids == std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST_CASE("thread pool: the first error reaches the caller after the started items, and the pool goes on", "[thread_pool]") {
  Threads t(2);
  std::atomic<int> running{0};
  const auto run = [&] {
    pd::parallel_items(1000, [&](int64_t i) {
      running.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      running.fetch_sub(1);
      if (i == 3) throw std::runtime_error("item 3 failed");
    });
  };
  CHECK_THROWS_WITH(run(), "item 3 failed");
  CHECK(running.load() == 0);  // no item still running once the error is rethrown
  std::atomic<int64_t> sum{0};
  pd::parallel_items(100, [&](int64_t i) { sum.fetch_add(i); });
  CHECK(sum.load() == 4950);
}

// Under AddressSanitizer a thread started in a child forked from a multi-threaded parent may never run
// (its runtime's locks are copied as the parent's threads held them): there only the loops' completion
// is checked, not that the child's new worker took part.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kChildWorkerChecked = false;
#else
constexpr bool kChildWorkerChecked = true;
#endif

TEST_CASE("thread pool: a child made by fork() runs loops on a pool of its own", "[thread_pool]") {
  Threads t(2);
  pd::parallel_items(64, [](int64_t) {});  // the parent's workers exist
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::atomic<int> items{0};
    pd::parallel_items(64, [&](int64_t) { items.fetch_add(1); });
    const auto ids = threads_of_loop(32, std::chrono::microseconds(2000));
    _exit(items.load() == 64 && (ids.size() == 2 || !kChildWorkerChecked) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
