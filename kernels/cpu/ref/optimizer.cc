// sgd_step, momentum_step, adam_step: one pass over the parameter, updating it and its optimizer state in
// place (each *_out is its input); no temporaries are allocated. The loops (optimizer_rows.h) run over
// fixed-size ranges of the parameter across threads, with the widest vector code the CPU has. Each
// element's update is independent of the others, so the result never depends on the thread count.
#include "cpu/ref/optimizer_rows.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/common/parallel.h"
#include "kernels.h"
#include "cpu/common/widest.h"

namespace pd::kernels::reference {
namespace {

constexpr int64_t kRange = 4096;  // elements a thread takes at a time: 64 KiB of a float parameter's state

template <typename Args>
using RowsFn = void (*)(const Args&, int64_t, int64_t);

template <typename Args>
void run_ranges(RowsFn<Args> rows, const Args& args, int64_t n) {
  const int64_t ranges = (n + kRange - 1) / kRange;
  cpu::parallel_for(ranges, kRange, [&](int64_t r) { rows(args, r * kRange, std::min(n, (r + 1) * kRange)); });
}

}  // namespace

template <typename T>
void sgd_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, double lr, double weight_decay,
              Tensor& param_out) {
  const optim::SgdArgs<T> a{param_out.data<T>(), grad.data<T>(), static_cast<T>(lr), static_cast<T>(weight_decay)};
  RowsFn<optim::SgdArgs<T>> rows = optim::sgd_rows<T>;
  if constexpr (std::is_same_v<T, float>) rows = cpu::widest(rows, optim::sgd_rows_avx2, optim::sgd_rows_avx512);
  run_ranges(rows, a, param.numel());
}

template <typename T>
void momentum_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& velocity, double lr,
                   double momentum, bool nesterov, double weight_decay, Tensor& param_out, Tensor& velocity_out) {
  const optim::MomentumArgs<T> a{param_out.data<T>(), velocity_out.data<T>(), grad.data<T>(), static_cast<T>(lr),
                                 static_cast<T>(momentum), static_cast<T>(weight_decay), nesterov};
  RowsFn<optim::MomentumArgs<T>> rows = optim::momentum_rows<T>;
  if constexpr (std::is_same_v<T, float>) rows = cpu::widest(rows, optim::momentum_rows_avx2, optim::momentum_rows_avx512);
  run_ranges(rows, a, param.numel());
}

template <typename T>
void adam_step(const KernelContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& m_in, const Tensor& v_in,
               double lr, int64_t step, double beta1, double beta2, double eps, double weight_decay, bool decoupled,
               Tensor& param_out, Tensor& m_out, Tensor& v_out) {
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const optim::AdamArgs<T> a{param_out.data<T>(),
                             m_out.data<T>(),
                             v_out.data<T>(),
                             grad.data<T>(),
                             static_cast<T>(beta1),
                             static_cast<T>(beta2),
                             static_cast<T>(eps),
                             static_cast<T>(weight_decay),
                             static_cast<T>(lr / bc1),
                             static_cast<T>(1.0 / std::sqrt(bc2)),
                             static_cast<T>(1.0 - lr * weight_decay),
                             decoupled};
  RowsFn<optim::AdamArgs<T>> rows = optim::adam_rows<T>;
  if constexpr (std::is_same_v<T, float>) rows = cpu::widest(rows, optim::adam_rows_avx2, optim::adam_rows_avx512);
  run_ranges(rows, a, param.numel());
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(sgd_step, reference, float, double)
PD_INSTANTIATE_KERNELS(momentum_step, reference, float, double)
PD_INSTANTIATE_KERNELS(adam_step, reference, float, double)
