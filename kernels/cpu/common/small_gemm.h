// A register-blocked GEMM for small operands, written once on a vector type of simd.h: the tiles of
// attention (attention_tiles.h) and the small linears of inference at batch 1 (small_linear.h), where
// a BLAS library's per-call setup costs more than the product. Include it after the target pragma.
#pragma once
#include <cstdint>

namespace pd::kernels::cpu {

// C[MR][NV vectors] (+)= A[MR][K] * B[K][NV vectors]; A's element (r, k) at A[r * a_rs + k * a_cs], so a
// transposed operand needs no copy; B's rows are ldb apart.
template <class S, int MR, int NV>
inline void gemm_block(int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B, int64_t ldb, float* C,
                       int64_t ldc, bool accumulate) {
  using V = typename S::V;
  V c[MR][NV];  // held in registers: the loops over MR and NV unroll completely
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) c[r][j] = accumulate ? S::load(C + r * ldc + j * S::L) : S::zero();
  for (int64_t k = 0; k < K; ++k) {
    V b[NV];
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) b[j] = S::load(B + k * ldb + j * S::L);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const V a = S::broadcast(A + r * a_rs + k * a_cs);
#pragma GCC unroll 2
      for (int j = 0; j < NV; ++j) c[r][j] = S::fmadd(a, b[j], c[r][j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) S::store(C + r * ldc + j * S::L, c[r][j]);
}

// Every row block of one column chunk: MR rows at a time, then the remaining rows in one smaller block.
template <class S, int MR, int NV>
inline void gemm_rows(int64_t M, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B, int64_t ldb,
                      float* C, int64_t ldc, bool accumulate) {
  int64_t r = 0;
  for (; r + MR <= M; r += MR) gemm_block<S, MR, NV>(K, A + r * a_rs, a_rs, a_cs, B, ldb, C + r * ldc, ldc, accumulate);
  const float* a = A + r * a_rs;
  float* c = C + r * ldc;
  switch (M - r) {
    case 1: return gemm_block<S, 1, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate);
    case 2: return gemm_block<S, 2, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate);
    case 3: return gemm_block<S, 3, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate);
    case 4: if constexpr (MR > 4) return gemm_block<S, 4, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate); break;
    case 5: if constexpr (MR > 5) return gemm_block<S, 5, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate); break;
    case 6: if constexpr (MR > 6) return gemm_block<S, 6, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate); break;
    case 7: if constexpr (MR > 7) return gemm_block<S, 7, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, accumulate); break;
    default: break;
  }
}

// C[M][N] (+)= A[M][K] * B[K][N] with N a multiple of S::L (attention pads to 16). Eight accumulators either
// way: 4 rows x 2 vectors, or 8 rows x 1 vector for the last chunk.
template <class S>
inline void gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                 int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + 2 * S::L <= N; j += 2 * S::L) gemm_rows<S, 4, 2>(M, K, A, a_rs, a_cs, B + j, ldb, C + j, ldc, accumulate);
  for (; j < N; j += S::L) gemm_rows<S, 8, 1>(M, K, A, a_rs, a_cs, B + j, ldb, C + j, ldc, accumulate);
}

}  // namespace pd::kernels::cpu
