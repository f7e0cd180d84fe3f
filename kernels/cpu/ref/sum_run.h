// The sum of n contiguous values in 8 independent accumulators (reduce.cc's sums). One accumulator is
// a chain of dependent adds, 4 cycles each, which made a conv bias gradient (6 sums of 50k floats)
// latency-bound; floats are summed in double, so the order hardly shows. The loop is compiled again
// for AVX2 and AVX-512 (isa/sum_runs.cc), where the 8 chains become the lanes of one or two vectors:
// the same additions in the same order, so every instruction set gives the same bits.
#pragma once
#include <cstdint>
#include <type_traits>

namespace pd::kernels::reference {

// Floating sums accumulate in double; integer sums in int64 (int32 sums wrap only on the final store).
template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Static: each file compiles its own copy for its own instruction set (see optimizer_rows.h).
template <typename T>
static inline SumAcc<T> sum_run(const T* x, int64_t n) {
  constexpr int kChains = 8;
  SumAcc<T> part[kChains] = {};
  int64_t k = 0;
  for (; k + kChains <= n; k += kChains)
    for (int j = 0; j < kChains; ++j) part[j] += static_cast<SumAcc<T>>(x[k + j]);
  SumAcc<T> acc = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (; k < n; ++k) acc += static_cast<SumAcc<T>>(x[k]);
  return acc;
}

// The float and double forms for wider instruction sets; call only after the CPU check.
double sum_run_avx2(const float* x, int64_t n);
double sum_run_avx512(const float* x, int64_t n);

}  // namespace pd::kernels::reference
