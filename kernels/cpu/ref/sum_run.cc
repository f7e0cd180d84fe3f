// The widest form of each float sum loop (sum_run.h) this CPU runs, chosen once per process.
#include "cpu/ref/sum_run.h"

#include "cpu/common/widest.h"
#include "cpu/ref/bn_rows.h"

namespace pd::kernels::reference {
using cpu::widest;

double sum_run_widest(const float* x, int64_t n) {
  static const auto run = widest(&sum_run<float>, &sum_run_avx2, &sum_run_avx512);
  return run(x, n);
}

void shifted_sums_run_widest(const float* x, int64_t n, double shift, double* sum, double* sum_sq) {
  static const auto run = widest(&shifted_sums_run<float>, &shifted_sums_run_avx2, &shifted_sums_run_avx512);
  run(x, n, shift, sum, sum_sq);
}

void affine_run_widest(const float* x, int64_t n, BnAffine<float> a, float* y) {
  static const auto run = widest(&affine_run<float>, &affine_run_avx2, &affine_run_avx512);
  run(x, n, a, y);
}

void bn_dx_run_widest(const float* g, const float* x, int64_t n, float ka, float kx, float mean, float k0, BnAffine<float> a,
                      float* dx) {
  static const auto run = widest(&bn_dx_run<float>, &bn_dx_run_avx2, &bn_dx_run_avx512);
  run(g, x, n, ka, kx, mean, k0, a, dx);
}

void grad_sums_run_widest(const float* g, const float* x, int64_t n, float mean, BnAffine<float> a, double* sum_g,
                          double* sum_gd) {
  static const auto run = widest(&grad_sums_run<float>, &grad_sums_run_avx2, &grad_sums_run_avx512);
  run(g, x, n, mean, a, sum_g, sum_gd);
}

void layer_norm_row_widest(const float* x, const float* scale, const float* bias, int64_t n, double eps, float* y, double* mean,
                           double* invstd) {
  static const auto run = widest(&layer_norm_row<float>, &layer_norm_row_avx2, &layer_norm_row_avx512);
  run(x, scale, bias, n, eps, y, mean, invstd);
}

void layer_norm_grad_row_widest(const float* x, const float* g, const float* scale, int64_t n, double mu, double is,
                                double* ds, double* db, float* dx) {
  static const auto run = widest(&layer_norm_grad_row<float>, &layer_norm_grad_row_avx2, &layer_norm_grad_row_avx512);
  run(x, g, scale, n, mu, is, ds, db, dx);
}

void bn_stats_rows_widest(const float* x, int64_t rows, int64_t C, const double* shift, double* sum, double* sum_sq) {
  static const auto run = widest(&bn_stats_rows<float>, &bn_stats_rows_avx2, &bn_stats_rows_avx512);
  run(x, rows, C, shift, sum, sum_sq);
}

void bn_affine_rows_widest(const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* y) {
  static const auto run = widest(&bn_affine_rows<float>, &bn_affine_rows_avx2, &bn_affine_rows_avx512);
  run(x, rows, C, k, y);
}

void bn_grad_sums_rows_widest(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, double* sum_g,
                              double* sum_gd) {
  static const auto run = widest(&bn_grad_sums_rows<float>, &bn_grad_sums_rows_avx2, &bn_grad_sums_rows_avx512);
  run(g, x, rows, C, k, sum_g, sum_gd);
}

void bn_dx_rows_widest(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* dx) {
  static const auto run = widest(&bn_dx_rows<float>, &bn_dx_rows_avx2, &bn_dx_rows_avx512);
  run(g, x, rows, C, k, dx);
}

void bn_add_relu_rows_widest(const float* x, const float* r, int64_t rows, int64_t C, BnRowConsts<float> k, float* y) {
  static const auto run = widest(&bn_add_relu_rows<float>, &bn_add_relu_rows_avx2, &bn_add_relu_rows_avx512);
  run(x, r, rows, C, k, y);
}

void bn_masked_grad_sums_rows_widest(const float* g, const float* out, const float* x, int64_t rows, int64_t C, const float* mean,
                                     float* gm, double* sum_g, double* sum_gd) {
  static const auto run =
      widest(&bn_masked_grad_sums_rows<float>, &bn_masked_grad_sums_rows_avx2, &bn_masked_grad_sums_rows_avx512);
  run(g, out, x, rows, C, mean, gm, sum_g, sum_gd);
}

}  // namespace pd::kernels::reference
