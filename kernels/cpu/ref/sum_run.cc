// The widest form of each float sum loop (sum_run.h) this CPU runs, chosen once per process.
#include "cpu/ref/sum_run.h"

#include "cpu/common/widest.h"

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

}  // namespace pd::kernels::reference
