// Thread count for the CPU kernels: the kernels' pool (pd/core/thread_pool.h) and OpenMP's team,
// which oneDNN runs on.
#pragma once

namespace pd {

// n <= 0 keeps the current setting.
void set_num_threads(int n);
// The current setting; until one is made, OpenMP's max threads when first asked (1 without OpenMP).
int num_threads();

// While alive and `on`, OpenMP (and so oneDNN) uses one thread on this thread's parallel regions; the
// caller's setting comes back after. For problems too small to pay for waking the other threads, and
// for work that must not leave OpenMP's team awake (pd/core/thread_pool.h).
class OneThreadIf {
 public:
  explicit OneThreadIf(bool on);
  ~OneThreadIf();
  OneThreadIf(const OneThreadIf&) = delete;
  OneThreadIf& operator=(const OneThreadIf&) = delete;
  explicit operator bool() const { return saved_ > 0; }

 private:
  int saved_ = 0;  // the thread count to restore; 0 when nothing was changed
};

}  // namespace pd
