// The optimizer updates (sgd_step, momentum_step, adam_step) over a range [begin, end) of one parameter's
// elements. optimizer.cc splits a parameter into ranges across threads; the float loops are compiled
// again for AVX2 and AVX-512 (isa/optimizer_rows.cc) and taken when the CPU has them. The loops carry
// `omp simd` over restrict pointers, and these files build with -fno-math-errno, so that the sqrt and
// the division vectorise (with errno semantics GCC keeps a scalar call per element). The loops are
// static: each file that includes this header compiles its own copy for its own instruction set, and the
// linker never swaps one file's AVX-512 copy in for another's baseline one.
#pragma once
#include <cmath>
#include <cstdint>

namespace pd::kernels::reference::optim {

template <typename T>
struct SgdArgs {
  T* p;
  const T* g;
  T lr, weight_decay;
};

template <typename T>
struct MomentumArgs {
  T* p;
  T* velocity;
  const T* g;
  T lr, momentum, weight_decay;
  bool nesterov;
};

template <typename T>
struct AdamArgs {
  T* p;
  T* m;
  T* v;
  const T* g;
  T beta1, beta2, eps, weight_decay;
  T step_size;        // lr / (1 - beta1^step)
  T inv_bc2_sqrt;     // 1 / sqrt(1 - beta2^step)
  T decay;            // 1 - lr * weight_decay, for the decoupled (AdamW) form
  bool decoupled;
};

template <typename T>
static inline void sgd_rows(const SgdArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.p;
  const T* __restrict g = a.g;
  const T lr = a.lr, wd = a.weight_decay;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}

template <typename T>
static inline void momentum_rows(const MomentumArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.p;
  T* __restrict vel = a.velocity;
  const T* __restrict g = a.g;
  const T lr = a.lr, mu = a.momentum, wd = a.weight_decay;
  if (a.nesterov) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      const T d = g[i] + wd * p[i];
      vel[i] = mu * vel[i] + d;
      p[i] -= lr * (d + mu * vel[i]);
    }
  } else {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      vel[i] = mu * vel[i] + (g[i] + wd * p[i]);
      p[i] -= lr * vel[i];
    }
  }
}

template <typename T>
static inline void adam_rows(const AdamArgs<T>& a, int64_t begin, int64_t end) {
  T* __restrict p = a.p;
  T* __restrict m = a.m;
  T* __restrict v = a.v;
  const T* __restrict g = a.g;
  const T b1 = a.beta1, b2 = a.beta2, eps = a.eps, step_size = a.step_size, inv_bc2 = a.inv_bc2_sqrt;
  // The two weight-decay forms as constants, so the loop has no branch: decoupled scales p, the
  // classic form adds wd * p to the gradient.
  const T decay = a.decoupled ? a.decay : T(1), coupled_wd = a.decoupled ? T(0) : a.weight_decay;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    const T pi = p[i] * decay;
    const T gi = g[i] + coupled_wd * pi;
    const T mi = b1 * m[i] + (T(1) - b1) * gi;
    const T vi = b2 * v[i] + (T(1) - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * mi / (std::sqrt(vi) * inv_bc2 + eps);
  }
}

// The float loops for wider instruction sets (isa/optimizer_rows.cc); call only after the CPU check.
void sgd_rows_avx2(const SgdArgs<float>& a, int64_t begin, int64_t end);
void sgd_rows_avx512(const SgdArgs<float>& a, int64_t begin, int64_t end);
void momentum_rows_avx2(const MomentumArgs<float>& a, int64_t begin, int64_t end);
void momentum_rows_avx512(const MomentumArgs<float>& a, int64_t begin, int64_t end);
void adam_rows_avx2(const AdamArgs<float>& a, int64_t begin, int64_t end);
void adam_rows_avx512(const AdamArgs<float>& a, int64_t begin, int64_t end);

}  // namespace pd::kernels::reference::optim
