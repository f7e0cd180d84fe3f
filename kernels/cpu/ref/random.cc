// Seeded random fills: uniform and normal. Deterministic across platforms: std::mt19937_64 is fully
// specified, and the conversion to floating point is done here rather than by std distributions
// (whose algorithms differ between standard libraries).
#include <cmath>
#include <limits>
#include <random>

#include "kernels.h"

namespace pd::kernels::reference {

namespace {
// 53 random bits -> a double in [0, 1) with every value a multiple of 2^-53.
inline double unit_double(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}
}  // namespace

template <typename T>
void uniform(const KernelContext& ctx, const std::vector<int64_t>& shape, double min, double max, int64_t seed, DType dtype, Tensor& out) {
  PD_CHECK(min <= max, ErrorCode::kInvalidArgument,
           "uniform: argument 'min' must be <= 'max' ({}), but received {}", max, min);
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  T* od = out.data<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(min + (max - min) * unit_double(rng));
    // Rounding (to T, or in the product) can land on max itself; keep the interval half-open.
    while (min < max && static_cast<double>(v) >= max) v = std::nextafter(v, -std::numeric_limits<T>::infinity());
    od[i] = v;
  }
}

template <typename T>
void normal(const KernelContext& ctx, const std::vector<int64_t>& shape, double mean, double stddev, int64_t seed, DType dtype, Tensor& out) {
  PD_CHECK(stddev >= 0.0, ErrorCode::kInvalidArgument, "normal: argument 'std' must be >= 0, but received {}", stddev);
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  T* od = out.data<T>();
  const int64_t n = out.numel();
  const double two_pi = 6.283185307179586476925;
  // Box-Muller: each pair of uniforms gives two independent standard normals.
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - unit_double(rng);  // in (0, 1]: log is finite
    const double u2 = unit_double(rng);
    const double r = std::sqrt(-2.0 * std::log(u1));
    od[i] = static_cast<T>(mean + stddev * r * std::cos(two_pi * u2));
    if (i + 1 < n) od[i + 1] = static_cast<T>(mean + stddev * r * std::sin(two_pi * u2));
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(uniform, reference, float, double)
PD_INSTANTIATE_KERNELS(normal, reference, float, double)
