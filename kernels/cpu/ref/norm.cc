// Reference batch_norm and layer_norm with their gradients. Statistics accumulate in double.
#include <cmath>

#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// x viewed as [N, C, inner] with channels on axis 1.
struct ChannelView {
  int64_t N, C, inner;
};

ChannelView channel_view(const Shape& s) {
  ChannelView v{s.empty() ? 1 : s[0], s.size() < 2 ? 1 : s[1], 1};
  for (size_t i = 2; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

// x viewed as [outer, inner] where inner spans the normalised axes.
void norm_split(const Shape& s, int64_t begin_norm_axis, int64_t& outer, int64_t& inner) {
  const int64_t nd = static_cast<int64_t>(s.size());
  const int64_t begin = nd == 0 ? 0 : normalize_axis(begin_norm_axis, nd, "layer_norm: argument 'begin_norm_axis'");
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < nd; ++i) (i < begin ? outer : inner) *= s[i];
}

}  // namespace

template <typename T>
void batch_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                const Tensor& running_var, double momentum, double epsilon, bool training, Tensor& out,
                Tensor& saved_mean, Tensor& saved_invstd) {
  const ChannelView v = channel_view(x.shape());
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  T* rm = running_mean.data<T>();
  T* rv = running_var.data<T>();
  T* sm = saved_mean.data<T>();
  T* si = saved_invstd.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* bs = bias.defined() ? bias.data<T>() : nullptr;
  const int64_t n = v.N * v.inner;
  for (int64_t c = 0; c < v.C; ++c) {
    double mean, var;
    if (training && n > 0) {
      double sum = 0;
      for (int64_t b = 0; b < v.N; ++b)
        for (int64_t i = 0; i < v.inner; ++i) sum += xd[(b * v.C + c) * v.inner + i];
      mean = sum / static_cast<double>(n);
      double sq = 0;  // two-pass variance: no cancellation
      for (int64_t b = 0; b < v.N; ++b)
        for (int64_t i = 0; i < v.inner; ++i) {
          const double d = xd[(b * v.C + c) * v.inner + i] - mean;
          sq += d * d;
        }
      var = sq / static_cast<double>(n);
      const double unbiased = n > 1 ? sq / static_cast<double>(n - 1) : var;
      rm[c] = static_cast<T>(momentum * rm[c] + (1 - momentum) * mean);
      rv[c] = static_cast<T>(momentum * rv[c] + (1 - momentum) * unbiased);
    } else if (training) {
      // No elements: nothing to normalise and no statistics to fold into the running ones.
      mean = 0;
      var = 0;
    } else {
      mean = rm[c];
      var = rv[c];
    }
    const double invstd = 1.0 / std::sqrt(var + epsilon);
    sm[c] = static_cast<T>(mean);
    si[c] = static_cast<T>(invstd);
    const double g = sc ? static_cast<double>(sc[c]) : 1.0;
    const double b0 = bs ? static_cast<double>(bs[c]) : 0.0;
    for (int64_t b = 0; b < v.N; ++b)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t k = (b * v.C + c) * v.inner + i;
        od[k] = static_cast<T>((xd[k] - mean) * invstd * g + b0);
      }
  }
}

template <typename T>
void batch_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& saved_mean, const Tensor& saved_invstd,
                     const Tensor& grad, bool training, Tensor& dx, Tensor& dscale, Tensor& dbias) {
  const ChannelView v = channel_view(x.shape());
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  const T* sm = saved_mean.data<T>();
  const T* si = saved_invstd.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  T* dxd = dx.data<T>();
  T* dsd = dscale.defined() ? dscale.data<T>() : nullptr;
  T* dbd = dbias.defined() ? dbias.data<T>() : nullptr;
  const int64_t n = v.N * v.inner;
  for (int64_t c = 0; c < v.C; ++c) {
    const double mean = sm[c], invstd = si[c];
    double sum_g = 0, sum_gx = 0;  // dbias and dscale
    for (int64_t b = 0; b < v.N; ++b)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t k = (b * v.C + c) * v.inner + i;
        sum_g += gd[k];
        sum_gx += gd[k] * (xd[k] - mean) * invstd;
      }
    if (dsd) dsd[c] = static_cast<T>(sum_gx);
    if (dbd) dbd[c] = static_cast<T>(sum_g);
    const double g = sc ? static_cast<double>(sc[c]) : 1.0;
    for (int64_t b = 0; b < v.N; ++b)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t k = (b * v.C + c) * v.inner + i;
        if (training) {
          // Batch statistics depend on x: dx = scale*invstd/n * (n*g - sum(g) - xhat*sum(g*xhat)).
          const double xhat = (xd[k] - mean) * invstd;
          dxd[k] = static_cast<T>(g * invstd / static_cast<double>(n) *
                                  (static_cast<double>(n) * gd[k] - sum_g - xhat * sum_gx));
        } else {
          dxd[k] = static_cast<T>(gd[k] * g * invstd);
        }
      }
  }
}

template <typename T>
void layer_norm(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t begin_norm_axis, double epsilon,
                Tensor& out, Tensor& mean, Tensor& invstd) {
  int64_t outer, inner;
  norm_split(x.shape(), begin_norm_axis, outer, inner);
  const T* xd = x.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* bs = bias.defined() ? bias.data<T>() : nullptr;
  T* od = out.data<T>();
  T* md = mean.data<T>();
  T* id = invstd.data<T>();
  for (int64_t r = 0; r < outer; ++r) {
    const T* row = xd + r * inner;
    double sum = 0;
    for (int64_t i = 0; i < inner; ++i) sum += row[i];
    const double mu = inner > 0 ? sum / static_cast<double>(inner) : 0.0;
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i) sq += (row[i] - mu) * (row[i] - mu);
    const double var = inner > 0 ? sq / static_cast<double>(inner) : 0.0;
    const double is = 1.0 / std::sqrt(var + epsilon);
    md[r] = static_cast<T>(mu);
    id[r] = static_cast<T>(is);
    for (int64_t i = 0; i < inner; ++i) {
      double y = (row[i] - mu) * is;
      if (sc) y *= sc[i];
      if (bs) y += bs[i];
      od[r * inner + i] = static_cast<T>(y);
    }
  }
}

template <typename T>
void layer_norm_grad(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Tensor& mean, const Tensor& invstd,
                     const Tensor& grad, int64_t begin_norm_axis, Tensor& dx, Tensor& dscale, Tensor& dbias) {
  int64_t outer, inner;
  norm_split(x.shape(), begin_norm_axis, outer, inner);
  const T* xd = x.data<T>();
  const T* gd = grad.data<T>();
  const T* sc = scale.defined() ? scale.data<T>() : nullptr;
  const T* md = mean.data<T>();
  const T* id = invstd.data<T>();
  T* dxd = dx.data<T>();
  std::vector<double> ds(static_cast<size_t>(inner), 0.0), db(static_cast<size_t>(inner), 0.0);
  for (int64_t r = 0; r < outer; ++r) {
    const double mu = md[r], is = id[r];
    // dx = invstd * (gs - mean(gs) - xhat * mean(gs * xhat)) with gs = grad * scale.
    double sum_gs = 0, sum_gsx = 0;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t k = r * inner + i;
      const double xhat = (xd[k] - mu) * is;
      const double gs = gd[k] * (sc ? static_cast<double>(sc[i]) : 1.0);
      sum_gs += gs;
      sum_gsx += gs * xhat;
      ds[i] += gd[k] * xhat;
      db[i] += gd[k];
    }
    const double inv_n = inner > 0 ? 1.0 / static_cast<double>(inner) : 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t k = r * inner + i;
      const double xhat = (xd[k] - mu) * is;
      const double gs = gd[k] * (sc ? static_cast<double>(sc[i]) : 1.0);
      dxd[k] = static_cast<T>(is * (gs - sum_gs * inv_n - xhat * sum_gsx * inv_n));
    }
  }
  if (dscale.defined()) {
    T* p = dscale.data<T>();
    for (int64_t i = 0; i < inner; ++i) p[i] = static_cast<T>(ds[i]);
  }
  if (dbias.defined()) {
    T* p = dbias.data<T>();
    for (int64_t i = 0; i < inner; ++i) p[i] = static_cast<T>(db[i]);
  }
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(batch_norm, reference, float, double)
PD_INSTANTIATE_KERNELS(batch_norm_grad, reference, float, double)
PD_INSTANTIATE_KERNELS(layer_norm, reference, float, double)
PD_INSTANTIATE_KERNELS(layer_norm_grad, reference, float, double)
