// Forward and backward as the batch_norm kernels compute them, with the per-channel sums added over
// the ranks in between (the shape of PyTorch's batch_norm_stats / gather / backward_reduce / elemt):
//   forward:  [sum x-K, sum (x-K)^2, n] over ranks (K: the running mean) -> mean, invstd -> y = (x - mean) * invstd * scale + bias
//   backward: [sum dy, sum dy * xhat] over ranks -> dx = scale * invstd * (dy - mean(dy) - xhat * mean(dy xhat));
//             dscale, dbias from this rank's sums (the gradient reducer averages them like any other).
// Each row's sum in the input's type, rows added in f64. Written out rather than composed from ops: a composite backward loses digits
// where the local and global means differ.
#include "pd/model/sync_batch_norm.h"

#include <fmt/format.h>

#include <cmath>

#include "op_api.h"
#include "pd/autograd/autograd.h"
#include "pd/core/error.h"
#include "pd/core/tensor_inl.h"
#include "pd/core/thread_pool.h"

namespace pd::model {
namespace {

// fn(channel) for every channel, channels across the library's threads (each channel's sums in one
// fixed order, so results do not depend on the thread count).
template <typename Fn>
void for_channels(int64_t c, Fn&& fn) {
  parallel_items(c, fn);
}

// Per-row sums in T (a few hundred values; vectorised), rows added up in double.
template <typename T>
T row_sum(const T* __restrict x, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += x[k];
  return s;
}

template <typename T>
T row_sum_dev(const T* __restrict x, int64_t n, T mean) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += x[k] - mean;
  return s;
}

template <typename T>
T row_sum_sq_dev(const T* __restrict x, int64_t n, T mean) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += (x[k] - mean) * (x[k] - mean);
  return s;
}

template <typename T>
T row_dot_dev(const T* __restrict g, const T* __restrict x, int64_t n, T mean) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += g[k] * (x[k] - mean);
  return s;
}

// x as [n, c, inner]: row(i, ch) is the offset of sample i's `inner` values of channel ch.
struct Dims {
  int64_t n = 0, c = 0, inner = 1;
  explicit Dims(const Shape& s) : n(s[0]), c(s[1]) {
    for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  }
  double count() const { return static_cast<double>(n * inner); }
  int64_t row(int64_t i, int64_t ch) const { return (i * c + ch) * inner; }
};

template <typename T>
class SyncBatchNormNode final : public GradNode {
 public:
  SyncBatchNormNode(Tensor x, Tensor scale, std::vector<double> mean, std::vector<double> invstd, double count,
                    const CrossRankSum& sum, std::string what)
      : x_(std::move(x)), scale_(std::move(scale)), mean_(std::move(mean)), invstd_(std::move(invstd)), count_(count),
        sum_(sum), what_(std::move(what)) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    PD_CHECK(!creating_graph(), ErrorCode::kNotImplemented,
             "sync_batch_norm '{}': no higher-order gradients (backward with create_graph)", what_);
    NoGradGuard no_grad;
    const Dims d(x_.shape());
    // Every rank takes part in the sums, whether or not a gradient reached this node here.
    const Tensor dy = grads[0].defined() ? grads[0].contiguous() : ops::zeros(x_.shape(), x_.dtype());
    const T* x = x_.data<T>();
    const T* g = dy.data<T>();
    std::vector<double> sums(static_cast<size_t>(2 * d.c), 0.0);  // [sum dy, sum dy * xhat] per channel
    for_channels(d.c, [&](int64_t ch) {
      double a = 0, b = 0;
      const T mean = static_cast<T>(mean_[ch]);
      for (int64_t i = 0; i < d.n; ++i) {
        a += row_sum(g + d.row(i, ch), d.inner);
        b += row_dot_dev(g + d.row(i, ch), x + d.row(i, ch), d.inner, mean);
      }
      sums[ch] = a;
      sums[d.c + ch] = b * invstd_[ch];
    });
    std::vector<double> local = sums;
    sum_(sums.data(), sums.size(), what_ + ", backward");
    Tensor dx = Tensor::empty(x_.shape(), x_.dtype());
    T* out = dx.data<T>();
    const T* w = scale_.data<T>();
    for_channels(d.c, [&](int64_t ch) {
      // dx = k0 (g - mean(g) - xhat mean(g xhat)), folded into dx = ka g + kb x + kc per channel.
      const double mean_dy = sums[ch] / count_, mean_dyx = sums[d.c + ch] / count_, k0 = w[ch] * invstd_[ch];
      const double kb_d = -k0 * invstd_[ch] * mean_dyx;
      const T ka = static_cast<T>(k0), kb = static_cast<T>(kb_d), kc = static_cast<T>(-k0 * mean_dy - kb_d * mean_[ch]);
      for (int64_t i = 0; i < d.n; ++i) {
        const T* __restrict gr = g + d.row(i, ch);
        const T* __restrict xr = x + d.row(i, ch);
        T* __restrict o = out + d.row(i, ch);
#pragma omp simd
        for (int64_t k = 0; k < d.inner; ++k) o[k] = ka * gr[k] + kb * xr[k] + kc;
      }
    });
    Tensor dscale = Tensor::empty({d.c}, x_.dtype()), dbias = Tensor::empty({d.c}, x_.dtype());
    for (int64_t ch = 0; ch < d.c; ++ch) {
      dbias.data<T>()[ch] = static_cast<T>(local[ch]);
      dscale.data<T>()[ch] = static_cast<T>(local[d.c + ch]);
    }
    return {dx, dscale, dbias};
  }
  std::string name() const override { return "SyncBatchNormBackward"; }

 private:
  Tensor x_, scale_;
  std::vector<double> mean_, invstd_;
  double count_;
  CrossRankSum sum_;
  std::string what_;
};

template <typename T>
Tensor forward(const Tensor& x_in, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
               const Tensor& running_var, double momentum, double epsilon, const CrossRankSum& sum, const std::string& what) {
  const Tensor x = x_in.contiguous();
  const Dims d(x.shape());
  const T* xp = x.data<T>();
  // One pass and one collective per layer: sums of x - K and (x - K)^2 with K the running mean (the
  // same on every rank, since the running statistics are synchronised too, and close to the batch
  // mean), so that the variance E[(x-K)^2] - E[x-K]^2 does not cancel.
  const T* rm_now = running_mean.data<T>();
  std::vector<double> sums(static_cast<size_t>(2 * d.c + 1), 0.0);  // [sum x-K, sum (x-K)^2, count]
  for_channels(d.c, [&](int64_t ch) {
    double a = 0, q = 0;
    for (int64_t i = 0; i < d.n; ++i) {
      a += row_sum_dev(xp + d.row(i, ch), d.inner, rm_now[ch]);
      q += row_sum_sq_dev(xp + d.row(i, ch), d.inner, rm_now[ch]);
    }
    sums[ch] = a;
    sums[d.c + ch] = q;
  });
  sums[2 * d.c] = d.count();
  sum(sums.data(), sums.size(), fmt::format("batch_norm statistics of '{}'", what));
  const double count = sums[2 * d.c];
  PD_CHECK(count > 0, ErrorCode::kInvalidArgument, "sync_batch_norm '{}': the global batch is empty", what);
  std::vector<double> mean(static_cast<size_t>(d.c)), var(static_cast<size_t>(d.c)), invstd(static_cast<size_t>(d.c));
  for (int64_t ch = 0; ch < d.c; ++ch) {
    const double shift = sums[ch] / count;
    mean[ch] = rm_now[ch] + shift;
    var[ch] = std::max(0.0, sums[d.c + ch] / count - shift * shift);
    invstd[ch] = 1.0 / std::sqrt(var[ch] + epsilon);
  }
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  T* yp = y.data<T>();
  const T* w = scale.contiguous().data<T>();
  const T* b = bias.contiguous().data<T>();
  for_channels(d.c, [&](int64_t ch) {
    const double k0_d = w[ch] * invstd[ch];
    const T k0 = static_cast<T>(k0_d), k1 = static_cast<T>(b[ch] - mean[ch] * k0_d);
    for (int64_t i = 0; i < d.n; ++i) {
      const T* __restrict row = xp + d.row(i, ch);
      T* __restrict o = yp + d.row(i, ch);
#pragma omp simd
      for (int64_t k = 0; k < d.inner; ++k) o[k] = row[k] * k0 + k1;
    }
  });
  // Running statistics as batch_norm keeps them (Paddle's momentum, unbiased variance), of the global batch.
  T* rm = running_mean.data<T>();
  T* rv = running_var.data<T>();
  const double unbias = count > 1 ? count / (count - 1) : 1.0;
  for (int64_t ch = 0; ch < d.c; ++ch) {
    rm[ch] = static_cast<T>(momentum * rm[ch] + (1 - momentum) * mean[ch]);
    rv[ch] = static_cast<T>(momentum * rv[ch] + (1 - momentum) * var[ch] * unbias);
  }
  if (any_requires_grad({&x_in, &scale, &bias})) {
    auto node = std::make_shared<SyncBatchNormNode<T>>(x, scale.contiguous(), std::move(mean), std::move(invstd), count, sum, what);
    node->next_edges = {gradient_edge(x_in), gradient_edge(scale), gradient_edge(bias)};
    node->place = x.place();
    set_history(y, node, 0);
  }
  return y;
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, double momentum, double epsilon, const CrossRankSum& sum,
                       const std::string& what) {
  PD_CHECK(x.dim() >= 2 && x.place().is_cpu() && (x.dtype() == DType::f32 || x.dtype() == DType::f64),
           ErrorCode::kNotImplemented, "sync_batch_norm '{}': takes f32 or f64 [N, C, ...] on the CPU, got {} {} on {}", what,
           dtype_name(x.dtype()), shape_str(x.shape()), x.place().str());
  const int64_t c = x.shape()[1];
  for (const Tensor* t : {&scale, &bias, &running_mean, &running_var})
    PD_CHECK(t->shape() == Shape{c} && t->dtype() == x.dtype() && t->is_contiguous(), ErrorCode::kShape,
             "sync_batch_norm '{}': scale, bias and running statistics must be contiguous {} [{}], got {} {}", what,
             dtype_name(x.dtype()), c, dtype_name(t->dtype()), shape_str(t->shape()));
  return x.dtype() == DType::f32 ? forward<float>(x, scale, bias, running_mean, running_var, momentum, epsilon, sum, what)
                                 : forward<double>(x, scale, bias, running_mean, running_var, momentum, epsilon, sum, what);
}

}  // namespace pd::model
