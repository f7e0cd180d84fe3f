// The oneDNN matmul primitive as matmul, linear and fused_linear build it: strided descriptors for
// transposed operands and a cached primitive per key (the key must cover the attributes).
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/onednn/onednn_common.h"
#include "pd/core/thread_pool.h"

namespace pd::kernels::onednn {

struct MatmulEntry {
  dnnl::memory::desc src, wei, bias, dst;
  dnnl::matmul prim;
  dnnl::memory::desc scratchpad;  // empty unless the attributes ask for a user scratchpad
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
    MatmulEntry e{src, wei, bias ? *bias : dnnl::memory::desc(), dst, {}, {}};
    auto desc = bias ? dnnl::matmul::desc(src, wei, *bias, dst) : dnnl::matmul::desc(src, wei, dst);
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    e.prim = dnnl::matmul(pd);
    if (attr.get_scratchpad_mode() == dnnl::scratchpad_mode::user) e.scratchpad = pd.scratchpad_desc();
    return e;
  });
}

// A linear with one row (batch-1 inference) is a matrix-vector product: oneDNN's gemm primitive spends
// 5-10 us of setup and threading on it where the reference kernel's Eigen GEMV needs 1-4 us (pd-bench,
// LeNet's fully connected layers at 1 and 2 threads), so those go to the reference kernel.
inline bool single_row(const Tensor& weight, const Tensor& out) {
  return weight.shape()[0] > 0 && out.numel() == weight.shape()[0];
}

// A linear of at least 8 rows a thread runs as row blocks, one per thread of the kernels' pool, each
// block a primitive made for one thread (so is one below this many FLOPs, as conv_forward's small
// convolutions). OpenMP's team is then not woken for it (two spinning teams on the same cores take
// turns by the OS's time slice: pd/core/thread_pool.h), and a thread the OS does not run leaves its
// block to the caller instead of holding everyone at a barrier. Fewer, wider rows go to oneDNN's team,
// and so does every linear while that team is awake anyway (a training step's backward matmuls).
inline constexpr int64_t kSingleThreadLinearFlops = int64_t{1} << 18;
// The same for a batched matmul (attention's scores and mixing, as ONNX exporters write them): a ViT's
// at batch 1, 0.3 M FLOPs each, woke the team for a few microseconds of work, and beside another busy
// process each then waited out that process's time slice (an imported ViT at batch 1: 0.34 -> 14.8 ms).
inline constexpr int64_t kSingleThreadMatmulFlops = int64_t{1} << 20;
inline constexpr int64_t kMinRowsPerBlock = 8;

// How a linear of m rows by an [out_f, in] weight runs (f32 and int8 alike): `blocks` row blocks of
// `rows` rows (the last may have fewer), each a primitive made for one thread when `one_thread`, run on
// the kernels' pool when there are several; one block without `one_thread` runs on OpenMP's team.
struct LinearBlocks {
  int64_t blocks = 1;
  int64_t rows = 0;
  bool one_thread = false;
  int64_t rows_of(int64_t b, int64_t m) const { return b + 1 == blocks ? m - b * rows : rows; }
};

inline LinearBlocks linear_blocks(int64_t m, int64_t in, int64_t out_f) {
  const bool small = 2 * m * in * out_f < kSingleThreadLinearFlops;
  const int64_t split = small || openmp_team_awake() ? 1 : std::min<int64_t>(m / kMinRowsPerBlock, parallel_threads());
  LinearBlocks b;
  b.blocks = std::max<int64_t>(split, 1);
  b.rows = (m + b.blocks - 1) / b.blocks;
  b.one_thread = small || b.blocks > 1;
  return b;
}

// linear as a matmul of x [M, in] by weight^T, cached under `key` (which must identify `attr` too).
// The inner dimension must be non-empty. A residual is the source of `attr`'s first post-op, a binary add.
inline void linear_forward(const std::string& key, const dnnl::primitive_attr& attr, const Tensor& x,
                           const Tensor& weight, const Tensor& bias, Tensor& out, const Tensor& residual = Tensor()) {
  const int64_t in = weight.shape()[1];
  const int64_t out_f = weight.shape()[0];
  const int64_t m = out.numel() / out_f;
  const LinearBlocks split = linear_blocks(m, in, out_f);
  const int64_t blocks = split.blocks, rows = split.rows;
  // weight [out_f, in] read as its transpose [in, out_f].
  const auto wei = matrix_desc({out_f, in}, true);
  const auto bmd = plain_desc(dims{1, out_f});
  const dnnl::memory::desc* bias_md = bias.defined() ? &bmd : nullptr;
  if (!split.one_thread) {
    auto e = matmul_entry(key, plain_desc(dims{m, in}), wei, bias_md, plain_desc(dims{m, out_f}), attr);
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, wrap(e->src, x)}, {DNNL_ARG_WEIGHTS, wrap(e->wei, weight)}, {DNNL_ARG_DST, wrap(e->dst, out)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(e->bias, bias));
    if (residual.defined()) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, wrap(e->dst, residual));
    return e->prim.execute(cpu_stream(), args);
  }
  dnnl::primitive_attr block_attr = attr;
  block_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the library's is not to be shared by threads
  const auto entry = [&](int64_t r) {
    OneThreadIf one_thread(true);  // oneDNN splits the work by the thread count it sees when the primitive is made
    return matmul_entry(fmt::format("{}:rows{}:t1", key, r), plain_desc(dims{r, in}), wei, bias_md, plain_desc(dims{r, out_f}),
                        block_attr);
  };
  const auto full = entry(rows);
  const auto last = split.rows_of(blocks - 1, m) == rows ? full : entry(split.rows_of(blocks - 1, m));
  float* const xs = const_cast<float*>(x.data<float>());
  float* const rs = residual.defined() ? const_cast<float*>(residual.data<float>()) : nullptr;
  float* const os = out.data<float>();
  parallel_items(blocks, [&](int64_t b) {
    const MatmulEntry& e = b + 1 == blocks ? *last : *full;
    const int64_t r0 = b * rows;
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(e.src, cpu_engine(), xs + r0 * in)},
                                               {DNNL_ARG_WEIGHTS, wrap(e.wei, weight)},
                                               {DNNL_ARG_DST, dnnl::memory(e.dst, cpu_engine(), os + r0 * out_f)}};
    if (bias.defined()) args.emplace(DNNL_ARG_BIAS, wrap(e.bias, bias));
    if (rs) args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(e.dst, cpu_engine(), rs + r0 * out_f));
    run_primitive(e.prim, args, e.scratchpad);
  });
}

}  // namespace pd::kernels::onednn
