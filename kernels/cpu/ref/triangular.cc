// tril and triu over the last two axes of a batch of matrices.
#include "kernels.h"

namespace pd::kernels::reference {
namespace {

// Copies x's [..., M, N] matrices into out, zeroing (i, j) where keep(j - i) is false.
template <typename T, typename Keep>
void triangle(const Tensor& x, Tensor& out, Keep keep) {
  const int64_t M = x.shape()[x.dim() - 2], N = x.shape()[x.dim() - 1];
  const int64_t batches = M * N == 0 ? 0 : x.numel() / (M * N);
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t p = (b * M + i) * N + j;
        od[p] = keep(j - i) ? xd[p] : T(0);
      }
}

}  // namespace

template <typename T>
void tril(const KernelContext& ctx, const Tensor& x, int64_t diagonal, Tensor& out) {
  triangle<T>(x, out, [=](int64_t d) { return d <= diagonal; });
}

template <typename T>
void triu(const KernelContext& ctx, const Tensor& x, int64_t diagonal, Tensor& out) {
  triangle<T>(x, out, [=](int64_t d) { return d >= diagonal; });
}

}  // namespace pd::kernels::reference

PD_INSTANTIATE_KERNELS(tril, reference, float, double, int32_t, int64_t)
PD_INSTANTIATE_KERNELS(triu, reference, float, double, int32_t, int64_t)
