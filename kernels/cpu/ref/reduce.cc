// Reductions over a list of axes: sum mean max min logsumexp, and argmax over one axis.
#include <cmath>
#include <limits>
#include <type_traits>

#include "cpu/common/reduce.h"
#include "cpu/common/parallel.h"
#include "cpu/ref/sum_run.h"
#include "kernels.h"

namespace pd::kernels::reference {

using cpu::make_reduce_plan;
using cpu::ReducePlan;

namespace {
template <typename T>
using Acc = SumAcc<T>;

template <typename T>
Acc<T> sum_contiguous(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) return sum_run_widest(x, n);
  else return sum_run<T>(x, n);
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// max (want_max) or min of each group; NaN wins, as in PyTorch. Empty groups have no answer.
template <typename T>
void extreme(const Tensor& x, const std::vector<int64_t>& axis, Tensor& out, bool want_max, const char* op) {
  const ReducePlan p = make_reduce_plan(x.shape(), axis, op);
  PD_CHECK(p.group_size > 0 || p.out_numel == 0, ErrorCode::kInvalidArgument,
           "{}: argument 'x' must have no empty reduced axis, but received shape {}", op, shape_str(x.shape()));
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    bool first = true;
    T best{};
    p.for_each_in_group(o, [&](int64_t i) {
      const T v = xd[i];
      if (first || is_nan(v) || (!is_nan(best) && (want_max ? v > best : v < best))) best = v;
      first = false;
    });
    od[o] = best;
  }
}
}  // namespace

template <typename T>
void sum(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const ReducePlan p = make_reduce_plan(x.shape(), axis, "sum");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  cpu::parallel_for(p.out_numel, p.group_size, [&](int64_t o) {
    Acc<T> acc = 0;
    p.for_each_run_in_group(o, [&](int64_t i, int64_t length, int64_t stride) {
      if (stride == 1) {
        acc += sum_contiguous<T>(xd + i, length);
        return;
      }
      for (int64_t k = 0; k < length; ++k) acc += static_cast<Acc<T>>(xd[i + k * stride]);
    });
    od[o] = static_cast<T>(acc);
  });
}

template <typename T>
void mean(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const ReducePlan p = make_reduce_plan(x.shape(), axis, "mean");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    double acc = 0;
    p.for_each_in_group(o, [&](int64_t i) { acc += static_cast<double>(xd[i]); });
    od[o] = static_cast<T>(acc / static_cast<double>(p.group_size));  // empty group: 0/0 = NaN
  }
}

template <typename T>
void max(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  extreme<T>(x, axis, out, true, "max");
}

template <typename T>
void min(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  extreme<T>(x, axis, out, false, "min");
}

template <typename T>
void argmax(const KernelContext& ctx, const Tensor& x, int64_t axis, bool keepdim, Tensor& out) {
  const ReducePlan p = make_reduce_plan(x.shape(), {axis}, "argmax");
  PD_CHECK(p.group_size > 0 || p.out_numel == 0, ErrorCode::kInvalidArgument,
           "argmax: argument 'x' must not be empty along 'axis' {}, but received shape {}", axis,
           shape_str(x.shape()));
  const T* xd = x.data<T>();
  int64_t* od = out.data<int64_t>();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    // Groups are walked in axis order, so k is the position along the axis; strict > keeps the first.
    int64_t k = 0, best_k = 0;
    T best{};
    p.for_each_in_group(o, [&](int64_t i) {
      const T v = xd[i];
      if (k == 0 || (!is_nan(best) && (is_nan(v) || v > best))) {
        best = v;
        best_k = k;
      }
      ++k;
    });
    od[o] = best_k;
  }
}

template <typename T>
void logsumexp(const KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& axis, bool keepdim, Tensor& out) {
  const ReducePlan p = make_reduce_plan(x.shape(), axis, "logsumexp");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t o = 0; o < p.out_numel; ++o) {
    double m = -inf;  // empty group: log(0) = -inf
    p.for_each_in_group(o, [&](int64_t i) {
      const double v = static_cast<double>(xd[i]);
      if (std::isnan(v) || v > m) m = std::isnan(m) ? m : v;
    });
    // All -inf, any +inf, or NaN: the max is already the answer (and x - m would give NaN).
    if (std::isinf(m) || std::isnan(m)) {
      od[o] = static_cast<T>(m);
      continue;
    }
    double s = 0;
    p.for_each_in_group(o, [&](int64_t i) { s += std::exp(static_cast<double>(xd[i]) - m); });
    od[o] = static_cast<T>(m + std::log(s));
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(sum, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(mean, reference, float, double)
PD_INSTANTIATE_KERNELS(max, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(min, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(argmax, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(logsumexp, reference, float, double)
