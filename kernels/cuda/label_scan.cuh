// The label check of the class-index losses (cross_entropy in loss.cu, nll_loss in loss_extra.cu). The
// references raise pd::Error for a label that is neither a class index nor ignore_index, so the labels
// are scanned on the device (one block: the first bad index, its value, and the number of counted
// labels) and that is copied back to the host: one stream synchronisation per call. The count also
// gives a mean's divisor.
#pragma once
#include <limits>
#include <type_traits>

#include "cuda/reduce_common.cuh"

namespace pd::kernels::cuda {

struct LabelStats {
  long long bad_index;  // -1: every label is a class index or ignore_index
  long long bad_value;
  long long count;      // labels in [0, C) (with no bad label: the labels != ignore_index)
};

inline constexpr int kLabelScanThreads = 1024;

// One block.
template <typename L>
__global__ void label_scan_kernel(const L* __restrict__ label, int64_t n, int64_t C, int64_t ignore_index,
                                  LabelStats* __restrict__ stats) {
  __shared__ long long shared[32];
  long long first_bad = std::numeric_limits<long long>::max(), count = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const int64_t y = static_cast<int64_t>(label[k]);
    if (y == ignore_index) continue;
    if (y >= 0 && y < C) ++count;
    else if (k < first_bad) first_bad = k;
  }
  first_bad = block_allreduce(first_bad, [](long long a, long long b) { return b < a ? b : a; }, shared);
  count = block_allreduce(count, [](long long a, long long b) { return a + b; }, shared);
  if (threadIdx.x == 0) {
    const bool bad = first_bad != std::numeric_limits<long long>::max();
    stats->bad_index = bad ? first_bad : -1;
    stats->bad_value = bad ? static_cast<long long>(label[first_bad]) : 0;
    stats->count = count;
  }
}

// Scans the labels into stats (device memory) and brings the result to the host; the caller raises for
// a bad label with its op's message.
template <typename L>
LabelStats scan_labels(const KernelContext& ctx, const Tensor& label, int64_t C, int64_t ignore_index, LabelStats* stats,
                       const char* op) {
  cudaStream_t stream = stream_of(ctx);
  label_scan_kernel<L><<<1, kLabelScanThreads, 0, stream>>>(reinterpret_cast<const L*>(label.raw_data()), label.numel(), C,
                                                            ignore_index, stats);
  check_cuda(cudaGetLastError(), op, __FILE__, __LINE__);
  LabelStats host{};
  PD_CUDA_CHECK(cudaMemcpyAsync(&host, stats, sizeof(LabelStats), cudaMemcpyDeviceToHost, stream));
  PD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

// Calls fn.template operator()<L>() with the label's integer element type.
template <typename Fn>
void visit_label(const Tensor& label, const char* op, Fn&& fn) {
  visit_dtype(label.dtype(), [&]<typename L>() {
    if constexpr (std::is_integral_v<L> && !std::is_same_v<L, bool>) fn.template operator()<L>();
    else raise(ErrorCode::kInvalidArgument, "{}: argument 'label' must have an integer dtype, but has {}", op,
               dtype_name(label.dtype()));
  });
}

}  // namespace pd::kernels::cuda
