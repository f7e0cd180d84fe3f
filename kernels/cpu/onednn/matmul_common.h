// The oneDNN matmul primitive as matmul, linear and fused_linear build it: strided descriptors for
// transposed operands and a cached primitive per key (the key must cover the attributes).
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/onednn/onednn_common.h"

namespace pd::kernels::onednn {

struct MatmulEntry {
  dnnl::memory::desc src, wei, bias, dst;
  dnnl::matmul prim;
};

// Descriptor of a contiguous tensor stored as `stored` (already padded to the output rank),
// seen with its last two dims swapped when `transpose` is set.
inline dnnl::memory::desc matrix_desc(const dims& stored, bool transpose) {
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

inline std::shared_ptr<MatmulEntry> matmul_entry(const std::string& key, const dnnl::memory::desc& src,
                                                 const dnnl::memory::desc& wei, const dnnl::memory::desc* bias,
                                                 const dnnl::memory::desc& dst,
                                                 const dnnl::primitive_attr& attr = dnnl::primitive_attr()) {
  return cached<MatmulEntry>(key, [&] {
    MatmulEntry e{src, wei, bias ? *bias : dnnl::memory::desc(), dst, {}};
    auto desc = bias ? dnnl::matmul::desc(src, wei, *bias, dst) : dnnl::matmul::desc(src, wei, dst);
    e.prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, cpu_engine()));
    return e;
  });
}

// A linear with one row (batch-1 inference) is a matrix-vector product: oneDNN's gemm primitive spends
// 5-10 us of setup and threading on it where the reference kernel's Eigen GEMV needs 1-4 us (pd-bench,
// LeNet's fully connected layers at 1 and 2 threads), so those go to the reference kernel.
inline bool single_row(const Tensor& weight, const Tensor& out) {
  return weight.shape()[0] > 0 && out.numel() == weight.shape()[0];
}

// linear as a matmul of x [M, in] by weight^T, cached under `key` (which must identify `attr` too).
// The inner dimension must be non-empty. A residual is the source of `attr`'s first post-op, a binary add.
inline void linear_forward(const std::string& key, const dnnl::primitive_attr& attr, const Tensor& x,
                           const Tensor& weight, const Tensor& bias, Tensor& out, const Tensor& residual = Tensor()) {
  const int64_t in = weight.shape()[1];
  const int64_t out_f = weight.shape()[0];
  const int64_t m = out.numel() / out_f;
  // weight [out_f, in] read as its transpose [in, out_f].
  const auto wei = matrix_desc({out_f, in}, true);
  const auto bmd = plain_desc(dims{1, out_f});
  auto e = matmul_entry(key, plain_desc(dims{m, in}), wei, bias.defined() ? &bmd : nullptr, plain_desc(dims{m, out_f}),
                        attr);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_WEIGHTS, wrap(e->wei, weight)}, {DNNL_ARG_DST, wrap(e->dst, out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(e->bias, bias));
  if (residual.defined()) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, wrap(e->dst, residual));
  e->prim.execute(cpu_stream(), args);
}

}  // namespace pd::kernels::onednn
