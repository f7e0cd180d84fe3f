// batch_norm's loops over channels-last data ([rows, C], channels innermost): the per-channel sums
// and the elementwise passes walk a row at a time with the channels as the vector lanes, each channel
// with its own constants. Compiled again for AVX2 and AVX-512 (isa/sum_runs.cc) beside sum_run.h's
// NCHW loops; the *_widest functions (sum_run.cc) pick the form the CPU runs. As there, the gradient
// recomputes the value x * mul + add with the forward's expression to find where a fused relu passed.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pd::kernels::reference {

// Per-channel constants of one batch_norm (arrays of C): value = x * mul + add (relu'd with relu);
// the gradient's dx = ka * g' + kx * (x - mean) + k0, g' the gradient the relu passed.
template <typename T>
struct BnRowConsts {
  const T *mul = nullptr, *add = nullptr, *mean = nullptr, *ka = nullptr, *kx = nullptr, *k0 = nullptr;
  bool relu = false;
};

template <typename T>
static inline T bn_row_value(T x, T mul, T add) {
  return x * mul + add;
}

// sum[c] += x[r, c] - shift[c] and sum_sq[c] += its square, over rows [0, rows).
template <typename T>
static inline void bn_stats_rows(const T* x, int64_t rows, int64_t C, const double* shift, double* __restrict sum,
                                 double* __restrict sum_sq) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(row[c]) - shift[c];
      sum[c] += d;
      sum_sq[c] += d * d;
    }
  }
}

template <bool kRelu, typename T>
static inline void bn_affine_rows_as(const T* __restrict x, int64_t rows, int64_t C, const BnRowConsts<T>& k, T* __restrict y) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const T v = bn_row_value(x[r * C + c], k.mul[c], k.add[c]);
      y[r * C + c] = kRelu ? std::max(v, T(0)) : v;
    }
  }
}

// y = x * mul + add, relu'd with k.relu.
template <typename T>
static inline void bn_affine_rows(const T* x, int64_t rows, int64_t C, BnRowConsts<T> k, T* y) {
  if (k.relu) bn_affine_rows_as<true>(x, rows, C, k, y);
  else bn_affine_rows_as<false>(x, rows, C, k, y);
}

template <bool kRelu, typename T>
static inline T bn_row_passed(T g, T x, T mul, T add) {
  return !kRelu || bn_row_value(x, mul, add) > T(0) ? g : T(0);
}

template <bool kRelu, typename T>
static inline void bn_grad_sums_rows_as(const T* g, const T* x, int64_t rows, int64_t C, const BnRowConsts<T>& k,
                                        double* __restrict sum_g, double* __restrict sum_gd) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const int64_t i = r * C + c;
      const double gv = static_cast<double>(bn_row_passed<kRelu>(g[i], x[i], k.mul[c], k.add[c]));
      sum_g[c] += gv;
      sum_gd[c] += gv * static_cast<double>(x[i] - k.mean[c]);
    }
  }
}

// sum_g[c] += g' and sum_gd[c] += g' * (x - mean): batch_norm_grad's dbias and dscale / invstd.
template <typename T>
static inline void bn_grad_sums_rows(const T* g, const T* x, int64_t rows, int64_t C, BnRowConsts<T> k, double* sum_g,
                                     double* sum_gd) {
  if (k.relu) bn_grad_sums_rows_as<true>(g, x, rows, C, k, sum_g, sum_gd);
  else bn_grad_sums_rows_as<false>(g, x, rows, C, k, sum_g, sum_gd);
}

template <bool kRelu, typename T>
static inline void bn_dx_rows_as(const T* __restrict g, const T* __restrict x, int64_t rows, int64_t C, const BnRowConsts<T>& k,
                                 T* __restrict dx) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const int64_t i = r * C + c;
      dx[i] = k.ka[c] * bn_row_passed<kRelu>(g[i], x[i], k.mul[c], k.add[c]) + k.kx[c] * (x[i] - k.mean[c]) + k.k0[c];
    }
  }
}

// dx = ka * g' + kx * (x - mean) + k0.
template <typename T>
static inline void bn_dx_rows(const T* g, const T* x, int64_t rows, int64_t C, BnRowConsts<T> k, T* dx) {
  if (k.relu) bn_dx_rows_as<true>(g, x, rows, C, k, dx);
  else bn_dx_rows_as<false>(g, x, rows, C, k, dx);
}

#define PD_BN_ROWS_DECLARE(suffix)                                                                                          \
  void bn_stats_rows##suffix(const float* x, int64_t rows, int64_t C, const double* shift, double* sum, double* sum_sq);    \
  void bn_affine_rows##suffix(const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* y);                     \
  void bn_grad_sums_rows##suffix(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, double* sum_g, \
                                 double* sum_gd);                                                                            \
  void bn_dx_rows##suffix(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* dx);
PD_BN_ROWS_DECLARE(_avx2)
PD_BN_ROWS_DECLARE(_avx512)
PD_BN_ROWS_DECLARE(_widest)  // the widest float form this CPU runs; other types call the templates
#undef PD_BN_ROWS_DECLARE

}  // namespace pd::kernels::reference
