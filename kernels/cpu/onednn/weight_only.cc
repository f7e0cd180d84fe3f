// weight_only_linear. A few rows of x (decoding, batch 1-4) are bound by reading the weight: each output
// channel's i8 row is read once and multiplied in f32 registers, so the kernel reads a quarter of what
// f32 linear reads. More rows are bound by arithmetic: the weight is widened (scale folded in) a tile
// of output channels at a time, and x times the tile's transpose goes to oneDNN's matmul primitive, writing
// straight into the tile's columns of the output. The f32 weight never exists whole.
#include <algorithm>
#include <vector>

#include "cpu/common/parallel.h"
#include "cpu/onednn/matmul_common.h"
#include "elementwise_ops.h"
#include "kernels.h"

namespace pd::kernels::onednn {
namespace {

// rows x k int8 weights to f32 times each row's scale; compiled for AVX-512, AVX2 and baseline, the CPU
// picks at load time (the result is the same exact products on each).
// The build is -O2, whose vectoriser only takes the cheapest loops: these two ask for -O3's.
#define PD_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))

PD_VECTOR_CLONES void widen_rows(const int8_t* __restrict w, const float* scales, bool per_row, int64_t rows, int64_t k,
                                 float* __restrict out) {
  constexpr int L = 16;  // a fixed inner count, so that -O2's vectoriser takes it
  for (int64_t r = 0; r < rows; ++r) {
    const float s = per_row ? scales[r] : scales[0];
    const int8_t* wr = w + r * k;
    float* o = out + r * k;
    int64_t i = 0;
    for (; i + L <= k; i += L)
      for (int j = 0; j < L; ++j) o[i + j] = static_cast<float>(wr[i + j]) * s;
    for (; i < k; ++i) o[i] = static_cast<float>(wr[i]) * s;
  }
}

// y[m, o] = scale[o] * sum_k x[m, k] * w[o, k] for output channels [o0, o1) and every row m < M.
// Sixteen partial sums per row let the compiler keep them in one vector register.
PD_VECTOR_CLONES void dot_rows(const float* __restrict x, int64_t M, const int8_t* __restrict w, const float* scales,
                               bool per_row, int64_t o0, int64_t o1, int64_t K, int64_t O, float* __restrict y) {
  constexpr int L = 16;
  for (int64_t o = o0; o < o1; ++o) {
    const int8_t* wr = w + o * K;
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x + m * K;
      float acc[L] = {};
      int64_t k = 0;
      for (; k + L <= K; k += L)
        for (int j = 0; j < L; ++j) acc[j] += xr[k + j] * static_cast<float>(wr[k + j]);
      float sum = 0;
      for (; k < K; ++k) sum += xr[k] * static_cast<float>(wr[k]);
      for (int j = 0; j < L; ++j) sum += acc[j];
      y[m * O + o] = sum * (per_row ? scales[o] : scales[0]);
    }
  }
}

constexpr int64_t kDotRows = 4;             // up to this many rows of x: dot_rows
constexpr int64_t kTileFloats = 1 << 20;    // else 4 MiB of widened weights per GEMM call

}  // namespace

template <typename T>
void weight_only_linear(const KernelContext& ctx, const Tensor& x, const Tensor& weight, const Tensor& weight_scale,
                        const Tensor& bias, const std::string& activation, double alpha, Tensor& out) {
  const Activation act = parse_activation("weight_only_linear", activation);
  if (out.numel() == 0) return;
  const int64_t O = weight.shape()[0], K = weight.shape()[1], M = out.numel() / O;
  const Tensor xc = x.contiguous();
  const float* xv = xc.data<float>();
  const int8_t* wv = weight.data<int8_t>();
  const std::vector<float> scales = weight_scale.contiguous().to_vector<float>();
  const bool per_row = scales.size() > 1;
  float* ov = out.data<float>();
  if (K == 0) {
    std::fill_n(ov, out.numel(), 0.0f);
  } else if (M <= kDotRows) {
    constexpr int64_t kChannels = 64;  // output channels per parallel item
    cpu::parallel_for((O + kChannels - 1) / kChannels, kChannels * K * M, [&](int64_t b) {
      dot_rows(xv, M, wv, scales.data(), per_row, b * kChannels, std::min(O, (b + 1) * kChannels), K, O, ov);
    });
  } else {
    guarded("weight_only_linear", [&] {
      const int64_t rows = std::clamp<int64_t>(kTileFloats / K, 1, O);
      thread_local std::vector<float> tile;  // kept between calls: a fresh 4 MiB would page-fault each time
      const auto need = static_cast<size_t>(rows * K + (rows < O ? M * rows : 0));  // the tile, and its product
      if (tile.size() < need) tile.resize(need);
      float* t = tile.data();  // the worker threads below must use this thread's buffer, not their own
      for (int64_t o0 = 0; o0 < O; o0 += rows) {
        const int64_t n = std::min(rows, O - o0);
        // Widening is split across threads by rows; sgemm threads itself.
        const int64_t chunk = std::max<int64_t>(1, (n + 7) / 8);
        cpu::parallel_for((n + chunk - 1) / chunk, chunk * K, [&](int64_t c) {
          const int64_t r0 = c * chunk, nr = std::min(chunk, n - r0);
          widen_rows(wv + (o0 + r0) * K, scales.data() + (per_row ? o0 + r0 : 0), per_row, nr, K, t + r0 * K);
        });
        // x [M, K] times the tile read as [K, n] into a dense [M, n] (oneDNN's fast GEMM paths want a
        // dense destination; strided, the 2048-wide MLP ran 2x slower), then into columns [o0, o0 + n).
        float* y = n == O ? ov : t + rows * K;
        auto e = matmul_entry(fmt::format("weight_only_linear:{}:{}:{}", M, n, K), plain_desc(dims{M, K}),
                              matrix_desc({n, K}, true), nullptr, plain_desc(dims{M, n}));
        e->prim.execute(cpu_stream(), {{DNNL_ARG_SRC, dnnl::memory(e->src, cpu_engine(), const_cast<float*>(xv))},
                                       {DNNL_ARG_WEIGHTS, dnnl::memory(e->wei, cpu_engine(), t)},
                                       {DNNL_ARG_DST, dnnl::memory(e->dst, cpu_engine(), y)}});
        if (y != ov)
          for (int64_t m = 0; m < M; ++m) std::copy_n(y + m * n, n, ov + m * O + o0);
      }
    });
  }
  const float* bv = bias.defined() ? bias.data<float>() : nullptr;
  if (!bv && act == Activation::none) return;
  dispatch_activation(act, [&](auto a) {
    constexpr Activation A = decltype(a)::value;
    const float al = static_cast<float>(alpha);
    cpu::parallel_for(M, O, [&](int64_t m) {
      float* y = ov + m * O;
      for (int64_t o = 0; o < O; ++o) y[o] = activate<A>(bv ? y[o] + bv[o] : y[o], al);
    });
  });
}

}  // namespace pd::kernels::onednn

PD_INSTANTIATE_KERNELS(weight_only_linear, onednn, float)
