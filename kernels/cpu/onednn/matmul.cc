// matmul (batched, broadcasting) and linear through the oneDNN matmul primitive. Transposes are
// not materialised: they are expressed as swapped strides in the memory descriptors.
#include <algorithm>

#include "cpu/onednn/onednn_common.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

struct MatmulEntry {
  dnnl::memory::desc src, wei, bias, dst;
  dnnl::matmul prim;
};

// Descriptor of a contiguous tensor stored as `stored` (already padded to the output rank),
// seen with its last two dims swapped when `transpose` is set.
dnnl::memory::desc matrix_desc(const dims& stored, bool transpose) {
  const size_t r = stored.size();
  dims strides(r, 1);
  for (size_t i = r; i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(stored[i], 1);
  dims logical = stored;
  if (transpose) {
    std::swap(logical[r - 1], logical[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
  }
  return dnnl::memory::desc(logical, dt::f32, strides);
}

std::shared_ptr<MatmulEntry> matmul_entry(const std::string& key, const dnnl::memory::desc& src,
                                          const dnnl::memory::desc& wei, const dnnl::memory::desc* bias,
                                          const dnnl::memory::desc& dst) {
  return cached<MatmulEntry>(key, [&] {
    MatmulEntry e{src, wei, bias ? *bias : dnnl::memory::desc(), dst, {}};
    auto desc = bias ? dnnl::matmul::desc(src, wei, *bias, dst) : dnnl::matmul::desc(src, wei, dst);
    e.prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, cpu_engine()));
    return e;
  });
}

}  // namespace

template <typename T>
void matmul(const Tensor& x, const Tensor& y, bool transpose_x, bool transpose_y, Tensor& out) {
  if (out.numel() == 0) return;
  guarded("matmul", [&] {
    const dims od = to_dims(out.shape());
    const dims xs = pad_left(to_dims(x.shape()), od.size());
    const dims ys = pad_left(to_dims(y.shape()), od.size());
    const int64_t k = transpose_x ? xs[xs.size() - 2] : xs.back();
    // An empty inner dimension gives a zero product; oneDNN would skip the write entirely.
    if (k == 0) {
      std::fill_n(out.data<float>(), out.numel(), 0.0f);
      return;
    }
    std::string key = fmt::format("matmul:{}:{}:{}:{}", dims_key(xs), dims_key(ys), transpose_x, transpose_y);
    auto e = matmul_entry(key, matrix_desc(xs, transpose_x), matrix_desc(ys, transpose_y), nullptr, plain_desc(od));
    e->prim.execute(cpu_stream(),
                    {{DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_WEIGHTS, wrap(e->wei, y)}, {DNNL_ARG_DST, wrap(e->dst, out)}});
  });
}

template <typename T>
void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  if (out.numel() == 0) return;
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
    // weight [out_f, in] read as its transpose [in, out_f].
    const auto wei = matrix_desc({out_f, in}, true);
    const auto bmd = plain_desc(dims{1, out_f});
    std::string key = fmt::format("linear:{}:{}:{}:{}", m, in, out_f, bias.defined());
    auto e = matmul_entry(key, plain_desc(dims{m, in}), wei, bias.defined() ? &bmd : nullptr, plain_desc(dims{m, out_f}));
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_WEIGHTS, wrap(e->wei, weight)}, {DNNL_ARG_DST, wrap(e->dst, out)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(e->bias, bias));
    e->prim.execute(cpu_stream(), args);
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(matmul, onednn, float)
PD_INSTANTIATE_KERNELS(linear, onednn, float)
