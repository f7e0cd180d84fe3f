// batch_norm's loops over channels-last data ([rows, C], channels innermost): the per-channel sums
// and the elementwise passes walk a row at a time with the channels as the vector lanes, each channel
// with its own constants. Compiled again for AVX2 and AVX-512 (isa/sum_runs.cc) beside sum_run.h's
// NCHW loops; the *_widest functions (sum_run.cc) pick the form the CPU runs. As there, the gradient
// recomputes the value x * mul + add with the forward's expression to find where a fused relu passed.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

// Vectors are passed by pointer or kept local, but GCC still notes the AVX ABI for inline helpers.
#pragma GCC diagnostic ignored "-Wpsabi"

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

// The float sums of a chunk's rows (a few hundred at most) run in float on 16 channels at a time, held
// in registers for the whole chunk (GCC vectors: one AVX-512 register, two AVX2 ones), two rows'
// accumulators apart to halve the chain of adds; the chunk's totals are then added in double. In double
// throughout, every value took a conversion and the per-channel sums a load and a store per row: the
// statistics pass ran at half the memory's speed. Channels past the last whole 16 take the double loop.
typedef float BnLanes __attribute__((vector_size(64)));
constexpr int64_t kBnLanes = 16;

static inline BnLanes bn_load_lanes(const float* p) {
  BnLanes v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

// sums[j][l] added to out[j][c0 + l] in double.
template <int K>
static inline void bn_add_lanes(const BnLanes (&sums)[K], int64_t c0, double* const (&out)[K]) {
  for (int j = 0; j < K; ++j)
    for (int l = 0; l < kBnLanes; ++l) out[j][c0 + l] += static_cast<double>(sums[j][l]);
}

// The sums over rows [0, rows) of the two lane vectors terms(r, a, b) gives, even and odd rows in
// accumulators of their own, added in double to out0[c0 + l] and out1[c0 + l].
template <typename F>
static inline void bn_sum_lane_pairs(int64_t rows, int64_t c0, const F& terms, double* out0, double* out1) {
  BnLanes s0 = {}, s1 = {}, q0 = {}, q1 = {}, a, b;
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    terms(r, a, b), s0 += a, q0 += b;
    terms(r + 1, a, b), s1 += a, q1 += b;
  }
  if (r < rows) terms(r, a, b), s0 += a, q0 += b;
  bn_add_lanes<2>({s0 + s1, q0 + q1}, c0, {out0, out1});
}

// Channels [0, returned) of bn_stats_rows for floats.
static inline int64_t bn_stats_rows_lanes(const float* x, int64_t rows, int64_t C, const double* shift, double* sum,
                                          double* sum_sq) {
  int64_t c0 = 0;
  for (; c0 + kBnLanes <= C; c0 += kBnLanes) {
    BnLanes sh;
    for (int l = 0; l < kBnLanes; ++l) sh[l] = static_cast<float>(shift[c0 + l]);  // a value of x: exact
    bn_sum_lane_pairs(rows, c0, [&](int64_t r, BnLanes& d, BnLanes& dd) {
      d = bn_load_lanes(x + r * C + c0) - sh;
      dd = d * d;
    }, sum, sum_sq);
  }
  return c0;
}

// sum[c] += x[r, c] - shift[c] and sum_sq[c] += its square, over rows [0, rows) (a chunk: floats are
// summed in float within it, see above).
template <typename T>
static inline void bn_stats_rows(const T* x, int64_t rows, int64_t C, const double* shift, double* __restrict sum,
                                 double* __restrict sum_sq) {
  int64_t c0 = 0;
  if constexpr (std::is_same_v<T, float>) c0 = bn_stats_rows_lanes(x, rows, C, shift, sum, sum_sq);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * C;
#pragma omp simd
    for (int64_t c = c0; c < C; ++c) {
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

// Channels [0, returned) of bn_grad_sums_rows_as for floats, 16 at a time in float as bn_stats_rows_lanes.
template <bool kRelu>
static inline int64_t bn_grad_sums_rows_lanes(const float* g, const float* x, int64_t rows, int64_t C,
                                              const BnRowConsts<float>& k, double* sum_g, double* sum_gd) {
  int64_t c0 = 0;
  for (; c0 + kBnLanes <= C; c0 += kBnLanes) {
    const BnLanes mul = bn_load_lanes(k.mul + c0), add = bn_load_lanes(k.add + c0), mean = bn_load_lanes(k.mean + c0);
    bn_sum_lane_pairs(rows, c0, [&](int64_t r, BnLanes& gv, BnLanes& gd) {  // row r's g' and g' * (x - mean)
      const BnLanes xv = bn_load_lanes(x + r * C + c0);
      gv = bn_load_lanes(g + r * C + c0);
      if constexpr (kRelu) gv = xv * mul + add > 0 ? gv : BnLanes{};  // bn_row_passed's mask
      gd = gv * (xv - mean);
    }, sum_g, sum_gd);
  }
  return c0;
}

template <bool kRelu, typename T>
static inline void bn_grad_sums_rows_as(const T* g, const T* x, int64_t rows, int64_t C, const BnRowConsts<T>& k,
                                        double* __restrict sum_g, double* __restrict sum_gd) {
  int64_t c0 = 0;
  if constexpr (std::is_same_v<T, float>) c0 = bn_grad_sums_rows_lanes<kRelu>(g, x, rows, C, k, sum_g, sum_gd);
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = c0; c < C; ++c) {
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
      T gp = g[i];
      if constexpr (kRelu) gp = bn_row_passed<true>(gp, x[i], k.mul[c], k.add[c]);  // (k.mul is null without a relu)
      dx[i] = k.ka[c] * gp + k.kx[c] * (x[i] - k.mean[c]) + k.k0[c];
    }
  }
}

// dx = ka * g' + kx * (x - mean) + k0.
template <typename T>
static inline void bn_dx_rows(const T* g, const T* x, int64_t rows, int64_t C, BnRowConsts<T> k, T* dx) {
  if (k.relu) bn_dx_rows_as<true>(g, x, rows, C, k, dx);
  else bn_dx_rows_as<false>(g, x, rows, C, k, dx);
}

// batch_norm_add_relu's value: y = max(x * mul + add + r, 0) (max keeps a NaN, as relu does).
template <typename T>
static inline void bn_add_relu_rows(const T* __restrict x, const T* __restrict r, int64_t rows, int64_t C, BnRowConsts<T> k,
                                    T* __restrict y) {
  for (int64_t row = 0; row < rows; ++row) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) {
      const int64_t i = row * C + c;
      y[i] = std::max(bn_row_value(x[i], k.mul[c], k.add[c]) + r[i], T(0));
    }
  }
}

// Channels [0, returned) of bn_masked_grad_sums_rows for floats, 16 at a time in float as bn_stats_rows_lanes.
static inline int64_t bn_masked_grad_sums_rows_lanes(const float* g, const float* out, const float* x, int64_t rows, int64_t C,
                                                     const float* mean, float* gm, double* sum_g, double* sum_gd) {
  int64_t c0 = 0;
  for (; c0 + kBnLanes <= C; c0 += kBnLanes) {
    const BnLanes mu = bn_load_lanes(mean + c0);
    bn_sum_lane_pairs(rows, c0, [&](int64_t r, BnLanes& gv, BnLanes& gd) {  // row r's g' (stored to gm) and g' * (x - mean)
      const int64_t i = r * C + c0;
      gv = bn_load_lanes(out + i) > 0 ? bn_load_lanes(g + i) : BnLanes{};
      __builtin_memcpy(gm + i, &gv, sizeof gv);
      gd = gv * (bn_load_lanes(x + i) - mu);
    }, sum_g, sum_gd);
  }
  return c0;
}

// batch_norm_add_relu_grad's first pass: g' = g where out > 0, else 0, stored to gm (the residual's
// gradient, and what bn_dx_rows then reads as g); sum_g[c] += g' and sum_gd[c] += g' * (x - mean).
template <typename T>
static inline void bn_masked_grad_sums_rows(const T* g, const T* out, const T* x, int64_t rows, int64_t C, const T* mean,
                                            T* __restrict gm, double* __restrict sum_g, double* __restrict sum_gd) {
  int64_t c0 = 0;
  if constexpr (std::is_same_v<T, float>) c0 = bn_masked_grad_sums_rows_lanes(g, out, x, rows, C, mean, gm, sum_g, sum_gd);
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t c = c0; c < C; ++c) {
      const int64_t i = r * C + c;
      const T gv = out[i] > T(0) ? g[i] : T(0);
      gm[i] = gv;
      sum_g[c] += static_cast<double>(gv);
      sum_gd[c] += static_cast<double>(gv) * static_cast<double>(x[i] - mean[c]);
    }
  }
}

#define PD_BN_ROWS_DECLARE(suffix)                                                                                          \
  void bn_stats_rows##suffix(const float* x, int64_t rows, int64_t C, const double* shift, double* sum, double* sum_sq);    \
  void bn_affine_rows##suffix(const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* y);                     \
  void bn_grad_sums_rows##suffix(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, double* sum_g, \
                                 double* sum_gd);                                                                            \
  void bn_dx_rows##suffix(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* dx);    \
  void bn_add_relu_rows##suffix(const float* x, const float* r, int64_t rows, int64_t C, BnRowConsts<float> k, float* y);    \
  void bn_masked_grad_sums_rows##suffix(const float* g, const float* out, const float* x, int64_t rows, int64_t C,          \
                                        const float* mean, float* gm, double* sum_g, double* sum_gd);
PD_BN_ROWS_DECLARE(_avx2)
PD_BN_ROWS_DECLARE(_avx512)
PD_BN_ROWS_DECLARE(_widest)  // the widest float form this CPU runs; other types call the templates
#undef PD_BN_ROWS_DECLARE

}  // namespace pd::kernels::reference
