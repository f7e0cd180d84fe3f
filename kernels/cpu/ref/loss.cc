// Reference cross_entropy (softmax + NLL, with PyTorch-style label smoothing) and its gradient.
#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/common/loss_reduction.h"
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

using cpu::parse_reduction;
using cpu::Reduction;

// logits viewed as [outer, C, inner]; sample (o, i) reads classes at base + c*inner.
struct ClassView {
  int64_t outer = 1, C = 1, inner = 1;
};

ClassView class_view(const Tensor& logits, int64_t axis, const char* what) {
  ClassView v;
  const int64_t a = normalize_axis(axis, logits.dim(), what);
  const Shape& s = logits.shape();
  for (int64_t i = 0; i < a; ++i) v.outer *= s[i];
  for (int64_t i = a + 1; i < logits.dim(); ++i) v.inner *= s[i];
  v.C = s[a];
  return v;
}

// Labels as int64, each checked to be a class index or ignore_index.
std::vector<int64_t> read_labels(const Tensor& label, int64_t C, int64_t ignore_index, const char* op) {
  std::vector<int64_t> ids = label.to_vector<int64_t>();
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t y = ids[k];
    PD_CHECK(y == ignore_index || (y >= 0 && y < C), ErrorCode::kOutOfRange,
             "{}: argument 'label' value {} at index {} is out of range [0, {})", op, y, k, C);
  }
  return ids;
}

// max and log-sum-exp of one sample's logits.
template <typename T>
void sample_stats(const T* base, int64_t C, int64_t step, double& mx, double& lse) {
  mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, static_cast<double>(base[c * step]));
  double sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += std::exp(base[c * step] - mx);
  lse = std::log(sum);
}

}  // namespace

template <typename T>
void cross_entropy(const KernelContext& ctx, const Tensor& logits, const Tensor& label, int64_t axis, int64_t ignore_index,
                   double label_smoothing, const std::string& reduction, Tensor& out) {
  const Reduction red = parse_reduction(reduction, "cross_entropy");
  const ClassView v = class_view(logits, axis, "cross_entropy: argument 'axis'");
  const std::vector<int64_t> ids = read_labels(label, v.C, ignore_index, "cross_entropy");
  const T* ld = logits.data<T>();
  T* od = out.data<T>();
  const double eps = label_smoothing;
  double total = 0;
  int64_t count = 0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t s = o * v.inner + i;
      double loss = 0;
      if (ids[s] != ignore_index) {
        const T* base = ld + o * v.C * v.inner + i;
        double mx, lse;
        sample_stats(base, v.C, v.inner, mx, lse);
        // -log p[c] = mx + lse - x[c]
        const double nll = mx + lse - base[ids[s] * v.inner];
        double smooth = 0;
        if (eps != 0) {
          for (int64_t c = 0; c < v.C; ++c) smooth += mx + lse - base[c * v.inner];
          smooth /= static_cast<double>(v.C);
        }
        loss = (1 - eps) * nll + eps * smooth;
        ++count;
      }
      if (red == Reduction::kNone) od[s] = static_cast<T>(loss);
      total += loss;
    }
  if (red == Reduction::kSum) od[0] = static_cast<T>(total);
  // No counted samples: 0/0 = NaN, as PyTorch.
  if (red == Reduction::kMean) od[0] = static_cast<T>(total / static_cast<double>(count));
}

template <typename T>
void cross_entropy_grad(const KernelContext& ctx, const Tensor& logits, const Tensor& label, const Tensor& grad, int64_t axis,
                        int64_t ignore_index, double label_smoothing, const std::string& reduction,
                        Tensor& dlogits) {
  const Reduction red = parse_reduction(reduction, "cross_entropy_grad");
  const ClassView v = class_view(logits, axis, "cross_entropy_grad: argument 'axis'");
  const std::vector<int64_t> ids = read_labels(label, v.C, ignore_index, "cross_entropy_grad");
  const T* ld = logits.data<T>();
  const T* gd = grad.data<T>();
  T* dd = dlogits.data<T>();
  const double eps = label_smoothing;
  int64_t count = 0;
  for (int64_t id : ids) count += id != ignore_index;
  const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(count) : 1.0;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t s = o * v.inner + i;
      const T* base = ld + o * v.C * v.inner + i;
      T* dbase = dd + o * v.C * v.inner + i;
      if (ids[s] == ignore_index) {
        for (int64_t c = 0; c < v.C; ++c) dbase[c * v.inner] = T(0);
        continue;
      }
      const double g = (red == Reduction::kNone ? static_cast<double>(gd[s]) : static_cast<double>(gd[0])) * scale;
      double mx, lse;
      sample_stats(base, v.C, v.inner, mx, lse);
      for (int64_t c = 0; c < v.C; ++c) {
        const double p = std::exp(base[c * v.inner] - mx - lse);
        const double target = (c == ids[s] ? 1 - eps : 0.0) + eps / static_cast<double>(v.C);
        dbase[c * v.inner] = static_cast<T>(g * (p - target));
      }
    }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(cross_entropy, reference, float, double)
PD_INSTANTIATE_KERNELS(cross_entropy_grad, reference, float, double)
