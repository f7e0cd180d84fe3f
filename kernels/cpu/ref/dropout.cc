// Reference dropout: a reproducible mask from std::mt19937_64(seed), scaled by 1/(1-p) (inverted dropout).
#include <random>

#include "kernels.h"

namespace pd::kernels::reference {

template <typename T>
void dropout(const KernelContext& ctx, const Tensor& x, double p, bool training, int64_t seed, Tensor& out, Tensor& mask) {
  PD_CHECK(p >= 0.0 && p <= 1.0, ErrorCode::kInvalidArgument,
           "dropout: argument 'p' must be in [0, 1], but received {}", p);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  T* md = mask.data<T>();
  const int64_t n = x.numel();
  if (!training) {
    for (int64_t i = 0; i < n; ++i) {
      od[i] = xd[i];
      md[i] = T(1);
    }
    return;
  }
  if (p == 1.0) {  // everything dropped; 1/(1-p) would be infinite
    for (int64_t i = 0; i < n; ++i) od[i] = md[i] = T(0);
    return;
  }
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; ++i) {
    // One draw per element: the top 53 bits as a uniform double in [0, 1).
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    md[i] = u < p ? T(0) : keep_scale;
    od[i] = xd[i] * md[i];
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(dropout, reference, float, double)
