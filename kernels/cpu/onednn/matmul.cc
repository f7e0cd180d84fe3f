// matmul (batched, broadcasting) and linear through the oneDNN matmul primitive. Transposes are
// not materialised: they are expressed as swapped strides in the memory descriptors. A linear of one
// row goes to the reference GEMV, a small one to small_linear.h.
#include <algorithm>

#include "cpu/onednn/matmul_common.h"
#include "cpu/ref/small_linear.h"
#include "kernels.h"
#include "pd/core/cpu_features.h"

namespace pd::kernels::onednn {

template <typename T>
void matmul(const KernelContext& ctx, const Tensor& x, const Tensor& y, bool transpose_x, bool transpose_y, Tensor& out) {
  if (out.numel() == 0) return;
  if (x.dim() == 1 || y.dim() == 1 || beyond_onednn_rank(out.dim()))
    return reference::matmul<float>(ctx, x, y, transpose_x, transpose_y, out);
  guarded("matmul", [&] {
    dims od = to_dims(out.shape());
    dims xs = pad_left(to_dims(x.shape()), od.size());
    dims ys = pad_left(to_dims(y.shape()), od.size());
    const int64_t k = transpose_x ? xs[xs.size() - 2] : xs.back();
    // A stack of matrices times one matrix is one product, x [..., M, K] as [B M, K]: oneDNN ran a
    // product per matrix of the stack, and torch's sequence-first attention ([197, 1, 768] x [768, 2304]
    // in a ViT-B/16 at batch 1) made that 197 products of one row, 3x slower than one of 197 rows.
    if (!transpose_x && od.size() > 2 && std::all_of(ys.begin(), ys.end() - 2, [](int64_t d) { return d == 1; })) {
      const int64_t rows = x.numel() / std::max<int64_t>(k, 1);
      xs = {rows, k}, ys = {ys[ys.size() - 2], ys.back()}, od = {rows, od.back()};
    }
    // An empty inner dimension gives a zero product; oneDNN would skip the write entirely.
    if (k == 0) {
      std::fill_n(out.data<float>(), out.numel(), 0.0f);
      return;
    }
    // oneDNN splits the work by the thread count it sees when the primitive is made and when it runs.
    OneThreadIf one_thread(2 * out.numel() * k < kSingleThreadMatmulFlops);
    std::string key = fmt::format("matmul:{}:{}:{}:{}{}", dims_key(xs), dims_key(ys), transpose_x, transpose_y, one_thread ? ":t1" : "");
    auto e = matmul_entry(key, matrix_desc(xs, transpose_x), matrix_desc(ys, transpose_y), nullptr, plain_desc(od));
    e->prim.execute(cpu_stream(),
                    {{DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_WEIGHTS, wrap(e->wei, y)}, {DNNL_ARG_DST, wrap(e->dst, out)}});
  });
}

template <typename T>
void linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  if (out.numel() == 0) return;
  if (single_row(weight, out)) return reference::linear<float>(ctx, x, weight, bias, out);
  if (reference::small_linear(ctx, x, weight, bias, Tensor(), Activation::none, out)) return;
  // A few rows of a larger weight (a classifier at batch 8 to 32): the reference kernel's vector GEMV
  // reads each weight row from memory once for all of them, on the kernels' pool; oneDNN's matmul could
  // not split so few rows into blocks and ran on OpenMP's team.
  if (weight.shape()[0] > 0 && reference::gemv_takes(out.numel() / weight.shape()[0], weight.shape()[1]) && cpu_has_avx2_fma())
    return reference::linear<float>(ctx, x, weight, bias, out);
  guarded("linear", [&] {
    const int64_t in = weight.shape()[1];
    const int64_t out_f = weight.shape()[0];
    const int64_t m = out.numel() / out_f;  // x flattened to [M, in]
    if (in == 0) {
      // No inner dimension: the product is zero and only the bias remains.
      float* o = out.data<float>();
      const float* b = bias.defined() ? bias.data<float>() : nullptr;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < out_f; ++j) o[i * out_f + j] = b ? b[j] : 0.0f;
      return;
    }
    linear_forward(fmt::format("linear:{}:{}:{}:{}", m, in, out_f, bias.defined()), dnnl::primitive_attr(), x, weight,
                   bias, out);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(matmul, onednn, float)
PD_INSTANTIATE_KERNELS(linear, onednn, float)
