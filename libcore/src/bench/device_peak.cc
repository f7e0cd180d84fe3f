// A GPU's measured peaks for pd-bench --backend cuda (pd/bench/machine.h).
#include <algorithm>
#include <chrono>

#include "op_api.h"
#include "pd/bench/machine.h"
#include "pd/core/allocator.h"

namespace pd::bench {
namespace {

// The best of `reps` runs of f, each ended by waiting for the device, after one untimed run.
template <typename F>
double best_seconds(const Allocator& device, int reps, F f) {
  f();
  device.synchronize();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    device.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

Peak device_peak(Place place, DType dtype) {
  const Allocator& device = allocator_for(place);
  Peak p;
  p.device = place.str();
  {
    const int64_t n = int64_t{1} << 28;  // 1 GiB of f32
    const Tensor src = Tensor::empty({n}, DType::f32, place);
    const double s = best_seconds(device, 5, [&] { Tensor copy = src.clone(); });
    p.mem_gbps = 2.0 * static_cast<double>(n) * 4 / s / 1e9;
  }
  {
    const int64_t n = 8192;
    // Random values: tensor cores run faster on zeros (PyTorch's 8192^3 bf16: 894 TFLOP/s on zeros,
    // 788 on random data, on an H200).
    const DType gemm = is_floating(dtype) ? dtype : DType::f32;  // an integer run still gets a FLOP peak
    p.gemm_dtype = dtype_name(gemm);
    const Tensor a = ops::cast(ops::uniform({n, n}, -1, 1, 1).to(place), gemm);
    const Tensor b = ops::cast(ops::uniform({n, n}, -1, 1, 2).to(place), gemm);
    const double s = best_seconds(device, 5, [&] { Tensor c = ops::matmul(a, b); });
    p.gemm_gflops = 2.0 * static_cast<double>(n) * n * n / s / 1e9;
  }
  return p;
}

}  // namespace pd::bench
