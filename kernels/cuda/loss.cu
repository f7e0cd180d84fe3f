// cross_entropy (softmax + NLL with PyTorch-style label smoothing, ignore_index, reduction mean/sum/none)
// and its gradient with respect to the logits, as the reference kernels in cpu/ref/loss.cc.
//
// logits are viewed as [outer, C, inner]; sample s = (o, i) reads its classes at o*C*inner + i + c*inner.
// Labels may be any integer dtype. The reference raises pd::Error for a label that is neither a class
// index nor ignore_index, so both kernels first scan the labels (label_scan.cuh: one stream
// synchronisation per call). The count also gives the mean's divisor.
// Per sample: a warp when the classes are contiguous (inner == 1), else a thread. Arithmetic runs in
// acc_t<T> (float for f32/f16/bf16, double for f64); the mean/sum of the losses accumulates in double.
#include <limits>
#include <string>

#include "cpu/common/loss_reduction.h"
#include "cuda/label_scan.cuh"

namespace pd::kernels::cuda {
namespace {

using cpu::parse_reduction;
using cpu::Reduction;

constexpr int kScanThreads = 1024;

struct SumOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a < b ? b : a; }  // std::max(a, b): a NaN b is dropped
};

template <typename A>
__device__ __forceinline__ A exp_of(A v) {
  if constexpr (std::is_same_v<A, float>) return expf(v);
  else return ::exp(v);
}
template <typename A>
__device__ __forceinline__ A log_of(A v) {
  if constexpr (std::is_same_v<A, float>) return logf(v);
  else return ::log(v);
}

// max, log-sum-exp and (when wanted) the sum of one sample's logits; G lanes (1 or 32, a whole warp)
// share the sample, and all of them end with the results.
template <int G, typename D, typename A>
__device__ __forceinline__ void sample_stats(const D* __restrict__ base, int64_t C, int64_t step, int lane, bool want_sum,
                                             A& mx, A& lse, A& sum_x) {
  mx = -std::numeric_limits<A>::infinity();
  for (int64_t c = lane; c < C; c += G) mx = MaxOp{}(mx, load_as<A>(base[c * step]));
  if constexpr (G == 32) mx = warp_allreduce(mx, MaxOp{});
  A sum = 0, sx = 0;
  for (int64_t c = lane; c < C; c += G) {
    const A v = load_as<A>(base[c * step]);
    sum += exp_of(v - mx);
    if (want_sum) sx += v;
  }
  if constexpr (G == 32) {
    sum = warp_allreduce(sum, SumOp{});
    if (want_sum) sx = warp_allreduce(sx, SumOp{});
  }
  lse = log_of(sum);
  sum_x = sx;
}

// Per-sample losses: into out (reduction none, element type D) or into `losses` (acc type, for the sum).
template <int G, typename D, typename A, typename L>
__global__ void ce_forward_kernel(const D* __restrict__ logits, const L* __restrict__ label, D* __restrict__ out,
                                  A* __restrict__ losses, int64_t samples, int64_t C, int64_t inner, int64_t ignore_index,
                                  A eps) {
  const int lane = G == 1 ? 0 : (threadIdx.x & 31);
  const int64_t per_block = blockDim.x / G;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / G; s < samples;
       s += static_cast<int64_t>(gridDim.x) * per_block) {
    const int64_t y = static_cast<int64_t>(label[s]);
    A loss = 0;
    if (y != ignore_index && y >= 0 && y < C) {  // the scan has rejected any other label
      const int64_t o = s / inner, i = s % inner;
      const D* base = logits + o * C * inner + i;
      A mx, lse, sx;
      sample_stats<G>(base, C, inner, lane, eps != A(0), mx, lse, sx);
      // -log p[c] = mx + lse - x[c]; the smoothing term is the mean of that over the classes.
      const A nll = mx + lse - load_as<A>(base[y * inner]);
      A smooth = 0;
      if (eps != A(0)) smooth = (mx + lse) - sx / static_cast<A>(C);
      loss = (A(1) - eps) * nll + eps * smooth;
    }
    if (lane == 0) {
      if (out != nullptr) out[s] = store_as<D>(loss);
      else losses[s] = loss;
    }
  }
}

// out[0] = sum of the losses (or their mean over `count` counted samples; 0 counted: 0/0 = NaN). One block.
template <typename D, typename A>
__global__ void ce_total_kernel(const A* __restrict__ losses, int64_t samples, D* __restrict__ out, bool mean, double count) {
  __shared__ double shared[32];
  double total = 0;
  for (int64_t k = threadIdx.x; k < samples; k += blockDim.x) total += static_cast<double>(losses[k]);
  total = block_allreduce(total, SumOp{}, shared);
  if (threadIdx.x == 0) out[0] = store_as<D>(mean ? total / count : total);
}

template <int G, typename D, typename A, typename L>
__global__ void ce_backward_kernel(const D* __restrict__ logits, const L* __restrict__ label, const D* __restrict__ grad,
                                   D* __restrict__ dlogits, int64_t samples, int64_t C, int64_t inner,
                                   int64_t ignore_index, A eps, bool per_sample_grad, A scale) {
  const int lane = G == 1 ? 0 : (threadIdx.x & 31);
  const int64_t per_block = blockDim.x / G;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / G; s < samples;
       s += static_cast<int64_t>(gridDim.x) * per_block) {
    const int64_t o = s / inner, i = s % inner;
    const D* base = logits + o * C * inner + i;
    D* dbase = dlogits + o * C * inner + i;
    const int64_t y = static_cast<int64_t>(label[s]);
    if (y == ignore_index || y < 0 || y >= C) {  // the scan has rejected labels out of range
      for (int64_t c = lane; c < C; c += G) dbase[c * inner] = store_as<D>(A(0));
      continue;
    }
    const A g = load_as<A>(grad[per_sample_grad ? s : 0]) * scale;
    A mx, lse, sx;
    sample_stats<G>(base, C, inner, lane, false, mx, lse, sx);
    const A uniform = eps / static_cast<A>(C);
    for (int64_t c = lane; c < C; c += G) {
      const A p = exp_of(load_as<A>(base[c * inner]) - mx - lse);
      const A target = (c == y ? A(1) - eps : A(0)) + uniform;
      dbase[c * inner] = store_as<D>(g * (p - target));
    }
  }
}

struct ClassView {
  int64_t outer = 1, C = 1, inner = 1;
};

ClassView class_view(const Tensor& logits, int64_t axis, const char* what) {
  ClassView v;
  const int64_t a = normalize_axis(axis, logits.dim(), what);
  const Shape& s = logits.shape();
  for (int64_t i = 0; i < a; ++i) v.outer *= s[i];
  for (int64_t i = a + 1; i < logits.dim(); ++i) v.inner *= s[i];
  v.C = s[a];
  return v;
}

// Scans the labels (stats: device memory), and raises for a bad label.
template <typename L>
LabelStats check_labels(const KernelContext& ctx, const Tensor& label, int64_t C, int64_t ignore_index,
                        LabelStats* stats, const char* op) {
  const LabelStats host = scan_labels<L>(ctx, label, C, ignore_index, stats, op);
  PD_CHECK(host.bad_index < 0, ErrorCode::kOutOfRange, "{}: argument 'label' value {} at index {} is out of range [0, {})",
           op, host.bad_value, host.bad_index, C);
  return host;
}

constexpr size_t kLossesOffset = 256;  // the per-sample losses follow the stats in the workspace

unsigned sample_blocks(int64_t samples, int g) {
  const int64_t per_block = kThreads / g;
  const int64_t b = (samples + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

}  // namespace

template <typename T>
void cross_entropy(const KernelContext& ctx, const Tensor& logits, const Tensor& label, int64_t axis, int64_t ignore_index,
                   double label_smoothing, const std::string& reduction, Tensor& out) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  const Reduction red = parse_reduction(reduction, "cross_entropy");
  const ClassView v = class_view(logits, axis, "cross_entropy: argument 'axis'");
  const int64_t samples = v.outer * v.inner;
  cudaStream_t stream = stream_of(ctx);
  char* ws = static_cast<char*>(
      workspace(ctx, kLossesOffset + (red == Reduction::kNone ? 0 : static_cast<size_t>(samples) * sizeof(A))));
  LabelStats* stats = reinterpret_cast<LabelStats*>(ws);
  A* losses = reinterpret_cast<A*>(ws + kLossesOffset);
  visit_label(label, "cross_entropy", [&]<typename L>() {
    const LabelStats host = check_labels<L>(ctx, label, v.C, ignore_index, stats, "cross_entropy");
    const L* ld = reinterpret_cast<const L*>(label.raw_data());
    D* od = red == Reduction::kNone ? dptr<T>(out) : nullptr;
    const A eps = static_cast<A>(label_smoothing);
    if (samples > 0) {
      if (v.inner == 1)
        ce_forward_kernel<32, D, A, L><<<sample_blocks(samples, 32), kThreads, 0, stream>>>(
            dptr<T>(logits), ld, od, losses, samples, v.C, v.inner, ignore_index, eps);
      else
        ce_forward_kernel<1, D, A, L><<<sample_blocks(samples, 1), kThreads, 0, stream>>>(
            dptr<T>(logits), ld, od, losses, samples, v.C, v.inner, ignore_index, eps);
      check_cuda(cudaGetLastError(), "cross_entropy kernel launch", __FILE__, __LINE__);
    }
    if (red != Reduction::kNone) {
      ce_total_kernel<D, A><<<1, kScanThreads, 0, stream>>>(losses, samples, dptr<T>(out), red == Reduction::kMean,
                                                            static_cast<double>(host.count));
      check_cuda(cudaGetLastError(), "cross_entropy kernel launch", __FILE__, __LINE__);
    }
  });
}

template <typename T>
void cross_entropy_grad(const KernelContext& ctx, const Tensor& logits, const Tensor& label, const Tensor& grad, int64_t axis,
                        int64_t ignore_index, double label_smoothing, const std::string& reduction, Tensor& dlogits) {
  using D = dev_t<T>;
  using A = acc_t<T>;
  const Reduction red = parse_reduction(reduction, "cross_entropy_grad");
  const ClassView v = class_view(logits, axis, "cross_entropy_grad: argument 'axis'");
  const int64_t samples = v.outer * v.inner;
  cudaStream_t stream = stream_of(ctx);
  LabelStats* stats = static_cast<LabelStats*>(workspace(ctx, sizeof(LabelStats)));
  visit_label(label, "cross_entropy_grad", [&]<typename L>() {
    const LabelStats host = check_labels<L>(ctx, label, v.C, ignore_index, stats, "cross_entropy_grad");
    if (samples == 0 || dlogits.numel() == 0) return;
    const double scale = red == Reduction::kMean ? 1.0 / static_cast<double>(host.count) : 1.0;
    const L* ld = reinterpret_cast<const L*>(label.raw_data());
    const A eps = static_cast<A>(label_smoothing);
    const bool per_sample = red == Reduction::kNone;
    if (v.inner == 1)
      ce_backward_kernel<32, D, A, L><<<sample_blocks(samples, 32), kThreads, 0, stream>>>(
          dptr<T>(logits), ld, dptr<T>(grad), dptr<T>(dlogits), samples, v.C, v.inner, ignore_index, eps, per_sample,
          static_cast<A>(scale));
    else
      ce_backward_kernel<1, D, A, L><<<sample_blocks(samples, 1), kThreads, 0, stream>>>(
          dptr<T>(logits), ld, dptr<T>(grad), dptr<T>(dlogits), samples, v.C, v.inner, ignore_index, eps, per_sample,
          static_cast<A>(scale));
    check_cuda(cudaGetLastError(), "cross_entropy_grad kernel launch", __FILE__, __LINE__);
  });
}

}  // namespace pd::kernels::cuda

PD_INSTANTIATE_KERNELS(cross_entropy, cuda, float, double, ::pd::float16, ::pd::bfloat16)
PD_INSTANTIATE_KERNELS(cross_entropy_grad, cuda, float, double, ::pd::float16, ::pd::bfloat16)
