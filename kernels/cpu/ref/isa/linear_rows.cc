// small_linear's kernel and linear_epilogue (small_linear.h) compiled for one instruction set: the GEMM
// of small_gemm.h, then bias, residual and activation over each block of rows while it is in L1; and
// the matrix-vector product of a linear of one row. The build compiles this file once per set
// (pd_add_isa_variants, libcore/CMakeLists.txt).
#include <cmath>
#include <cstdint>

#include "cpu/ref/small_linear.h"

#if defined(__x86_64__)
#include "cpu/common/simd.h"
#include "cpu/common/target_pragma.h"

PD_TARGET_PUSH(PD_ISA_TARGET)
#include "cpu/common/small_gemm.h"

namespace pd::kernels::reference {
namespace {

// Rows [r0, r1): bias, residual, activation; the columns past the last whole vector one at a time.
template <class S, Activation A>
void epilogue(const SmallLinear& c, int64_t r0, int64_t r1) {
  using V = typename S::V;
  const int64_t vec_end = c.N - c.N % S::L;
  for (int64_t r = r0; r < r1; ++r) {
    float* o = c.out + r * c.N;
    const float* res = c.residual ? c.residual + r * c.N : nullptr;
    for (int64_t j = 0; j < vec_end; j += S::L) {
      V v = S::load(o + j);
      if (c.bias) v = S::add(v, S::load(c.bias + j));
      if (res) v = S::add(v, S::load(res + j));
      if constexpr (A == Activation::relu) v = S::max(S::zero(), v);  // the second operand for NaN: NaN stays
      if constexpr (A == Activation::gelu)
        v = S::mul(S::mul(S::set1(0.5f), v), S::add(S::set1(1.f), S::erf(S::mul(v, S::set1(0.70710678118654752f)))));
      S::store(o + j, v);
    }
    for (int64_t j = vec_end; j < c.N; ++j) {
      float v = o[j] + (c.bias ? c.bias[j] : 0.f) + (res ? res[j] : 0.f);
      if constexpr (A == Activation::relu) v = v < 0.f ? 0.f : v;
      if constexpr (A == Activation::gelu) v = 0.5f * v * (1.f + std::erf(v * 0.70710678118654752f));
      o[j] = v;
    }
  }
}

// Blocks of rows whose results stay in L1 between the GEMM and the epilogue. One thread: at these sizes
// (2-8 us) waking a second costs more than it saves (measured on the ViT at batch 1).
template <class S, Activation A>
void run(const SmallLinear& c) {
  constexpr int64_t kRows = 16;
  for (int64_t r0 = 0; r0 < c.M; r0 += kRows) {
    const int64_t rows = c.M - r0 < kRows ? c.M - r0 : kRows;
    cpu::gemm<S>(rows, c.N, c.K, c.x + r0 * c.K, c.K, 1, c.wt, c.N, c.out + r0 * c.N, c.N, false);
    epilogue<S, A>(c, r0, r0 + rows);
  }
}

template <class S>
void dispatch(const SmallLinear& c) {
  switch (c.act) {
    case Activation::relu: return run<S, Activation::relu>(c);
    case Activation::gelu: return run<S, Activation::gelu>(c);
    default: return run<S, Activation::none>(c);
  }
}

template <class S>
void dispatch_epilogue(const SmallLinear& c, int64_t r0, int64_t r1) {
  switch (c.act) {
    case Activation::relu: return epilogue<S, Activation::relu>(c, r0, r1);
    case Activation::gelu: return epilogue<S, Activation::gelu>(c, r0, r1);
    default: return epilogue<S, Activation::none>(c, r0, r1);
  }
}

// out[n] = w[n, :] . x + bias[n] for n in [n0, n1): four rows of the weight a step, so that four streams
// of it are in flight (the product is bound by reading the weight), each row's sum in the same order
// whatever the range it falls in.
template <class S>
void gemv(const Gemv& g, int64_t n0, int64_t n1) {
  using V = typename S::V;
  const int64_t K = g.K, whole = K - K % S::L;
  const auto finish = [&](int64_t n, V acc) {
    float sum = S::reduce_add(acc);
    for (int64_t k = whole; k < K; ++k) sum += g.w[n * K + k] * g.x[k];
    g.out[n] = g.bias ? sum + g.bias[n] : sum;
  };
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float* w = g.w + n * K;
    V a0 = S::zero(), a1 = S::zero(), a2 = S::zero(), a3 = S::zero();
    for (int64_t k = 0; k < whole; k += S::L) {
      const V x = S::load(g.x + k);
      a0 = S::fmadd(S::load(w + k), x, a0);
      a1 = S::fmadd(S::load(w + K + k), x, a1);
      a2 = S::fmadd(S::load(w + 2 * K + k), x, a2);
      a3 = S::fmadd(S::load(w + 3 * K + k), x, a3);
    }
    finish(n, a0), finish(n + 1, a1), finish(n + 2, a2), finish(n + 3, a3);
  }
  for (; n < n1; ++n) {
    V a = S::zero();
    for (int64_t k = 0; k < whole; k += S::L) a = S::fmadd(S::load(g.w + n * K + k), S::load(g.x + k), a);
    finish(n, a);
  }
}

// M rows of x against R weight rows a step (AVX-512: 2, AVX2: 1, so that the M x R sums, the R weight
// vectors and an x vector fit the registers): each weight row is read once for all M rows.
template <class S, int M>
void few_rows(const Gemv& g, int64_t n0, int64_t n1) {
  using V = typename S::V;
  constexpr int R = S::L == 16 ? 2 : 1;
  const int64_t K = g.K, whole = K - K % S::L;
  const auto finish = [&](int64_t m, int64_t n, V acc) {
    float sum = S::reduce_add(acc);
    for (int64_t k = whole; k < K; ++k) sum += g.w[n * K + k] * g.x[m * K + k];
    g.out[m * g.N + n] = g.bias ? sum + g.bias[n] : sum;
  };
  const auto step = [&]<int Q>(int64_t n) {
    V acc[M][Q];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 2
      for (int r = 0; r < Q; ++r) acc[m][r] = S::zero();
    for (int64_t k = 0; k < whole; k += S::L) {
      V w[Q];
#pragma GCC unroll 2
      for (int r = 0; r < Q; ++r) w[r] = S::load(g.w + (n + r) * K + k);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        const V x = S::load(g.x + m * K + k);
#pragma GCC unroll 2
        for (int r = 0; r < Q; ++r) acc[m][r] = S::fmadd(w[r], x, acc[m][r]);
      }
    }
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < Q; ++r) finish(m, n + r, acc[m][r]);
  };
  int64_t n = n0;
  for (; n + R <= n1; n += R) step.template operator()<R>(n);
  for (; n < n1; ++n) step.template operator()<1>(n);
}

template <class S>
void gemv_dispatch(const Gemv& g, int64_t n0, int64_t n1) {
  switch (g.M) {
    case 1: return gemv<S>(g, n0, n1);
    case 2: return few_rows<S, 2>(g, n0, n1);
    case 3: return few_rows<S, 3>(g, n0, n1);
    case 4: return few_rows<S, 4>(g, n0, n1);
    case 5: return few_rows<S, 5>(g, n0, n1);
    case 6: return few_rows<S, 6>(g, n0, n1);
    case 7: return few_rows<S, 7>(g, n0, n1);
    default: return few_rows<S, 8>(g, n0, n1);
  }
}

}  // namespace

void PD_ISA_FN(gemv_rows)(const Gemv& g, int64_t n0, int64_t n1) { gemv_dispatch<simd::PD_ISA>(g, n0, n1); }
void PD_ISA_FN(small_linear)(const SmallLinear& c) { dispatch<simd::PD_ISA>(c); }
void PD_ISA_FN(linear_epilogue)(const SmallLinear& c, int64_t r0, int64_t r1) { dispatch_epilogue<simd::PD_ISA>(c, r0, r1); }

}  // namespace pd::kernels::reference
PD_TARGET_POP

#else  // not x86-64: small_linear declines before calling these

namespace pd::kernels::reference {
void PD_ISA_FN(gemv_rows)(const Gemv&, int64_t, int64_t) {}
void PD_ISA_FN(small_linear)(const SmallLinear&) {}
void PD_ISA_FN(linear_epilogue)(const SmallLinear&, int64_t, int64_t) {}
}  // namespace pd::kernels::reference
#endif
