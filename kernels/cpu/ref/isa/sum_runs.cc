// The float sum loops of sum_run.h compiled for one instruction set (libcore/CMakeLists.txt,
// pd_add_isa_variants); sum_run.cc calls them after the CPU check.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cpu/common/target_pragma.h"

#if defined(__x86_64__)
// The loop after every other header, so that only its code takes the target.
PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/ref/bn_rows.h"
#include "cpu/ref/sum_run.h"

namespace pd::kernels::reference {
double PD_ISA_FN(sum_run)(const float* x, int64_t n) { return sum_run(x, n); }
void PD_ISA_FN(shifted_sums_run)(const float* x, int64_t n, double shift, double* sum, double* sum_sq) {
  shifted_sums_run(x, n, shift, sum, sum_sq);
}
void PD_ISA_FN(affine_run)(const float* x, int64_t n, BnAffine<float> a, float* y) { affine_run(x, n, a, y); }
void PD_ISA_FN(bn_dx_run)(const float* g, const float* x, int64_t n, float ka, float kx, float mean, float k0, BnAffine<float> a,
                          float* dx) {
  bn_dx_run(g, x, n, ka, kx, mean, k0, a, dx);
}
void PD_ISA_FN(grad_sums_run)(const float* g, const float* x, int64_t n, float mean, BnAffine<float> a, double* sum_g,
                              double* sum_gd) {
  grad_sums_run(g, x, n, mean, a, sum_g, sum_gd);
}
void PD_ISA_FN(layer_norm_row)(const float* x, const float* scale, const float* bias, int64_t n, double eps, float* y,
                               double* mean, double* invstd) {
  layer_norm_row(x, scale, bias, n, eps, y, mean, invstd);
}
void PD_ISA_FN(layer_norm_grad_row)(const float* x, const float* g, const float* scale, int64_t n, double mu, double is,
                                    double* ds, double* db, float* dx) {
  layer_norm_grad_row(x, g, scale, n, mu, is, ds, db, dx);
}
void PD_ISA_FN(bn_stats_rows)(const float* x, int64_t rows, int64_t C, const double* shift, double* sum, double* sum_sq) {
  bn_stats_rows(x, rows, C, shift, sum, sum_sq);
}
void PD_ISA_FN(bn_affine_rows)(const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* y) {
  bn_affine_rows(x, rows, C, k, y);
}
void PD_ISA_FN(bn_grad_sums_rows)(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, double* sum_g,
                                  double* sum_gd) {
  bn_grad_sums_rows(g, x, rows, C, k, sum_g, sum_gd);
}
void PD_ISA_FN(bn_dx_rows)(const float* g, const float* x, int64_t rows, int64_t C, BnRowConsts<float> k, float* dx) {
  bn_dx_rows(g, x, rows, C, k, dx);
}
void PD_ISA_FN(bn_add_relu_rows)(const float* x, const float* r, int64_t rows, int64_t C, BnRowConsts<float> k, float* y) {
  bn_add_relu_rows(x, r, rows, C, k, y);
}
void PD_ISA_FN(bn_masked_grad_sums_rows)(const float* g, const float* out, const float* x, int64_t rows, int64_t C,
                                         const float* mean, float* gm, double* sum_g, double* sum_gd) {
  bn_masked_grad_sums_rows(g, out, x, rows, C, mean, gm, sum_g, sum_gd);
}
}  // namespace pd::kernels::reference
PD_TARGET_POP

#else  // not x86-64: the CPU checks are false and reduce.cc never calls this
#include "cpu/ref/bn_rows.h"
#include "cpu/ref/sum_run.h"

namespace pd::kernels::reference {
double PD_ISA_FN(sum_run)(const float*, int64_t) { return 0; }
void PD_ISA_FN(shifted_sums_run)(const float*, int64_t, double, double*, double*) {}
void PD_ISA_FN(affine_run)(const float*, int64_t, BnAffine<float>, float*) {}
void PD_ISA_FN(bn_dx_run)(const float*, const float*, int64_t, float, float, float, float, BnAffine<float>, float*) {}
void PD_ISA_FN(grad_sums_run)(const float*, const float*, int64_t, float, BnAffine<float>, double*, double*) {}
void PD_ISA_FN(layer_norm_row)(const float*, const float*, const float*, int64_t, double, float*, double*, double*) {}
void PD_ISA_FN(layer_norm_grad_row)(const float*, const float*, const float*, int64_t, double, double, double*, double*, float*) {}
void PD_ISA_FN(bn_stats_rows)(const float*, int64_t, int64_t, const double*, double*, double*) {}
void PD_ISA_FN(bn_affine_rows)(const float*, int64_t, int64_t, BnRowConsts<float>, float*) {}
void PD_ISA_FN(bn_grad_sums_rows)(const float*, const float*, int64_t, int64_t, BnRowConsts<float>, double*, double*) {}
void PD_ISA_FN(bn_dx_rows)(const float*, const float*, int64_t, int64_t, BnRowConsts<float>, float*) {}
void PD_ISA_FN(bn_add_relu_rows)(const float*, const float*, int64_t, int64_t, BnRowConsts<float>, float*) {}
void PD_ISA_FN(bn_masked_grad_sums_rows)(const float*, const float*, const float*, int64_t, int64_t, const float*, float*, double*,
                                         double*) {}
}  // namespace pd::kernels::reference
#endif
