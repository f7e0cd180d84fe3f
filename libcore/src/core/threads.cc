#include "pd/core/threads.h"

#include <atomic>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace pd {
namespace {
// The setting, kept apart from OpenMP's: a oneDNN kernel narrows OpenMP's team to one thread around a
// small primitive (OneThreadIf), which must not narrow the kernels' pool.
std::atomic<int> g_threads{0};
}  // namespace

void set_num_threads(int n) {
  if (n <= 0) return;
  g_threads.store(n, std::memory_order_relaxed);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

int num_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
#ifdef _OPENMP
  n = omp_get_max_threads();  // OMP_NUM_THREADS, or the CPUs this process may use
#else
  n = 1;
#endif
  int unset = 0;
  g_threads.compare_exchange_strong(unset, n, std::memory_order_relaxed);
  return g_threads.load(std::memory_order_relaxed);
}

OneThreadIf::OneThreadIf(bool on) {
  num_threads();  // the setting is taken from OpenMP's when first asked: not the narrowed one
#ifdef _OPENMP
  if (on && omp_get_max_threads() > 1) {
    saved_ = omp_get_max_threads();
    omp_set_num_threads(1);
  }
#else
  (void)on;
#endif
}

OneThreadIf::~OneThreadIf() {
#ifdef _OPENMP
  if (saved_ > 0) omp_set_num_threads(saved_);
#endif
}

}  // namespace pd
