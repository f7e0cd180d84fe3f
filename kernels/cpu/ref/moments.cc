// var and std over a list of axes: two passes in double (the mean, then squared deviations), divided
// by N - 1 when unbiased (Bessel's correction, PyTorch's default) or N. N - 1 = 0 gives NaN or inf.
#include <cmath>

#include "cpu/common/reduce.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

template <typename T, typename F>
void variance(const Tensor& x, const std::vector<int64_t>& axis, bool unbiased, Tensor& out, const char* op, F finish) {
  const cpu::ReducePlan p = cpu::make_reduce_plan(x.shape(), axis, op);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  const double n = static_cast<double>(p.group_size);
  for (int64_t o = 0; o < p.out_numel; ++o) {
    double sum = 0;
    p.for_each_in_group(o, [&](int64_t i) { sum += static_cast<double>(xd[i]); });
    const double mean = sum / n;
    double ss = 0;
    p.for_each_in_group(o, [&](int64_t i) {
      const double d = static_cast<double>(xd[i]) - mean;
      ss += d * d;
    });
    od[o] = static_cast<T>(finish(ss / (unbiased ? n - 1 : n)));
  }
}

}  // namespace

template <typename T>
void var(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, bool unbiased, Tensor& out) {
  variance<T>(x, axis, unbiased, out, "var", [](double v) { return v; });
}

template <typename T>
void std(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, bool unbiased, Tensor& out) {
  variance<T>(x, axis, unbiased, out, "std", [](double v) { return std::sqrt(v); });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(var, reference, float, double)
PD_INSTANTIATE_KERNELS(std, reference, float, double)
