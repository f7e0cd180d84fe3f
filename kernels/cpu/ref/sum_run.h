// Sums of n contiguous values in 8 independent accumulators (reduce.cc's sums, batch_norm's statistics
// and gradient sums, layer_norm's rows). One accumulator is a chain of dependent adds, 4 cycles each,
// which made a conv bias gradient (6 sums of 50k floats) latency-bound; floats are summed in double,
// so the order hardly shows. The loops are compiled again for AVX2 and AVX-512 (isa/sum_runs.cc),
// where the 8 chains become the lanes of one or two vectors: the same additions in the same order.
// Plain sums give the same bits on every instruction set; where a product is added (d * d, g * xhat)
// the vector forms may fuse it into an FMA, so those differ from the baseline build in the last bits.
// The *_widest functions (sum_run.cc) pick the form the CPU runs. batch_norm's elementwise passes
// (affine_run, bn_dx_run) live here beside its sums, so that they too get the vector builds.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/common/wrapping.h"

namespace pd::kernels::reference {

// Floating sums accumulate in double; integer sums in 64 bits that wrap (int32 sums wrap only on the
// final store).
template <typename T>
using SumAcc = cpu::WideAcc<T>;

constexpr int kSumChains = 8;

template <typename A>
inline A combine_chains(const A (&part)[kSumChains]) {
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// Static: each file compiles its own copy for its own instruction set (see optimizer_rows.h).
// sum of x[0..n)
template <typename T>
static inline SumAcc<T> sum_run(const T* x, int64_t n) {
  SumAcc<T> part[kSumChains] = {};
  int64_t k = 0;
  for (; k + kSumChains <= n; k += kSumChains)
    for (int j = 0; j < kSumChains; ++j) part[j] += static_cast<SumAcc<T>>(x[k + j]);
  SumAcc<T> acc = combine_chains(part);
  for (; k < n; ++k) acc += static_cast<SumAcc<T>>(x[k]);
  return acc;
}

// sum of (x - mean)^2 (a two-pass variance's second pass)
template <typename T>
static inline double sum_sq_dev_run(const T* x, int64_t n, double mean) {
  double part[kSumChains] = {};
  int64_t k = 0;
  for (; k + kSumChains <= n; k += kSumChains)
    for (int j = 0; j < kSumChains; ++j) {
      const double d = static_cast<double>(x[k + j]) - mean;
      part[j] += d * d;
    }
  double acc = combine_chains(part);
  for (; k < n; ++k) {
    const double d = static_cast<double>(x[k]) - mean;
    acc += d * d;
  }
  return acc;
}

// sums of d = x - shift and of d * d, added to *sum and *sum_sq: batch_norm's mean and variance in one
// pass over the data instead of two. The shift, a value of the data, keeps the variance
// (sum_sq - sum * sum / n) / n clear of the cancellation that |mean| >> std would cause.
template <typename T>
static inline void shifted_sums_run(const T* x, int64_t n, double shift, double* sum, double* sum_sq) {
  double ps[kSumChains] = {}, pq[kSumChains] = {};
  int64_t k = 0;
  for (; k + kSumChains <= n; k += kSumChains)
    for (int j = 0; j < kSumChains; ++j) {
      const double d = static_cast<double>(x[k + j]) - shift;
      ps[j] += d;
      pq[j] += d * d;
    }
  double as = combine_chains(ps), aq = combine_chains(pq);
  for (; k < n; ++k) {
    const double d = static_cast<double>(x[k]) - shift;
    as += d;
    aq += d * d;
  }
  *sum += as;
  *sum_sq += aq;
}

// batch_norm's value y = x * mul + add (its per-channel constants folded), and with fuse_relu (relu
// set) relu of it. The gradient loops below recompute y with the same expression to find where relu
// passed the gradient, so they agree with the forward pass bit for bit.
template <typename T>
struct BnAffine {
  T mul, add;
  bool relu;
};

template <typename T>
static inline T bn_value(T x, const BnAffine<T>& a) {
  return x * a.mul + a.add;
}

// y = bn_value(x), relu'd with a.relu.
template <typename T>
static inline void affine_run(const T* __restrict x, int64_t n, BnAffine<T> a, T* __restrict y) {
  if (a.relu) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = std::max(bn_value(x[i], a), T(0));
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = bn_value(x[i], a);
  }
}

// The gradient that reaches batch_norm's value: g, or 0 where a fused relu clipped it.
template <bool kRelu, typename T>
static inline T bn_passed(T g, T x, const BnAffine<T>& a) {
  return !kRelu || bn_value(x, a) > T(0) ? g : T(0);
}

template <bool kRelu, typename T>
static inline void bn_dx_run_as(const T* __restrict g, const T* __restrict x, int64_t n, T ka, T kx, T mean, T k0,
                                const BnAffine<T>& a, T* __restrict dx) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] = ka * bn_passed<kRelu>(g[i], x[i], a) + kx * (x[i] - mean) + k0;
}

// dx = ka * g' + kx * (x - mean) + k0, g' the gradient passed by the fused relu (if any): batch_norm_grad's
// elementwise pass.
template <typename T>
static inline void bn_dx_run(const T* g, const T* x, int64_t n, T ka, T kx, T mean, T k0, BnAffine<T> a, T* dx) {
  if (a.relu) bn_dx_run_as<true>(g, x, n, ka, kx, mean, k0, a, dx);
  else bn_dx_run_as<false>(g, x, n, ka, kx, mean, k0, a, dx);
}

template <bool kRelu, typename T>
static inline void grad_sums_run_as(const T* g, const T* x, int64_t n, T mean, const BnAffine<T>& a, double* sum_g,
                                    double* sum_gd) {
  double pg[kSumChains] = {}, pd[kSumChains] = {};
  int64_t k = 0;
  for (; k + kSumChains <= n; k += kSumChains)
    for (int j = 0; j < kSumChains; ++j) {
      const double gv = static_cast<double>(bn_passed<kRelu>(g[k + j], x[k + j], a));
      pg[j] += gv;
      pd[j] += gv * static_cast<double>(x[k + j] - mean);
    }
  double ag = combine_chains(pg), ad = combine_chains(pd);
  for (; k < n; ++k) {
    const double gv = static_cast<double>(bn_passed<kRelu>(g[k], x[k], a));
    ag += gv;
    ad += gv * static_cast<double>(x[k] - mean);
  }
  *sum_g += ag;
  *sum_gd += ad;
}

// sum of g' and of g' * (x - mean), g' as in bn_dx_run, added to *sum_g and *sum_gd (batch_norm_grad's
// dbias and dscale)
template <typename T>
static inline void grad_sums_run(const T* g, const T* x, int64_t n, T mean, BnAffine<T> a, double* sum_g, double* sum_gd) {
  if (a.relu) grad_sums_run_as<true>(g, x, n, mean, a, sum_g, sum_gd);
  else grad_sums_run_as<false>(g, x, n, mean, a, sum_g, sum_gd);
}

// One row of layer_norm: mean and variance in two passes of 8 chains (sum_run, sum_sq_dev_run), then
// y = (x - mean) * invstd [* scale] [+ bias] in one of four branch-free loops, so that it vectorises.
// Returns the mean and 1 / sqrt(var + eps) through *mean and *invstd.
template <typename T>
static inline void layer_norm_row(const T* x, const T* scale, const T* bias, int64_t n, double eps, T* __restrict y,
                                  double* mean, double* invstd) {
  const double mu = n > 0 ? static_cast<double>(sum_run(x, n)) / static_cast<double>(n) : 0.0;
  const double var = n > 0 ? sum_sq_dev_run(x, n, mu) / static_cast<double>(n) : 0.0;
  const double is = 1.0 / std::sqrt(var + eps);
  *mean = mu, *invstd = is;
  const T m = static_cast<T>(mu), k = static_cast<T>(is);
  // `omp simd`: GCC's -O2 cost model does not vectorise a loop that needs a scalar tail on its own.
  if (scale && bias) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * k * scale[i] + bias[i];
  } else if (scale) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * k * scale[i];
  } else if (bias) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * k + bias[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * k;
  }
}

// One row of layer_norm_grad: with xhat = (x - mu) * is and gs = g * scale (scale may be null: 1),
// dx = is * (gs - mean(gs) - xhat * mean(gs * xhat)); adds g * xhat to ds[] and g to db[] (the row's
// share of dscale and dbias). The two row sums run in 8 chains, the rest is elementwise; whether there
// is a scale is a template parameter, so that no loop holds a branch and every loop vectorises.
template <bool kScale, typename T>
static inline void layer_norm_grad_row_as(const T* x, const T* g, const T* scale, int64_t n, double mu, double is,
                                          double* __restrict ds, double* __restrict db, T* __restrict dx) {
  auto scale_at = [scale](int64_t i) { return kScale ? static_cast<double>(scale[i]) : 1.0; };
  double pgs[kSumChains] = {}, pgsx[kSumChains] = {};
  int64_t k = 0;
  for (; k + kSumChains <= n; k += kSumChains) {
#pragma omp simd
    for (int j = 0; j < kSumChains; ++j) {
      const double xhat = (static_cast<double>(x[k + j]) - mu) * is, gv = static_cast<double>(g[k + j]);
      const double gs = gv * scale_at(k + j);
      pgs[j] += gs;
      pgsx[j] += gs * xhat;
      ds[k + j] += gv * xhat;
      db[k + j] += gv;
    }
  }
  double sum_gs = combine_chains(pgs), sum_gsx = combine_chains(pgsx);
  for (; k < n; ++k) {
    const double xhat = (static_cast<double>(x[k]) - mu) * is, gv = static_cast<double>(g[k]);
    const double gs = gv * scale_at(k);
    sum_gs += gs;
    sum_gsx += gs * xhat;
    ds[k] += gv * xhat;
    db[k] += gv;
  }
  const double inv_n = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
  const double mean_gs = sum_gs * inv_n, mean_gsx = sum_gsx * inv_n;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double xhat = (static_cast<double>(x[i]) - mu) * is;
    const double gs = static_cast<double>(g[i]) * scale_at(i);
    dx[i] = static_cast<T>(is * (gs - mean_gs - xhat * mean_gsx));
  }
}

template <typename T>
static inline void layer_norm_grad_row(const T* x, const T* g, const T* scale, int64_t n, double mu, double is, double* ds,
                                       double* db, T* dx) {
  if (scale) layer_norm_grad_row_as<true>(x, g, scale, n, mu, is, ds, db, dx);
  else layer_norm_grad_row_as<false>(x, g, scale, n, mu, is, ds, db, dx);
}

// The float forms for wider instruction sets; call only after the CPU check.
double sum_run_avx2(const float* x, int64_t n);
double sum_run_avx512(const float* x, int64_t n);
void shifted_sums_run_avx2(const float* x, int64_t n, double shift, double* sum, double* sum_sq);
void shifted_sums_run_avx512(const float* x, int64_t n, double shift, double* sum, double* sum_sq);
void affine_run_avx2(const float* x, int64_t n, BnAffine<float> a, float* y);
void affine_run_avx512(const float* x, int64_t n, BnAffine<float> a, float* y);
void bn_dx_run_avx2(const float* g, const float* x, int64_t n, float ka, float kx, float mean, float k0, BnAffine<float> a, float* dx);
void bn_dx_run_avx512(const float* g, const float* x, int64_t n, float ka, float kx, float mean, float k0, BnAffine<float> a,
                      float* dx);
void grad_sums_run_avx2(const float* g, const float* x, int64_t n, float mean, BnAffine<float> a, double* sum_g, double* sum_gd);
void grad_sums_run_avx512(const float* g, const float* x, int64_t n, float mean, BnAffine<float> a, double* sum_g,
                          double* sum_gd);
void layer_norm_row_avx2(const float* x, const float* scale, const float* bias, int64_t n, double eps, float* y, double* mean,
                         double* invstd);
void layer_norm_row_avx512(const float* x, const float* scale, const float* bias, int64_t n, double eps, float* y, double* mean,
                           double* invstd);
void layer_norm_grad_row_avx2(const float* x, const float* g, const float* scale, int64_t n, double mu, double is, double* ds,
                              double* db, float* dx);
void layer_norm_grad_row_avx512(const float* x, const float* g, const float* scale, int64_t n, double mu, double is,
                                double* ds, double* db, float* dx);

// The widest float form this CPU runs (sum_run.cc); other types call the templates.
double sum_run_widest(const float* x, int64_t n);
void shifted_sums_run_widest(const float* x, int64_t n, double shift, double* sum, double* sum_sq);
void affine_run_widest(const float* x, int64_t n, BnAffine<float> a, float* y);
void bn_dx_run_widest(const float* g, const float* x, int64_t n, float ka, float kx, float mean, float k0, BnAffine<float> a,
                      float* dx);
void grad_sums_run_widest(const float* g, const float* x, int64_t n, float mean, BnAffine<float> a, double* sum_g,
                          double* sum_gd);
void layer_norm_row_widest(const float* x, const float* scale, const float* bias, int64_t n, double eps, float* y, double* mean,
                           double* invstd);
void layer_norm_grad_row_widest(const float* x, const float* g, const float* scale, int64_t n, double mu, double is,
                                double* ds, double* db, float* dx);

}  // namespace pd::kernels::reference
