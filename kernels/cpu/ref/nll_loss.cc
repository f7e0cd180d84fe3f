// nll_loss of log-probabilities x [N, C, d...] (or one sample [C]) and integer labels, and its gradient.
// Labels equal to ignore_index count for nothing; mean divides by the number of the others.
#include <algorithm>
#include <vector>

#include "cpu/common/loss_reduction.h"
#include "cpu/common/nll_view.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

using cpu::Reduction;

using cpu::NllView;
using cpu::nll_view;

std::vector<int64_t> read_labels(const Tensor& label, int64_t C, int64_t ignore_index, const char* op) {
  std::vector<int64_t> ids = label.to_vector<int64_t>();
  for (size_t k = 0; k < ids.size(); ++k)
    PD_CHECK(ids[k] == ignore_index || (ids[k] >= 0 && ids[k] < C), ErrorCode::kOutOfRange,
             "{}: label {} (at index {} of 'label') is out of range [0, {}) for C = {} classes (ignore_index is {})", op,
             ids[k], k, C, C, ignore_index);
  return ids;
}

}  // namespace

template <typename T>
void nll_loss(const KernelContext& ctx, const Tensor& x, const Tensor& label, int64_t ignore_index, const std::string& reduction,
              Tensor& out) {
  const Reduction red = cpu::parse_reduction(reduction, "nll_loss");
  const NllView v = nll_view(x);
  const std::vector<int64_t> ids = read_labels(label, v.C, ignore_index, "nll_loss");
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  double total = 0;
  int64_t count = 0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t s = o * v.inner + i;
      double loss = 0;
      if (ids[s] != ignore_index) {
        loss = -static_cast<double>(xd[(o * v.C + ids[s]) * v.inner + i]);
        ++count;
      }
      if (red == Reduction::kNone) od[s] = static_cast<T>(loss);
      total += loss;
    }
  if (red == Reduction::kSum) od[0] = static_cast<T>(total);
  if (red == Reduction::kMean) od[0] = static_cast<T>(total / static_cast<double>(count));  // none counted: NaN
}

template <typename T>
void nll_loss_grad(const KernelContext& ctx, const Tensor& x, const Tensor& label, const Tensor& grad, int64_t ignore_index,
                   const std::string& reduction, Tensor& dx) {
  const Reduction red = cpu::parse_reduction(reduction, "nll_loss_grad");
  const NllView v = nll_view(x);
  const std::vector<int64_t> ids = read_labels(label, v.C, ignore_index, "nll_loss_grad");
  const T* gd = grad.data<T>();
  T* dd = dx.data<T>();
  std::fill_n(dd, dx.numel(), T(0));
  int64_t count = 0;
  for (int64_t id : ids) count += id != ignore_index;
  const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(count) : 1.0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t s = o * v.inner + i;
      if (ids[s] == ignore_index) continue;
      const double g = red == Reduction::kNone ? static_cast<double>(gd[s]) : static_cast<double>(gd[0]);
      dd[(o * v.C + ids[s]) * v.inner + i] = static_cast<T>(-g * scale);
    }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(nll_loss, reference, float, double)
PD_INSTANTIATE_KERNELS(nll_loss_grad, reference, float, double)
